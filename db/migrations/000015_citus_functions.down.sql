-- Undo 000015_citus_functions.up.sql.
DROP FUNCTION IF EXISTS strata_import_messages(TEXT, TEXT, TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[]);
DROP FUNCTION IF EXISTS strata_save_summary(TEXT, BIGINT, TEXT, JSONB, BIGINT, TEXT);
