-- Strata schema, version 1. See db/doc.go for the meaning of every column.
-- db.Migrate runs this file statement by statement in one transaction:
-- all or nothing.

-- One row per session: its owner (the first writer), its message count
-- (kept in the append transaction, so counting is O(1)) and activity times.
-- Appends to a session lock this row, which serializes them across replicas.
CREATE TABLE strata_sessions (
    session_id         TEXT        PRIMARY KEY,
    user_id            TEXT        NOT NULL,
    message_count      BIGINT      NOT NULL DEFAULT 0 CHECK (message_count >= 0),
    first_user_message TEXT        NULL,
    created_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_activity      TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- "Sessions of a user", newest activity first.
CREATE INDEX strata_sessions_user_activity_idx
    ON strata_sessions (user_id, last_activity DESC, session_id);

-- Append-only message log. seq comes from one global sequence: it is
-- strictly increasing within a session (appends to a session are serialized
-- by the session row lock and draw their numbers after taking it) and is
-- never reused, not even by a re-created session of the same id.
--
-- The primary key (session_id, seq) is the table's only index, and serves
-- "last N of a session" (backward scan), "messages after seq" (forward
-- range scan) and the cascade from strata_sessions. There is deliberately
-- no index on seq alone: with one, the planner may answer "newest 20 of a
-- small session" by walking the whole table's newest messages backwards.
CREATE TABLE strata_messages (
    seq          BIGSERIAL,
    session_id   TEXT        NOT NULL
                 REFERENCES strata_sessions (session_id) ON DELETE CASCADE,
    role         TEXT        NOT NULL
                 CHECK (role IN ('user', 'assistant', 'system', 'tool')),
    content      TEXT        NOT NULL,
    tool_calls   JSONB       NULL,
    tool_call_id TEXT        NOT NULL DEFAULT '',
    name         TEXT        NOT NULL DEFAULT '',
    metadata     JSONB       NULL,
    user_id      TEXT        NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, seq)
);

-- One summary per session. up_to_seq is the coverage cursor: every message
-- with seq <= up_to_seq is folded in. The table is Strata's own: arc-reactor
-- keeps its summaries in conversation_summaries, which may live in the same
-- schema (databases made before version 5 named this table that way too;
-- migrations 3 and 5 rename it).
CREATE TABLE strata_summaries (
    session_id TEXT        PRIMARY KEY
               REFERENCES strata_sessions (session_id) ON DELETE CASCADE,
    narrative  TEXT        NOT NULL DEFAULT '',
    facts_json JSONB       NOT NULL DEFAULT '[]'::jsonb,
    up_to_seq  BIGINT      NOT NULL CHECK (up_to_seq >= 0),
    version    BIGINT      NOT NULL DEFAULT 1,
    title      TEXT        NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Cross-process single-flight for summarization: one lease per session,
-- taken over only once expired, released by its holder.
CREATE TABLE strata_fold_leases (
    session_id TEXT        PRIMARY KEY,
    holder     TEXT        NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
