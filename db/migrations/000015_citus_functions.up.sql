-- Strata schema, version 15: functions whose statements Citus routes to
-- one shard each.
--
-- A summary's save is one call of
-- strata_save_summary, which Citus runs on the worker holding the session
-- when the function is distributed (db.Distribute). As one statement of
-- data-modifying CTEs over the session, lease and summary rows, the save
-- made Citus gather the CTEs' results on the coordinator before writing;
-- as a function of separate statements, each about the one session, it is
-- one round trip to one shard. See SummaryStore.Save (db/summaries.go) for
-- what it guarantees.
--
-- With p_holder NULL it is a save: the session row is read FOR KEY SHARE
-- (a Delete, which locks it FOR UPDATE, or a revival of its tombstone is
-- waited for, and the row is then read as they left it); gone is true when
-- it is a tombstone or carries another epoch than p_epoch, and then
-- nothing is written (no row: a session kept by another message store,
-- saved). The upsert replaces a summary of another epoch and, within the
-- epoch, only one whose cursor is not above p_up_to; saved says whether a
-- row was written. With p_holder, the save happens only while the fold
-- lease is still p_holder's (its row locked FOR UPDATE first; held), and
-- the lease is then released whatever the save did.
CREATE OR REPLACE FUNCTION strata_save_summary(
    p_session TEXT, p_epoch BIGINT, p_narrative TEXT, p_facts JSONB, p_up_to BIGINT, p_holder TEXT)
RETURNS TABLE (held BOOLEAN, gone BOOLEAN, saved BOOLEAN)
LANGUAGE plpgsql VOLATILE
AS $fn$
#variable_conflict use_column
DECLARE
    v_held  BOOLEAN := true;
    v_gone  BOOLEAN;
    v_saved BOOLEAN := false;
    v_now   TIMESTAMPTZ := now();
BEGIN
    IF p_holder IS NOT NULL THEN
        PERFORM 1 FROM strata_fold_leases WHERE session_id = p_session AND holder = p_holder FOR UPDATE;
        v_held := FOUND;
    END IF;
    SELECT s.deleted_at IS NOT NULL OR s.epoch <> p_epoch INTO v_gone
      FROM strata_sessions s
     WHERE s.session_id = p_session
       FOR KEY SHARE;
    v_gone := COALESCE(v_gone, false);
    IF v_held AND NOT v_gone THEN
        INSERT INTO strata_summaries AS cs
               (session_id, epoch, narrative, facts_json, up_to_seq, version, created_at, updated_at)
        VALUES (p_session, p_epoch, p_narrative, p_facts, p_up_to, 1, v_now, v_now)
        ON CONFLICT (session_id) DO UPDATE
           SET epoch      = EXCLUDED.epoch,
               narrative  = EXCLUDED.narrative,
               facts_json = EXCLUDED.facts_json,
               up_to_seq  = EXCLUDED.up_to_seq,
               version    = CASE WHEN cs.epoch = EXCLUDED.epoch THEN cs.version + 1 ELSE 1 END,
               created_at = CASE WHEN cs.epoch = EXCLUDED.epoch THEN cs.created_at ELSE EXCLUDED.created_at END,
               updated_at = EXCLUDED.updated_at
         WHERE cs.epoch <> EXCLUDED.epoch OR EXCLUDED.up_to_seq >= cs.up_to_seq;
        v_saved := FOUND;
    END IF;
    IF p_holder IS NOT NULL AND v_held THEN
        DELETE FROM strata_fold_leases WHERE session_id = p_session AND holder = p_holder;
    END IF;
    RETURN QUERY SELECT v_held, v_gone, v_saved;
END
$fn$;

-- strata_import_messages inserts an imported session's messages in
-- order, numbered after the session's seq counter, which it raises first
-- (under the session row's lock, which the caller's transaction holds),
-- and returns their seqs: see importMessagesSQL (db/import.go). As one
-- statement (a data-modifying CTE feeding an INSERT … SELECT) Citus could
-- not plan it; here each statement is about the one session. An empty
-- author is the owner p_user; an empty creation time is the time of the
-- call.
CREATE OR REPLACE FUNCTION strata_import_messages(
    p_session TEXT, p_user TEXT, p_roles TEXT[], p_contents TEXT[], p_tool_calls TEXT[],
    p_tool_call_ids TEXT[], p_names TEXT[], p_metadata TEXT[], p_created TEXT[], p_authors TEXT[])
RETURNS SETOF BIGINT
LANGUAGE plpgsql VOLATILE
AS $fn$
DECLARE
    v_n    INT := COALESCE(cardinality(p_roles), 0);
    v_base BIGINT;
    v_at   TIMESTAMPTZ;
    i      INT;
