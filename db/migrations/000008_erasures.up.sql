-- Strata schema, version 8: erasures are counted per session.
-- See db/doc.go for the meaning of every column.
--
-- Every Forget increments its session's erasures in its own transaction,
-- and a catalogue document is written only while the count is the one
-- read before the document was built: a refresh that read the session
-- before an erasure, on any replica, writes nothing after it.
ALTER TABLE strata_sessions ADD COLUMN IF NOT EXISTS erasures BIGINT NOT NULL DEFAULT 0;
