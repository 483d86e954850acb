-- Undo 000022_journal_one_write.up.sql: strata_journal_append as in
-- version 16 (the header row locked by an upsert that writes it, then
-- written again).
CREATE OR REPLACE FUNCTION strata_journal_append(
    p_session TEXT, p_epoch BIGINT, p_record JSONB, p_counts JSONB, p_day TEXT, p_spent BIGINT, p_keep INT, p_check BOOLEAN)
RETURNS BIGINT
LANGUAGE plpgsql VOLATILE
AS $fn$
#variable_conflict use_column
DECLARE
    v_epoch  BIGINT;
    v_j      JSONB;
    v_n      BIGINT;
    v_rolled JSONB;
    v_day    TEXT;
    v_tokens BIGINT;
    r        RECORD;
BEGIN
    IF p_check THEN
        PERFORM 1 FROM strata_sessions s
         WHERE s.session_id = p_session AND s.deleted_at IS NULL AND s.epoch = p_epoch
           FOR KEY SHARE;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
    END IF;
    INSERT INTO strata_journals AS sj (session_id, epoch, journal)
    VALUES (p_session, p_epoch, '{}'::jsonb)
    ON CONFLICT (session_id) DO UPDATE SET updated_at = sj.updated_at
    RETURNING sj.epoch, sj.journal INTO v_epoch, v_j;
    IF v_epoch <> p_epoch THEN
        DELETE FROM strata_journal_records WHERE session_id = p_session;
        v_j := '{}'::jsonb;
    END IF;
    v_n := COALESCE((v_j #>> '{totals,records}')::bigint, 0) + 1;
    INSERT INTO strata_journal_records (session_id, epoch, n, record, counts)
    VALUES (p_session, p_epoch, v_n, p_record, p_counts);
    v_rolled := COALESCE(v_j->'rolled', '{}'::jsonb);
    FOR r IN DELETE FROM strata_journal_records
              WHERE session_id = p_session AND epoch = p_epoch AND n <= v_n - GREATEST(p_keep, 1)
          RETURNING counts
    LOOP
        v_rolled := strata_journal_sum(v_rolled, r.counts);
    END LOOP;
    v_day := v_j->>'day';
    v_tokens := COALESCE((v_j->>'day_tokens')::bigint, 0);
    IF p_spent > 0 THEN
        IF v_day IS DISTINCT FROM p_day THEN
            v_day := p_day;
            v_tokens := 0;
        END IF;
        v_tokens := v_tokens + p_spent;
    END IF;
    UPDATE strata_journals
       SET epoch = p_epoch,
           journal = jsonb_strip_nulls(jsonb_build_object(
               'epoch', p_epoch,
               'totals', strata_journal_sum(v_j->'totals', p_counts),
               'rolled', v_rolled,
               'day', v_day,
               'day_tokens', NULLIF(v_tokens, 0))),
           updated_at = now()
     WHERE session_id = p_session;
    RETURN v_n;
END
$fn$;
