-- Strata schema, version 19: a held load checks one row.
--
-- strata_sessions.summary_writes counts the writes of the session's
-- summary that do not otherwise change the session's stamp: every save
-- (strata_save_summary, and so strata_save_journaled) and every delete of
-- the summary (SummaryStore.Delete) raises it, in the statement that
-- writes the summary and under the session row's lock. The other writers
-- of a summary change the stamp already: an erasure (Forget) raises
-- erasures, a replace, an import or the revival of a deleted session
-- draws a new epoch, and a delete of the session leaves no live row. So a
-- session row whose epoch, seq counter, erasures and summary_writes are
-- those of a tail and summary a store read before proves that neither
-- changed: the check of a held load (heldSQL, db/messages.go) is one
-- primary-key lookup of strata_sessions, without the summary's row.
--
-- A replica of an older build still running beside this version deletes
-- a summary (SummaryStore.Delete) without raising summary_writes; its
-- saves call strata_save_summary, which does. Deleting a summary alone is
-- not something Strata's memory does (a session's delete or replace
-- removes it with the session): a fleet that deletes summaries by hand
-- finishes its rollout before relying on held loads.

-- strata_save_summary as in version 15, the session row updated (its
-- summary_writes raised) in place of being read FOR KEY SHARE: the row
-- lock is the same one a Delete of the session waits for, now taken
-- FOR NO KEY UPDATE, which an append of the session waits for too, for
-- the length of the save's one call. The counter is raised whether or not
-- the upsert writes (a save refused by the cursor only costs the next
-- held load its hit).
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
    IF v_held THEN
        UPDATE strata_sessions s
           SET summary_writes = s.summary_writes + 1
         WHERE s.session_id = p_session
        RETURNING s.deleted_at IS NOT NULL OR s.epoch <> p_epoch INTO v_gone;
    ELSE
        SELECT s.deleted_at IS NOT NULL OR s.epoch <> p_epoch INTO v_gone
          FROM strata_sessions s
         WHERE s.session_id = p_session
           FOR KEY SHARE;
    END IF;
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

-- strata_tail is strata_load (version 18) whose session row also carries
-- the session's summary_writes and, when p_user owns the session, the
-- summary's identity (epoch, version, created_at,
-- updated_at) and cursor (up_to_seq), its narrative and facts only when
-- the load wants the summary and it is not the one the caller holds:
-- with the epoch, seq counter and erasures, the stamp of the tail and
-- summary the caller then holds, which heldSQL checks in one row. A new
-- name rather than a changed strata_load, whose result older builds
-- still running beside this version read by position.
CREATE OR REPLACE FUNCTION strata_tail(
    p_session TEXT, p_user TEXT, p_limit INT, p_after BOOLEAN, p_summary BOOLEAN,
    p_epoch BIGINT, p_version BIGINT, p_updated TIMESTAMPTZ,
    p_t_epoch BIGINT, p_t_counter BIGINT, p_t_erasures BIGINT, p_t_after BIGINT, p_t_limit INT)
