package dbtest

// ArcReactorSchema creates arc-reactor's conversation tables as its
// PostgreSQL migrations do: conversation_messages (V1, with the user_id
// of V4) and conversation_summaries (V20). Tests of the import of an
// arc-reactor database run it in an empty schema.
const ArcReactorSchema = `
CREATE TABLE IF NOT EXISTS conversation_messages (
    id          BIGSERIAL PRIMARY KEY,
    session_id  VARCHAR(255)  NOT NULL,
    role        VARCHAR(20)   NOT NULL,
    content     TEXT          NOT NULL,
    timestamp   BIGINT        NOT NULL,
    created_at  TIMESTAMP     NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX IF NOT EXISTS idx_conversation_messages_session_id
    ON conversation_messages (session_id);
CREATE INDEX IF NOT EXISTS idx_conversation_messages_session_timestamp
    ON conversation_messages (session_id, timestamp);
ALTER TABLE conversation_messages
    ADD COLUMN IF NOT EXISTS user_id VARCHAR(36) NOT NULL DEFAULT 'anonymous';
CREATE INDEX IF NOT EXISTS idx_conversation_messages_user_id
    ON conversation_messages (user_id);
CREATE INDEX IF NOT EXISTS idx_conversation_messages_user_session
    ON conversation_messages (user_id, session_id);
CREATE TABLE conversation_summaries (
    session_id       VARCHAR(255) PRIMARY KEY,
    narrative        TEXT         NOT NULL,
    facts_json       TEXT         NOT NULL DEFAULT '[]',
    summarized_up_to INT          NOT NULL DEFAULT 0,
    created_at       TIMESTAMP    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at       TIMESTAMP    NOT NULL DEFAULT CURRENT_TIMESTAMP
);`
