-- Undo 000003_epochs.up.sql. Version 2 has no tombstones and requires every
-- summary to belong to a stored session, so the down migration removes the
-- tombstones of deleted sessions and the summaries version 2 cannot hold:
-- those of sessions this database does not know (kept for another message
-- store) and those made for an earlier incarnation of their session.
-- Summary titles, dropped by the up migration, come back empty.
DROP TRIGGER strata_session_index_live ON strata_session_index;
DROP FUNCTION strata_session_index_live_check();

DELETE FROM strata_sessions WHERE deleted_at IS NOT NULL;
DELETE FROM strata_summaries cs
 WHERE NOT EXISTS (SELECT 1 FROM strata_sessions s
                    WHERE s.session_id = cs.session_id AND s.epoch = cs.epoch);

ALTER TABLE strata_summaries
    ADD COLUMN title TEXT NOT NULL DEFAULT '',
    DROP COLUMN epoch,
    ADD CONSTRAINT strata_summaries_session_id_fkey FOREIGN KEY (session_id)
        REFERENCES strata_sessions (session_id) ON DELETE CASCADE;

-- Dropping the epoch column drops the sequence it owns.
ALTER TABLE strata_sessions
    DROP CONSTRAINT strata_sessions_tombstone_check,
    DROP COLUMN deleted_at,
    DROP COLUMN epoch,
    ALTER COLUMN user_id SET NOT NULL;
