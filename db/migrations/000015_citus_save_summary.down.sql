-- Undo 000015_citus_save_summary.up.sql.
DROP FUNCTION IF EXISTS strata_save_summary(TEXT, BIGINT, TEXT, JSONB, BIGINT, TEXT);
