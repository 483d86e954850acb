-- Undo 000007_append_function.up.sql.
DROP FUNCTION IF EXISTS strata_append(TEXT, TEXT, TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT, BIGINT);
