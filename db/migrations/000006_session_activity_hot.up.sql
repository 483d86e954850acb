-- Strata schema, version 6: appends update their session row in place.
-- See db/doc.go for the meaning of every column.
--
-- Every append updates its session's row (message_count, last_activity).
-- With last_activity in an index, none of those updates could be a HOT
-- (heap-only tuple) update: each left a dead row version and a new entry in
-- every index of strata_sessions for autovacuum to clean. The listing index
-- now holds the owner alone; a user's listing sorts that user's sessions by
-- last_activity (see MessageStore.Sessions). The table keeps room on its
-- pages (fillfactor 80) for the new row versions of HOT updates.
DROP INDEX IF EXISTS strata_sessions_user_activity_idx;
CREATE INDEX IF NOT EXISTS strata_sessions_user_idx ON strata_sessions (user_id);
ALTER TABLE strata_sessions SET (fillfactor = 80);
