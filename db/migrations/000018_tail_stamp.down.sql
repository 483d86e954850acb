-- Undo 000018_tail_stamp.up.sql.
DROP FUNCTION IF EXISTS strata_load(TEXT, TEXT, INT, BOOLEAN, BOOLEAN, BIGINT, BIGINT, TIMESTAMPTZ,
    BIGINT, BIGINT, BIGINT, BIGINT, INT);

-- strata_append as in version 17 (its result without erasures and created_at).
DROP FUNCTION IF EXISTS strata_append(TEXT, TEXT, TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT, BIGINT,
    TEXT[], INT);
CREATE FUNCTION strata_append(
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
