-- Undo 000021_facts_lz4.up.sql: a summary's facts are compressed with the
-- server's default method again (values stored meanwhile keep LZ4 and
-- read as before).
DO $$
BEGIN
    EXECUTE 'ALTER TABLE strata_summaries ALTER COLUMN facts_json SET COMPRESSION DEFAULT';
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value OR syntax_error THEN
    RAISE NOTICE 'strata: facts_json keeps its compression: %', SQLERRM;
END
$$;
