-- Strata schema, version 13: each session's fold journal (memory's
-- store.Journaler). See db/doc.go for the meaning of every column.
--
-- One row per session id: the journal of the incarnation epoch, as JSON
-- (store.Journal: the newest records, at most the manager's retention,
-- and the totals of every record appended). It goes with its session:
-- the trigger below deletes it in the statement that turns the session
-- into a tombstone, re-creates it under a new epoch (Replace, a revived
-- tombstone) or removes its row, so no journal outlives the messages it
-- describes.
CREATE TABLE IF NOT EXISTS strata_journals (
    session_id TEXT        PRIMARY KEY,
    epoch      BIGINT      NOT NULL,
    journal    JSONB       NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE OR REPLACE FUNCTION strata_journal_gone() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    DELETE FROM strata_journals WHERE session_id = OLD.session_id;
    RETURN NULL;
END
$fn$;

DROP TRIGGER IF EXISTS strata_sessions_journal_gone ON strata_sessions;
CREATE TRIGGER strata_sessions_journal_gone
    AFTER UPDATE OF epoch, deleted_at ON strata_sessions
    FOR EACH ROW
    WHEN (NEW.deleted_at IS NOT NULL OR NEW.epoch IS DISTINCT FROM OLD.epoch)
    EXECUTE FUNCTION strata_journal_gone();

DROP TRIGGER IF EXISTS strata_sessions_journal_deleted ON strata_sessions;
CREATE TRIGGER strata_sessions_journal_deleted
    AFTER DELETE ON strata_sessions
    FOR EACH ROW
    EXECUTE FUNCTION strata_journal_gone();
