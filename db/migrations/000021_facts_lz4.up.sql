-- Strata schema, version 21: a summary's facts are compressed with LZ4
-- instead of PostgreSQL's default pglz.
--
-- Every fold writes its session's whole facts ledger (a JSONB document of
-- several kilobytes once a conversation has facts), and PostgreSQL
-- compresses a value that large before storing it: with pglz that
-- compression was the largest single cost a fold added to the server
-- (about a third of a millisecond per fold on the benchmark's ledgers).
-- LZ4 compresses several times faster. Values stored before keep their
-- compression and read as before; later writes use LZ4.
--
-- On Citus the setting reaches every shard of a distributed table. A
-- server built without LZ4 support keeps pglz: the change is skipped with
-- a notice, and nothing else depends on it.
DO $$
BEGIN
    EXECUTE 'ALTER TABLE strata_summaries ALTER COLUMN facts_json SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value OR syntax_error THEN
    RAISE NOTICE 'strata: facts_json keeps its default compression: %', SQLERRM;
END
$$;
