-- Undo 000009_participants.up.sql: strata_append as in version 7.
DROP FUNCTION IF EXISTS strata_append(TEXT, TEXT, TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT, BIGINT, TEXT[], INT);

CREATE OR REPLACE FUNCTION strata_append(
    p_session TEXT, p_user TEXT, p_roles TEXT[], p_contents TEXT[], p_tool_calls TEXT[],
    p_tool_call_ids TEXT[], p_names TEXT[], p_metadata TEXT[], p_first_user TEXT, p_count BIGINT)
RETURNS TABLE (total BIGINT, epoch BIGINT, last_seq BIGINT, owner TEXT)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
AS $fn$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH s AS (
        UPDATE strata_sessions
           SET message_count      = message_count + p_count,
               first_user_message = COALESCE(first_user_message, p_first_user),
               last_activity      = clock_timestamp()
         WHERE session_id = p_session AND user_id = p_user AND deleted_at IS NULL
        RETURNING message_count, epoch
    ), ins AS (
        INSERT INTO strata_messages
               (session_id, role, content, tool_calls, tool_call_id, name, metadata, user_id, created_at)
        SELECT p_session, b.role, b.content, NULLIF(b.tool_calls, '')::jsonb, b.tool_call_id,
               b.name, NULLIF(b.metadata, '')::jsonb, p_user, clock_timestamp()
          FROM s, unnest(p_roles, p_contents, p_tool_calls, p_tool_call_ids, p_names, p_metadata)
               WITH ORDINALITY AS b(role, content, tool_calls, tool_call_id, name, metadata, ord)
         ORDER BY b.ord
        RETURNING seq
    )
    SELECT (SELECT message_count FROM s) AS total, (SELECT epoch FROM s) AS epoch,
           (SELECT max(seq) FROM ins) AS last_seq,
           CASE WHEN NOT EXISTS (SELECT 1 FROM s)
                THEN (SELECT user_id FROM strata_sessions WHERE session_id = p_session AND deleted_at IS NULL)
           END AS owner;
END
$fn$;

DROP INDEX IF EXISTS strata_sessions_participants_idx;
ALTER TABLE strata_sessions DROP COLUMN IF EXISTS participants;
