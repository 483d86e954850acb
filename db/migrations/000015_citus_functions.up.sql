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
