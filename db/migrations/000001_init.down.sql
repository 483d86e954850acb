-- Undo 000001_init.up.sql: drop every object it created (indexes and the
-- seq sequence go with their tables).
DROP TABLE strata_fold_leases;
DROP TABLE strata_summaries;
DROP TABLE strata_messages;
DROP TABLE strata_sessions;
