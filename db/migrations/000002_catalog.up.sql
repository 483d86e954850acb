-- Strata schema, version 2: the conversation catalogue (package catalog).
-- See db/catalog.go for the meaning of every column.
--
-- One document per session: its title and, side by side, the exact text an
-- embedding was computed from and that embedding (no embedding without its
-- readable twin, enforced below). The owner and the last activity are read
-- from strata_sessions, so they can never disagree with it, and the
-- document goes with its session (ON DELETE CASCADE).
--
-- The embedding is a portable REAL[]; servers with the pgvector extension
-- get an extra vector column from db.EnableVectorSearch, outside migrations,
-- so that this file runs on every PostgreSQL server.
CREATE TABLE strata_session_index (
    session_id    TEXT        PRIMARY KEY
                  REFERENCES strata_sessions (session_id) ON DELETE CASCADE,
    title         TEXT        NOT NULL DEFAULT '',
    fingerprint   TEXT        NOT NULL DEFAULT '',
    source        TEXT        NOT NULL CHECK (source IN ('summary', 'turns')),
    source_seq    BIGINT      NOT NULL DEFAULT 0,
    message_count BIGINT      NOT NULL DEFAULT 0,
    text          TEXT        NOT NULL DEFAULT '',
    model         TEXT        NOT NULL DEFAULT '',
    dims          INTEGER     NOT NULL DEFAULT 0,
    embedding     REAL[]      NULL,
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT strata_session_index_text_twin CHECK (
        (embedding IS NULL AND text = '' AND model = '' AND dims = 0)
        OR (embedding IS NOT NULL AND text <> '' AND model <> ''
            AND array_ndims(embedding) = 1 AND dims = cardinality(embedding) AND dims > 0)
    )
);