BEGIN
    UPDATE strata_sessions SET seq_counter = seq_counter + v_n
     WHERE session_id = p_session
    RETURNING seq_counter - v_n INTO v_base;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    v_at := clock_timestamp();
    FOR i IN 1 .. v_n LOOP
        INSERT INTO strata_messages
               (seq, session_id, role, content, tool_calls, tool_call_id, name, metadata, user_id, created_at)
        VALUES (v_base + i, p_session, p_roles[i], p_contents[i], NULLIF(p_tool_calls[i], '')::jsonb,
                p_tool_call_ids[i], p_names[i], NULLIF(p_metadata[i], '')::jsonb,
                COALESCE(NULLIF(p_authors[i], ''), p_user), COALESCE(NULLIF(p_created[i], '')::timestamptz, v_at));
        RETURN NEXT v_base + i;
    END LOOP;
END
$fn$;

-- strata_snapshot, as in version 7, in statements that each read one
-- table by the session's id (Citus plans such a statement by its fast
-- path, without its general planner, which otherwise cost several times
-- the read): the session row, then its summary, then the newest messages.
-- The function is STABLE, so all three read the snapshot of the calling
-- statement, as the one statement did. The result is the same: no row
-- for a missing or deleted session; the header row (owner, count, epoch,
-- and, with p_summary, the summary unless it is the one the caller holds:
-- same) and, for the owner p_user, the newest p_limit messages (after the
-- summary's cursor when p_after), newest first.
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
DECLARE
    v_user    TEXT;
    v_count   BIGINT;
    v_epoch   BIGINT;
    c_epoch   BIGINT;
    c_narr    TEXT;
    c_facts   JSONB;
    c_up_to   BIGINT;
    c_version BIGINT;
    c_created TIMESTAMPTZ;
    c_updated TIMESTAMPTZ;
    v_found   BOOLEAN := false;
    v_same    BOOLEAN := false;
    v_after   BIGINT := 0;
BEGIN
    SELECT ss.user_id, ss.message_count, ss.epoch INTO v_user, v_count, v_epoch
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
    IF v_found AND p_summary THEN
        v_same := COALESCE(c_epoch = p_epoch AND c_version = p_version AND c_updated = p_updated, false);
        RETURN QUERY SELECT v_user, v_count, v_epoch,
               NULL::bigint, NULL::text, NULL::text, NULL::jsonb, NULL::text, NULL::text, NULL::jsonb,
               NULL::text, NULL::timestamptz,
               c_epoch, CASE WHEN v_same THEN NULL ELSE c_narr END,
               CASE WHEN v_same THEN NULL ELSE c_facts END, c_up_to, c_version,
               c_created, c_updated, v_same;
    ELSE
        RETURN QUERY SELECT v_user, v_count, v_epoch,
               NULL::bigint, NULL::text, NULL::text, NULL::jsonb, NULL::text, NULL::text, NULL::jsonb,
               NULL::text, NULL::timestamptz,
               NULL::bigint, NULL::text, NULL::jsonb, NULL::bigint, NULL::bigint,
               NULL::timestamptz, NULL::timestamptz, false;
    END IF;
    IF v_user IS DISTINCT FROM p_user THEN
        RETURN;
    END IF;
    IF p_after AND v_found AND c_epoch = v_epoch THEN
        v_after := c_up_to;
    END IF;
    RETURN QUERY
    SELECT NULL::text, NULL::bigint, NULL::bigint,
           x.seq, x.role, x.content, x.tool_calls, x.tool_call_id, x.name, x.metadata, x.user_id, x.created_at,
           NULL::bigint, NULL::text, NULL::jsonb, NULL::bigint, NULL::bigint,
           NULL::timestamptz, NULL::timestamptz, NULL::boolean
      FROM strata_messages x
     WHERE x.session_id = p_session AND x.seq > v_after
     ORDER BY x.seq DESC
     LIMIT p_limit;
END
$fn$;

-- strata_merge_participants is the participants of a session after a
-- batch by the authors p_new (computed by the caller, first writers
-- first): unchanged when they are all known or the list is full, else
-- the new ones appended, at most p_max in all.
CREATE OR REPLACE FUNCTION strata_merge_participants(p_current TEXT[], p_new TEXT[], p_max INT)
RETURNS TEXT[]
LANGUAGE sql IMMUTABLE
AS $fn$
SELECT CASE
    WHEN p_new <@ p_current OR cardinality(p_current) >= p_max THEN p_current
    ELSE (p_current || ARRAY(SELECT n.a FROM unnest(p_new) WITH ORDINALITY AS n(a, o)
                              WHERE n.a <> ALL (p_current) ORDER BY n.o))[1:p_max]
END
$fn$;

-- strata_append, as in version 14, with the participants merged by
-- strata_merge_participants: without a subquery, its UPDATE is a statement
-- Citus plans by its fast path (one table, by the session's id), which
-- costs far less than its general planner.
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
           participants       = strata_merge_participants(participants, p_new, p_max),
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
