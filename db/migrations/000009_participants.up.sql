-- Strata schema, version 9: the participants of shared sessions. See
-- db/doc.go for the meaning of every column.
--
-- participants are the authors of a session's messages other than its
-- owner: the users writing in a shared session, whose owner is the
-- pseudo-user "shared". First writers first, at most 64 (the bound is
-- passed by MessageStore). strata_append keeps them in the statement that
-- locks the session row; Import and Replace set them; a delete or a
-- re-creation clears them. A constant default adds the column without
-- rewriting the table.
ALTER TABLE strata_sessions ADD COLUMN IF NOT EXISTS participants TEXT[] NOT NULL DEFAULT '{}';

-- "Shared sessions a user wrote in". Appends leave participants unchanged
-- unless a new author writes, so their row updates stay HOT.
CREATE INDEX IF NOT EXISTS strata_sessions_participants_idx ON strata_sessions USING gin (participants);

-- strata_append, as in version 7, with each message's author (p_authors,
-- '' for the owner p_user) and the authors new to the session (p_new,
-- computed by the caller), added to participants up to p_max.
DROP FUNCTION IF EXISTS strata_append(TEXT, TEXT, TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT, BIGINT);

CREATE OR REPLACE FUNCTION strata_append(
    p_session TEXT, p_user TEXT, p_roles TEXT[], p_contents TEXT[], p_tool_calls TEXT[],
    p_tool_call_ids TEXT[], p_names TEXT[], p_metadata TEXT[], p_authors TEXT[], p_first_user TEXT, p_count BIGINT,
    p_new TEXT[], p_max INT)
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
               last_activity      = clock_timestamp(),
               participants       = CASE
                   WHEN p_new <@ participants OR cardinality(participants) >= p_max THEN participants
                   ELSE (participants || ARRAY(SELECT n.a FROM unnest(p_new) WITH ORDINALITY AS n(a, o)
                                                WHERE n.a <> ALL (participants) ORDER BY n.o))[1:p_max]
               END
         WHERE session_id = p_session AND user_id = p_user AND deleted_at IS NULL
        RETURNING message_count, epoch
    ), ins AS (
        INSERT INTO strata_messages
               (session_id, role, content, tool_calls, tool_call_id, name, metadata, user_id, created_at)
        SELECT p_session, b.role, b.content, NULLIF(b.tool_calls, '')::jsonb, b.tool_call_id,
               b.name, NULLIF(b.metadata, '')::jsonb, COALESCE(NULLIF(b.author, ''), p_user), clock_timestamp()
          FROM s, unnest(p_roles, p_contents, p_tool_calls, p_tool_call_ids, p_names, p_metadata, p_authors)
               WITH ORDINALITY AS b(role, content, tool_calls, tool_call_id, name, metadata, author, ord)
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
