-- Strata schema, version 17: strata_append inserts a batch's messages two
-- per statement.
--
-- On Citus each statement of a delegated function is planned by Citus on
-- the worker, which makes its query for the local shard afresh on every
-- call (deparsed, parsed and planned again: Citus 13.2 keeps no local
-- plan across calls of a function); that work, not the statement's own,
-- is most of an append's cost there. A turn (a user message and the
-- reply) is now two statements, the session row's update and one two-row
-- INSERT, instead of three; a batch of n messages takes 1 + ⌈n/2⌉. The
-- participants merge runs only for a batch by other authors than the
-- owner (strata_merge_participants is an SQL function PostgreSQL plans on
-- every call). What the function does is as in version 15.
CREATE OR REPLACE FUNCTION strata_append(
    p_session TEXT, p_user TEXT, p_roles TEXT[], p_contents TEXT[], p_tool_calls TEXT[],
    p_tool_call_ids TEXT[], p_names TEXT[], p_metadata TEXT[], p_authors TEXT[], p_first_user TEXT, p_count BIGINT,
    p_new TEXT[], p_max INT)
RETURNS TABLE (total BIGINT, epoch BIGINT, last_seq BIGINT, owner TEXT)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
AS $fn$
#variable_conflict use_column
DECLARE
    v_start   TIMESTAMPTZ := clock_timestamp();
    v_at      TIMESTAMPTZ;
    v_total   BIGINT;
    v_epoch   BIGINT;
    v_counter BIGINT;
    v_base    BIGINT;
    i         INT := 1;
BEGIN
    UPDATE strata_sessions
       SET message_count      = message_count + p_count,
           first_user_message = COALESCE(first_user_message, p_first_user),
           last_activity      = GREATEST(last_activity, v_start),
           participants       = CASE WHEN cardinality(p_new) = 0 THEN participants
                                     ELSE strata_merge_participants(participants, p_new, p_max) END,
           seq_counter        = seq_counter + p_count
     WHERE session_id = p_session AND user_id = p_user AND deleted_at IS NULL
    RETURNING message_count, epoch, seq_counter INTO v_total, v_epoch, v_counter;
    IF NOT FOUND THEN
        RETURN QUERY
        SELECT NULL::bigint, NULL::bigint, NULL::bigint, s.user_id
          FROM (SELECT 1) one
          LEFT JOIN strata_sessions s ON s.session_id = p_session AND s.deleted_at IS NULL;
        RETURN;
    END IF;
    v_at := clock_timestamp();
    v_base := v_counter - p_count;
    WHILE i < p_count LOOP
        INSERT INTO strata_messages
               (seq, session_id, role, content, tool_calls, tool_call_id, name, metadata, user_id, created_at)
        VALUES (v_base + i, p_session, p_roles[i], p_contents[i], NULLIF(p_tool_calls[i], '')::jsonb,
                p_tool_call_ids[i], p_names[i], NULLIF(p_metadata[i], '')::jsonb,
                COALESCE(NULLIF(p_authors[i], ''), p_user), v_at),
               (v_base + i + 1, p_session, p_roles[i + 1], p_contents[i + 1], NULLIF(p_tool_calls[i + 1], '')::jsonb,
                p_tool_call_ids[i + 1], p_names[i + 1], NULLIF(p_metadata[i + 1], '')::jsonb,
                COALESCE(NULLIF(p_authors[i + 1], ''), p_user), v_at);
        i := i + 2;
    END LOOP;
    IF i = p_count THEN
        INSERT INTO strata_messages
               (seq, session_id, role, content, tool_calls, tool_call_id, name, metadata, user_id, created_at)
        VALUES (v_base + i, p_session, p_roles[i], p_contents[i], NULLIF(p_tool_calls[i], '')::jsonb,
                p_tool_call_ids[i], p_names[i], NULLIF(p_metadata[i], '')::jsonb,
                COALESCE(NULLIF(p_authors[i], ''), p_user), v_at);
    END IF;
    RETURN QUERY SELECT v_total, v_epoch, CASE WHEN p_count > 0 THEN v_counter END, NULL::text;
END
$fn$;
