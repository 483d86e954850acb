-- Strata schema, version 7: an append is one call of strata_append, a load
-- one call of strata_snapshot.
--
-- PL/pgSQL keeps the plan of a function's statement for the rest of the
-- server connection's life, so these statements are planned once per
-- connection instead of on every call (for a load, planning costs more than
-- running), without a named prepared statement, which a connection pooler
-- in transaction mode cannot carry: a function is part of the schema, the
-- same on every server connection.

-- strata_append: see MessageStore.Append (db/messages.go) for what the
-- statement does. It reads and writes rows by their primary key only, so
-- the plan made once (the generic plan, from the first call on) fits every
-- call. The arguments are the batch as parallel
-- column arrays (the shape unnest wants), the first user message of the
-- batch and the batch size.
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

-- strata_snapshot: see MessageStore.Snapshot (db/messages.go) for what the
-- statement does. Its plan must read only the rows it returns, whatever the
-- planner knows of the tables: on a new database that nothing has analyzed
-- yet, PostgreSQL may otherwise sort the whole session to find its newest
-- messages, and a plan kept from the first calls, made while the tables
-- were nearly empty, would do so for good. Sorts, bitmap scans and
-- sequential scans are therefore off while the function runs (SET clauses
-- apply to the call alone): every table is read through its primary key,
-- the messages by a backward index scan that stops after p_limit rows (or
-- at the summary's cursor when p_after). That plan fits every call, so the
-- generic plan is used from the first call on (plan_cache_mode): once
-- tables are analyzed, PostgreSQL would otherwise compare it with plans
-- made for each session and could go back to planning every call.
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
