-- Strata schema, version 7: an append is one call of strata_append.
-- See MessageStore.Append (db/messages.go) for what the statement does.
--
-- PL/pgSQL keeps the plan of the function's statement for the rest of the
-- server connection's life, so an append is planned once per connection
-- instead of on every call, without a named prepared statement (which a
-- connection pooler in transaction mode cannot carry: a function is part of
-- the schema, the same on every server connection). The statement reads and
-- writes rows by their primary key only, so a plan made once fits every
-- call. The arguments are the batch as parallel column arrays (the shape
-- unnest wants), the first user message of the batch and the batch size.
CREATE OR REPLACE FUNCTION strata_append(
    p_session TEXT, p_user TEXT, p_roles TEXT[], p_contents TEXT[], p_tool_calls TEXT[],
    p_tool_call_ids TEXT[], p_names TEXT[], p_metadata TEXT[], p_first_user TEXT, p_count BIGINT)
RETURNS TABLE (total BIGINT, epoch BIGINT, last_seq BIGINT, owner TEXT)
LANGUAGE plpgsql VOLATILE
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