RETURNS TABLE (owner TEXT, message_count BIGINT, epoch BIGINT, seq_counter BIGINT, erasures BIGINT,
    after_seq BIGINT, since BIGINT,
    seq BIGINT, role TEXT, content TEXT, tool_calls JSONB, tool_call_id TEXT, name TEXT, metadata JSONB,
    m_user_id TEXT, m_created_at TIMESTAMPTZ,
    s_epoch BIGINT, narrative TEXT, facts_json JSONB, up_to_seq BIGINT, version BIGINT,
    s_created_at TIMESTAMPTZ, s_updated_at TIMESTAMPTZ, same BOOLEAN, summary_writes BIGINT)
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
    v_writes   BIGINT;
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
    SELECT ss.user_id, ss.message_count, ss.epoch, ss.seq_counter, ss.erasures, ss.summary_writes
      INTO v_user, v_count, v_epoch, v_counter, v_erasures, v_writes
      FROM strata_sessions ss
     WHERE ss.session_id = p_session AND ss.deleted_at IS NULL;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF v_user = p_user THEN
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
    IF v_found THEN
        v_same := p_summary AND COALESCE(c_epoch = p_epoch AND c_version = p_version AND c_updated = p_updated, false);
        RETURN QUERY SELECT v_user, v_count, v_epoch, v_counter, v_erasures, v_after, v_since,
               NULL::bigint, NULL::text, NULL::text, NULL::jsonb, NULL::text, NULL::text, NULL::jsonb,
               NULL::text, NULL::timestamptz,
               c_epoch, CASE WHEN v_same OR NOT p_summary THEN NULL ELSE c_narr END,
               CASE WHEN v_same OR NOT p_summary THEN NULL ELSE c_facts END, c_up_to, c_version,
               c_created, c_updated, v_same, v_writes;
    ELSE
        RETURN QUERY SELECT v_user, v_count, v_epoch, v_counter, v_erasures, v_after, v_since,
               NULL::bigint, NULL::text, NULL::text, NULL::jsonb, NULL::text, NULL::text, NULL::jsonb,
               NULL::text, NULL::timestamptz,
               NULL::bigint, NULL::text, NULL::jsonb, NULL::bigint, NULL::bigint,
               NULL::timestamptz, NULL::timestamptz, false, v_writes;
    END IF;
    IF v_user IS DISTINCT FROM p_user OR v_since = v_counter THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT NULL::text, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint,
           x.seq, x.role, x.content, x.tool_calls, x.tool_call_id, x.name, x.metadata, x.user_id, x.created_at,
           NULL::bigint, NULL::text, NULL::jsonb, NULL::bigint, NULL::bigint,
           NULL::timestamptz, NULL::timestamptz, NULL::boolean, NULL::bigint
      FROM strata_messages x
     WHERE x.session_id = p_session AND x.seq > GREATEST(v_after, COALESCE(v_since, 0))
     ORDER BY x.seq DESC
     LIMIT p_limit;
END
$fn$;


-- strata_save_journaled as in version 16, returning also the written
-- summary's cursor and creation time and the session's summary_writes
-- after the save: the summary's whole identity as the save left it, read
-- under the session row's lock the save holds, so no other write of the
-- summary comes between: the saving store gives the tail it holds this
-- summary part of the stamp instead of reading the session again at its
-- next load (the rest of the stamp is checked as before). A changed result type
-- needs the function dropped and created again; older builds select its
-- columns by name.
DROP FUNCTION IF EXISTS strata_save_journaled(TEXT, BIGINT, TEXT, JSONB, BIGINT, TEXT, JSONB, JSONB, TEXT, BIGINT, INT);
CREATE FUNCTION strata_save_journaled(
    p_session TEXT, p_epoch BIGINT, p_narrative TEXT, p_facts JSONB, p_up_to BIGINT, p_holder TEXT,
    p_record JSONB, p_counts JSONB, p_day TEXT, p_spent BIGINT, p_keep INT)
RETURNS TABLE (held BOOLEAN, gone BOOLEAN, saved BOOLEAN, s_epoch BIGINT, s_version BIGINT, s_updated_at TIMESTAMPTZ,
    s_up_to BIGINT, s_created_at TIMESTAMPTZ, summary_writes BIGINT)
LANGUAGE plpgsql VOLATILE
AS $fn$
#variable_conflict use_column
DECLARE
    v_held    BOOLEAN;
    v_gone    BOOLEAN;
    v_saved   BOOLEAN;
    v_epoch   BIGINT;
    v_version BIGINT;
    v_updated TIMESTAMPTZ;
    v_up_to   BIGINT;
    v_created TIMESTAMPTZ;
    v_writes  BIGINT;
BEGIN
    SELECT x.held, x.gone, x.saved INTO v_held, v_gone, v_saved
      FROM strata_save_summary(p_session, p_epoch, p_narrative, p_facts, p_up_to, p_holder) x;
    IF v_saved THEN
        PERFORM strata_journal_append(p_session, p_epoch, p_record, p_counts, p_day, p_spent, p_keep, false);
        SELECT cs.epoch, cs.version, cs.updated_at, cs.up_to_seq, cs.created_at
          INTO v_epoch, v_version, v_updated, v_up_to, v_created
          FROM strata_summaries cs WHERE cs.session_id = p_session;
        SELECT ss.summary_writes INTO v_writes FROM strata_sessions ss WHERE ss.session_id = p_session;
    END IF;
    RETURN QUERY SELECT v_held, v_gone, v_saved, v_epoch, v_version, v_updated, v_up_to, v_created, v_writes;
END
$fn$;

-- The column last: on Citus no function may be created in a transaction
-- after a parallel operation on a distributed table.
ALTER TABLE strata_sessions ADD COLUMN IF NOT EXISTS summary_writes BIGINT NOT NULL DEFAULT 0;
