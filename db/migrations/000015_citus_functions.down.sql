-- Undo 000015_citus_functions.up.sql.
DROP FUNCTION IF EXISTS strata_import_messages(TEXT, TEXT, TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[]);
DROP FUNCTION IF EXISTS strata_save_summary(TEXT, BIGINT, TEXT, JSONB, BIGINT, TEXT);

-- strata_snapshot as in version 7.
CREATE OR REPLACE FUNCTION strata_snapshot(
    p_session TEXT, p_user TEXT, p_limit INT, p_after BOOLEAN, p_summary BOOLEAN,
    p_epoch BIGINT, p_version BIGINT, p_updated TIMESTAMPTZ)
RETURNS TABLE (owner TEXT, message_count BIGINT, epoch BIGINT,
    seq BIGINT, role TEXT, content TEXT, tool_calls JSONB, tool_call_id TEXT, name TEXT, metadata JSONB,
    m_user_id TEXT, m_created_at TIMESTAMPTZ,
    s_epoch BIGINT, narrative TEXT, facts_json JSONB, up_to_seq BIGINT, version BIGINT,
    s_created_at TIMESTAMPTZ, s_updated_at TIMESTAMPTZ, same BOOLEAN)
LANGUAGE plpgsql STABLE
SET enable_sort = off SET enable_bitmapscan = off SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
AS $fn$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH s AS MATERIALIZED (
        SELECT ss.user_id, ss.message_count, ss.epoch
          FROM strata_sessions ss
         WHERE ss.session_id = p_session AND ss.deleted_at IS NULL
    ), c AS MATERIALIZED (
        SELECT cs.epoch, cs.narrative, cs.facts_json, cs.up_to_seq, cs.version, cs.created_at, cs.updated_at
          FROM s
          JOIN strata_summaries cs ON cs.session_id = p_session AND s.user_id = p_user
         WHERE p_summary OR p_after
    )
    SELECT s.user_id, s.message_count, s.epoch,
           NULL::bigint, NULL::text, NULL::text, NULL::jsonb, NULL::text, NULL::text, NULL::jsonb,
           NULL::text, NULL::timestamptz,
           c.epoch, CASE WHEN k.same OR NOT p_summary THEN NULL ELSE c.narrative END,
           CASE WHEN k.same OR NOT p_summary THEN NULL ELSE c.facts_json END, c.up_to_seq, c.version,
           c.created_at, c.updated_at, k.same
      FROM s
      LEFT JOIN c ON p_summary
     CROSS JOIN LATERAL (
            SELECT COALESCE(c.epoch = p_epoch AND c.version = p_version AND c.updated_at = p_updated, false) AS same
           ) k
    UNION ALL
    SELECT NULL, NULL, NULL,
           m.seq, m.role, m.content, m.tool_calls, m.tool_call_id, m.name, m.metadata, m.user_id, m.created_at,
           NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
      FROM s
     CROSS JOIN LATERAL (
            SELECT x.seq, x.role, x.content, x.tool_calls, x.tool_call_id, x.name, x.metadata, x.user_id, x.created_at
              FROM strata_messages x
             WHERE x.session_id = p_session AND s.user_id = p_user
               AND x.seq > CASE WHEN p_after
                                THEN COALESCE((SELECT c.up_to_seq FROM c WHERE c.epoch = s.epoch), 0)
                                ELSE 0 END
             ORDER BY x.seq DESC
             LIMIT p_limit
           ) m;
END
$fn$;

-- strata_append as in version 14.
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
    i         INT;
BEGIN
    UPDATE strata_sessions
       SET message_count      = message_count + p_count,
           first_user_message = COALESCE(first_user_message, p_first_user),
           last_activity      = GREATEST(last_activity, v_start),
           participants       = CASE
               WHEN p_new <@ participants OR cardinality(participants) >= p_max THEN participants
               ELSE (participants || ARRAY(SELECT n.a FROM unnest(p_new) WITH ORDINALITY AS n(a, o)
                                            WHERE n.a <> ALL (participants) ORDER BY n.o))[1:p_max]
           END,
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
    FOR i IN 1 .. p_count LOOP
        INSERT INTO strata_messages
               (seq, session_id, role, content, tool_calls, tool_call_id, name, metadata, user_id, created_at)
        VALUES (v_counter - p_count + i, p_session, p_roles[i], p_contents[i], NULLIF(p_tool_calls[i], '')::jsonb,
                p_tool_call_ids[i], p_names[i], NULLIF(p_metadata[i], '')::jsonb,
                COALESCE(NULLIF(p_authors[i], ''), p_user), v_at);
    END LOOP;
    RETURN QUERY SELECT v_total, v_epoch, CASE WHEN p_count > 0 THEN v_counter END, NULL::text;
END
$fn$;

DROP FUNCTION IF EXISTS strata_merge_participants(TEXT[], TEXT[], INT);
