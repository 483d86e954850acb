-- Strata schema, version 16: a session's fold journal one row per record.
--
-- strata_journals keeps one row per session id: its incarnation epoch
-- and, as JSON, the journal's header (store.Journal without its records:
-- the totals of every record appended, those rolled out of the retention,
-- the day's tokens). Each kept record is a row of strata_journal_records,
-- numbered n from 1 within the incarnation, with counts, what it adds to
-- the totals (store.JournalTotals of the record alone), so that rolling
-- it out needs no decoding. Appending a record is an INSERT, a bounded
-- DELETE of the records past the retention and an UPDATE of the header
-- (strata_journal_append), never a rewrite of the whole journal; a fold
-- saves its summary and appends its record in one call
-- (strata_save_journaled). Records go with their session: Delete and
-- Replace delete them with the header (db/messages.go, db/replace.go),
-- and an append to a header of another epoch deletes the old ones.
-- strata_journal_sum adds the counters of two store.JournalTotals.
CREATE OR REPLACE FUNCTION strata_journal_sum(p_a JSONB, p_b JSONB)
RETURNS JSONB
LANGUAGE sql IMMUTABLE
AS $fn$
SELECT COALESCE(jsonb_object_agg(k, COALESCE((p_a->>k)::bigint, 0) + COALESCE((p_b->>k)::bigint, 0)), '{}'::jsonb)
  FROM (SELECT jsonb_object_keys(COALESCE(p_a, '{}'::jsonb)) UNION SELECT jsonb_object_keys(COALESCE(p_b, '{}'::jsonb))) AS t(k)
$fn$;

-- strata_journal_append appends p_record (its counts p_counts; p_spent
-- tokens spent on the UTC day p_day) to the journal of the session's
-- incarnation p_epoch as its next record, keeping at most p_keep records:
-- store.Journal.Add. A header of another epoch (a predecessor's) starts
-- afresh and its records go. With p_check, the session row must be live
-- and of p_epoch (read FOR KEY SHARE, so a Delete or Replace waits for
-- the append and then deletes it); else nothing is appended. Returns the
-- record's number, NULL when nothing was appended.
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

-- strata_save_journaled is strata_save_summary (version 15) and, when it
-- saved, the append of the fold's record (strata_journal_append, with no
-- session check: the save made it) in the same call, returning the
-- identity (epoch, version, updated_at) of the summary row written, which
-- a fold's save caches: one round trip instead of a transaction of
-- several.
CREATE OR REPLACE FUNCTION strata_save_journaled(
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

-- The table and its data last: on Citus no function may be created in a
-- transaction after a parallel operation on a distributed table.
CREATE TABLE IF NOT EXISTS strata_journal_records (
    session_id TEXT   NOT NULL,
    epoch      BIGINT NOT NULL,
    n          BIGINT NOT NULL,
    record     JSONB  NOT NULL,
    counts     JSONB  NOT NULL,
    PRIMARY KEY (session_id, epoch, n)
);

-- The records of the JSON journals move to rows; their counts as
-- store.JournalTotals counts one record.
INSERT INTO strata_journal_records (session_id, epoch, n, record, counts)
SELECT j.session_id, j.epoch, (r->>'n')::bigint, r, jsonb_build_object(
           'records', 1,
           'folds', CASE WHEN r->>'kind' = 'fold' AND r->>'outcome' = 'saved' THEN 1 ELSE 0 END,
           'failed_folds', CASE WHEN r->>'kind' = 'fold' AND r->>'outcome' IN ('failed', 'abandoned') THEN 1 ELSE 0 END,
           'fallbacks', CASE WHEN COALESCE(r->>'fallback', '') <> '' THEN 1 ELSE 0 END,
           'calls', COALESCE((r->>'calls')::bigint, 0),
           'input_tokens', COALESCE((r->>'input_tokens')::bigint, 0),
           'output_tokens', COALESCE((r->>'output_tokens')::bigint, 0),
           'estimated_input_tokens', COALESCE((r->>'estimated_input_tokens')::bigint, 0),
           'estimated_output_tokens', COALESCE((r->>'estimated_output_tokens')::bigint, 0))
  FROM strata_journals j, jsonb_array_elements(COALESCE(j.journal->'records', '[]'::jsonb)) r
ON CONFLICT DO NOTHING;

UPDATE strata_journals SET journal = journal - 'records' WHERE journal ? 'records';

