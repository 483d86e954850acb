-- Undo 000013_journal.up.sql: the fold journals go.
DROP TRIGGER IF EXISTS strata_sessions_journal_deleted ON strata_sessions;
DROP TRIGGER IF EXISTS strata_sessions_journal_gone ON strata_sessions;
DROP FUNCTION IF EXISTS strata_journal_gone();
DROP TABLE IF EXISTS strata_journals;
