-- Undo 000008_erasures.up.sql.
ALTER TABLE strata_sessions DROP COLUMN IF EXISTS erasures;
