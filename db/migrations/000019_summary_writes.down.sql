-- Undo 000019_summary_writes.up.sql.
DROP FUNCTION IF EXISTS strata_tail(TEXT, TEXT, INT, BOOLEAN, BOOLEAN, BIGINT, BIGINT, TIMESTAMPTZ,
    BIGINT, BIGINT, BIGINT, BIGINT, INT);

-- strata_save_summary as in version 15 (the session row read FOR KEY SHARE).
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

-- strata_save_journaled as in version 16 (its result without s_up_to,
-- s_created_at and summary_writes).
DROP FUNCTION IF EXISTS strata_save_journaled(TEXT, BIGINT, TEXT, JSONB, BIGINT, TEXT, JSONB, JSONB, TEXT, BIGINT, INT);
CREATE FUNCTION strata_save_journaled(
    p_session TEXT, p_epoch BIGINT, p_narrative TEXT, p_facts JSONB, p_up_to BIGINT, p_holder TEXT,
    p_record JSONB, p_counts JSONB, p_day TEXT, p_spent BIGINT, p_keep INT)
RETURNS TABLE (held BOOLEAN, gone BOOLEAN, saved BOOLEAN, s_epoch BIGINT, s_version BIGINT, s_updated_at TIMESTAMPTZ)
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
BEGIN
    SELECT x.held, x.gone, x.saved INTO v_held, v_gone, v_saved
      FROM strata_save_summary(p_session, p_epoch, p_narrative, p_facts, p_up_to, p_holder) x;
    IF v_saved THEN
        PERFORM strata_journal_append(p_session, p_epoch, p_record, p_counts, p_day, p_spent, p_keep, false);
        SELECT cs.epoch, cs.version, cs.updated_at INTO v_epoch, v_version, v_updated
          FROM strata_summaries cs WHERE cs.session_id = p_session;
    END IF;
    RETURN QUERY SELECT v_held, v_gone, v_saved, v_epoch, v_version, v_updated;
END
$fn$;


ALTER TABLE strata_sessions DROP COLUMN IF EXISTS summary_writes;
