-- Undo 000016_journal_records.up.sql: the records go back into the JSON
-- journals.
DROP FUNCTION IF EXISTS strata_save_journaled(TEXT, BIGINT, TEXT, JSONB, BIGINT, TEXT, JSONB, JSONB, TEXT, BIGINT, INT);
DROP FUNCTION IF EXISTS strata_journal_append(TEXT, BIGINT, JSONB, JSONB, TEXT, BIGINT, INT, BOOLEAN);
DROP FUNCTION IF EXISTS strata_journal_sum(JSONB, JSONB);

UPDATE strata_journals j
   SET journal = j.journal || jsonb_build_object('records', r.records)
  FROM (SELECT session_id, epoch, jsonb_agg(record || jsonb_build_object('n', n) ORDER BY n) AS records
          FROM strata_journal_records GROUP BY session_id, epoch) r
 WHERE r.session_id = j.session_id AND r.epoch = j.epoch;

DROP TABLE IF EXISTS strata_journal_records;
