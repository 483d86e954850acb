-- Undo 000006_session_activity_hot.up.sql.
ALTER TABLE strata_sessions RESET (fillfactor);
DROP INDEX IF EXISTS strata_sessions_user_idx;
CREATE INDEX IF NOT EXISTS strata_sessions_user_activity_idx
    ON strata_sessions (user_id, last_activity DESC, session_id);
