-- Strata schema, version 11: sequence numbers counted per session. See
-- db/doc.go for the meaning of every column.
--
-- seq_counter is the greatest seq drawn for the session id so far; every
-- path that stores messages (strata_append, Import, Replace, the
-- arc-reactor import) raises it in the statement that locks the session
-- row and numbers the messages after it, so a session's seqs are dense
-- and no user can count another's writes from them. The row outlives a
-- delete (a tombstone) and a re-creation of the id keeps the counter, so a
-- number is never reused. A constant default adds the column without
-- rewriting the table.
ALTER TABLE strata_sessions ADD COLUMN IF NOT EXISTS seq_counter BIGINT NOT NULL DEFAULT 0;

-- Existing seqs are kept as they are (summary cursors, catalogue sources and
-- clients hold them): each counter starts at the greatest seq its session
-- holds or its summary covers. Where messages of the id may have been
-- removed after the last one it holds (a tombstone, a session with none, a
-- session with erasures), the numbers they had are unknown, so the counter
-- starts at the greatest value the global sequence ever gave instead:
-- nothing is reused.
UPDATE strata_sessions s
   SET seq_counter = GREATEST(
           COALESCE((SELECT max(m.seq) FROM strata_messages m WHERE m.session_id = s.session_id), 0),
           COALESCE((SELECT c.up_to_seq FROM strata_summaries c WHERE c.session_id = s.session_id), 0),
           CASE WHEN s.deleted_at IS NOT NULL OR s.erasures > 0 OR s.message_count = 0
                THEN (SELECT q.last_value FROM strata_messages_seq_seq q WHERE q.is_called)
           END);

-- strata_append, as in version 9, numbering the batch from the session's
-- counter, which the same UPDATE raises under the row lock. The global
-- sequence (the column default of strata_messages.seq) is no longer used
-- by Strata.
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
               END,
               seq_counter        = seq_counter + p_count
         WHERE session_id = p_session AND user_id = p_user AND deleted_at IS NULL
        RETURNING message_count, epoch, seq_counter
    ), ins AS (
        INSERT INTO strata_messages
               (seq, session_id, role, content, tool_calls, tool_call_id, name, metadata, user_id, created_at)
        SELECT s.seq_counter - p_count + b.ord, p_session, b.role, b.content, NULLIF(b.tool_calls, '')::jsonb, b.tool_call_id,
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
