-- Strata schema, version 18: a load that names the tail it already holds.
--
-- strata_load is strata_snapshot (version 15) with the stamp of the tail
-- the caller read before (see tailCache, db/tailcache.go): p_t_epoch,
-- p_t_counter and p_t_erasures are the session's epoch, seq counter and
-- erasures when that tail was read, p_t_after the cursor it was read
-- after and p_t_limit how many of the newest messages after that cursor
-- it holds (2147483647: all of them). Every change of a session's stored
-- messages changes its stamp under the session row's lock: an append or
-- an import raises seq_counter, an erasure (Forget) raises erasures, a
-- replace or the revival of a deleted session draws a new epoch, and a
-- delete leaves no live row. So when the epoch and erasures are the ones
-- of the stamp and the cursor and limit asked for are within it, the
-- messages the caller holds are still the stored ones up to p_t_counter,
-- and only those after it are sent (since: the seq they follow); otherwise
-- the whole tail is (since NULL). The header row also carries the
-- session's seq counter and erasures and the cursor the messages were read
-- after (after_seq), the new stamp. One statement, one snapshot, as
-- strata_snapshot: the ownership decision, the stamp, the messages and the
-- summary agree.
CREATE OR REPLACE FUNCTION strata_load(
    p_session TEXT, p_user TEXT, p_limit INT, p_after BOOLEAN, p_summary BOOLEAN,
    p_epoch BIGINT, p_version BIGINT, p_updated TIMESTAMPTZ,
    p_t_epoch BIGINT, p_t_counter BIGINT, p_t_erasures BIGINT, p_t_after BIGINT, p_t_limit INT)
RETURNS TABLE (owner TEXT, message_count BIGINT, epoch BIGINT, seq_counter BIGINT, erasures BIGINT,
    after_seq BIGINT, since BIGINT,
    seq BIGINT, role TEXT, content TEXT, tool_calls JSONB, tool_call_id TEXT, name TEXT, metadata JSONB,
    m_user_id TEXT, m_created_at TIMESTAMPTZ,
    s_epoch BIGINT, narrative TEXT, facts_json JSONB, up_to_seq BIGINT, version BIGINT,
    s_created_at TIMESTAMPTZ, s_updated_at TIMESTAMPTZ, same BOOLEAN)
LANGUAGE plpgsql STABLE
SET enable_sort = off SET enable_bitmapscan = off SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $fn$
#variable_conflict use_column
DECLARE
    v_user     TEXT;
    v_count    BIGINT;
    v_epoch    BIGINT;
    v_counter  BIGINT;
    v_erasures BIGINT;
    c_epoch    BIGINT;
    c_narr     TEXT;
    c_facts    JSONB;
    c_up_to    BIGINT;
    c_version  BIGINT;
    c_created  TIMESTAMPTZ;
    c_updated  TIMESTAMPTZ;
    v_found    BOOLEAN := false;
    v_same     BOOLEAN := false;
    v_after    BIGINT := 0;
    v_since    BIGINT;
BEGIN
    SELECT ss.user_id, ss.message_count, ss.epoch, ss.seq_counter, ss.erasures
      INTO v_user, v_count, v_epoch, v_counter, v_erasures
      FROM strata_sessions ss
     WHERE ss.session_id = p_session AND ss.deleted_at IS NULL;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF v_user = p_user AND (p_summary OR p_after) THEN
        SELECT cs.epoch, cs.narrative, cs.facts_json, cs.up_to_seq, cs.version, cs.created_at, cs.updated_at
          INTO c_epoch, c_narr, c_facts, c_up_to, c_version, c_created, c_updated
          FROM strata_summaries cs
         WHERE cs.session_id = p_session;
        v_found := FOUND;
    END IF;
    IF p_after AND v_found AND c_epoch = v_epoch THEN
        v_after := c_up_to;
    END IF;
    IF v_user = p_user AND p_t_epoch = v_epoch AND p_t_erasures = v_erasures AND p_t_counter <= v_counter
       AND p_t_after <= v_after AND p_limit <= p_t_limit THEN
        v_since := p_t_counter;
    END IF;
    IF v_found AND p_summary THEN
        v_same := COALESCE(c_epoch = p_epoch AND c_version = p_version AND c_updated = p_updated, false);
        RETURN QUERY SELECT v_user, v_count, v_epoch, v_counter, v_erasures, v_after, v_since,
               NULL::bigint, NULL::text, NULL::text, NULL::jsonb, NULL::text, NULL::text, NULL::jsonb,
               NULL::text, NULL::timestamptz,
               c_epoch, CASE WHEN v_same THEN NULL ELSE c_narr END,
               CASE WHEN v_same THEN NULL ELSE c_facts END, c_up_to, c_version,
               c_created, c_updated, v_same;
    ELSE
        RETURN QUERY SELECT v_user, v_count, v_epoch, v_counter, v_erasures, v_after, v_since,
               NULL::bigint, NULL::text, NULL::text, NULL::jsonb, NULL::text, NULL::text, NULL::jsonb,
               NULL::text, NULL::timestamptz,
               NULL::bigint, NULL::text, NULL::jsonb, NULL::bigint, NULL::bigint,
               NULL::timestamptz, NULL::timestamptz, false;
    END IF;
    IF v_user IS DISTINCT FROM p_user OR v_since = v_counter THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT NULL::text, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint,
           x.seq, x.role, x.content, x.tool_calls, x.tool_call_id, x.name, x.metadata, x.user_id, x.created_at,
           NULL::bigint, NULL::text, NULL::jsonb, NULL::bigint, NULL::bigint,
           NULL::timestamptz, NULL::timestamptz, NULL::boolean
      FROM strata_messages x
     WHERE x.session_id = p_session AND x.seq > GREATEST(v_after, COALESCE(v_since, 0))
     ORDER BY x.seq DESC
     LIMIT p_limit;
END
$fn$;

-- strata_append, as in version 17, returning also the session's erasures
-- and the time its messages were stored (created_at; NULL when it stored
-- none): with the epoch and the new seq counter (last_seq) they let the
-- appending store add the messages, as stored, to the tail it holds
-- (see tailCache). Only the result changed: two columns at its end, which
-- callers that select total, epoch, last_seq and owner by name ignore; a
-- changed result type needs the function dropped and created again.
DROP FUNCTION IF EXISTS strata_append(TEXT, TEXT, TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT, BIGINT,
    TEXT[], INT);
CREATE FUNCTION strata_append(
    p_session TEXT, p_user TEXT, p_roles TEXT[], p_contents TEXT[], p_tool_calls TEXT[],
    p_tool_call_ids TEXT[], p_names TEXT[], p_metadata TEXT[], p_authors TEXT[], p_first_user TEXT, p_count BIGINT,
    p_new TEXT[], p_max INT)
RETURNS TABLE (total BIGINT, epoch BIGINT, last_seq BIGINT, owner TEXT, erasures BIGINT, created_at TIMESTAMPTZ)
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
    v_erasures BIGINT;
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
    RETURNING message_count, epoch, seq_counter, erasures INTO v_total, v_epoch, v_counter, v_erasures;
    IF NOT FOUND THEN
        RETURN QUERY
        SELECT NULL::bigint, NULL::bigint, NULL::bigint, s.user_id, NULL::bigint, NULL::timestamptz
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
    RETURN QUERY SELECT v_total, v_epoch, CASE WHEN p_count > 0 THEN v_counter END, NULL::text, v_erasures,
           CASE WHEN p_count > 0 THEN v_at END;
END
$fn$;
