-- Strata schema, version 3: session incarnations (epochs) and tombstones.
-- See db/doc.go for the meaning of every column. db.Migrate runs this
-- file statement by statement in one transaction.

-- Databases made before version 5 named Strata's summary table
-- conversation_summaries, like arc-reactor's; migration 5 renames it. One
-- still at version 1 or 2 gets the rename here, before the table is
-- altered. Only Strata's own table (the one with an up_to_seq column) in
-- the current schema is renamed: arc-reactor's, with summarized_up_to, is
-- never touched.
DO $$
DECLARE
    con record;
BEGIN
    IF to_regclass(format('%I.strata_summaries', current_schema())) IS NULL
       AND EXISTS (SELECT 1 FROM information_schema.columns
                    WHERE table_schema = current_schema()
                      AND table_name = 'conversation_summaries'
                      AND column_name = 'up_to_seq') THEN
        EXECUTE format('ALTER TABLE %I.conversation_summaries RENAME TO strata_summaries', current_schema());
        -- Constraint and index names follow the table, so that arc-reactor
        -- can create its own conversation_summaries_pkey later.
        FOR con IN SELECT conname FROM pg_constraint
                    WHERE conrelid = format('%I.strata_summaries', current_schema())::regclass
                      AND conname LIKE 'conversation\_summaries\_%'
        LOOP
            EXECUTE format('ALTER TABLE %I.strata_summaries RENAME CONSTRAINT %I TO %I', current_schema(),
                           con.conname, 'strata_summaries_' || substr(con.conname, length('conversation_summaries_') + 1));
        END LOOP;
    END IF;
END
$$;

-- Every incarnation of a session (its first creation, and every re-creation
-- after a delete) draws a new epoch from this sequence, so an epoch is never
-- reused. Summaries record the epoch they were made for.
CREATE SEQUENCE strata_session_epoch_seq AS BIGINT;

-- A deleted session keeps its row as a tombstone: no owner (user_id NULL),
-- no messages, deleted_at set. The tombstone lets a summary save that
-- finishes after the delete, on any replica, see that its session is gone.
-- Appending to or creating the id again revives the row with a new owner
-- and a new epoch.
--
-- Existing sessions each get their own epoch (the volatile default is
-- evaluated once per row).
ALTER TABLE strata_sessions
    ADD COLUMN epoch BIGINT NOT NULL DEFAULT nextval('strata_session_epoch_seq'),
    ADD COLUMN deleted_at TIMESTAMPTZ NULL,
    ALTER COLUMN user_id DROP NOT NULL,
    ADD CONSTRAINT strata_sessions_tombstone_check CHECK (
        (deleted_at IS NULL AND user_id IS NOT NULL)
        OR (deleted_at IS NOT NULL AND user_id IS NULL
            AND message_count = 0 AND first_user_message IS NULL)
    );
ALTER SEQUENCE strata_session_epoch_seq OWNED BY strata_sessions.epoch;

-- A catalogue document may only be written for a live session. The foreign
-- key accepts a tombstone, so this trigger checks liveness, under a KEY
-- SHARE lock on the session row: a write racing a delete waits for it (the
-- delete locks the row FOR UPDATE first) and then sees the tombstone. It
-- fails like the foreign key would (SQLSTATE 23503). The table is looked up
-- in the trigger's own schema, whatever the caller's search_path.
CREATE FUNCTION strata_session_index_live_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    live integer;
BEGIN
    EXECUTE format('SELECT 1 FROM %I.strata_sessions
                     WHERE session_id = $1 AND deleted_at IS NULL
                       FOR KEY SHARE', TG_TABLE_SCHEMA)
       USING NEW.session_id;
    GET DIAGNOSTICS live = ROW_COUNT;
    IF live = 0 THEN
        RAISE EXCEPTION 'session % does not exist or is deleted', NEW.session_id
              USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER strata_session_index_live
    BEFORE INSERT OR UPDATE OF session_id ON strata_session_index
    FOR EACH ROW EXECUTE FUNCTION strata_session_index_live_check();

-- Summaries record the epoch they were made for; existing ones belong to
-- their session's current incarnation. The table no longer references
-- strata_sessions: the summary store also serves sessions kept by other
-- message stores. Titles live in the catalogue (strata_session_index).
ALTER TABLE strata_summaries ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0;
UPDATE strata_summaries cs
   SET epoch = s.epoch
  FROM strata_sessions s
 WHERE s.session_id = cs.session_id;
ALTER TABLE strata_summaries
    ALTER COLUMN epoch DROP DEFAULT,
    DROP CONSTRAINT strata_summaries_session_id_fkey,
    DROP COLUMN title;
