-- Undo 000016_journal_records.up.sql: the records go back into the JSON
-- journals.
DROP FUNCTION IF EXISTS strata_save_journaled(TEXT, BIGINT, TEXT, JSONB, BIGINT, TEXT, JSONB, JSONB, TEXT, BIGINT, INT);
DROP FUNCTION IF EXISTS strata_journal_append(TEXT, BIGINT, JSONB, JSONB, TEXT, BIGINT, INT, BOOLEAN);
DROP FUNCTION IF EXISTS strata_journal_sum(JSONB, JSONB);

-- Citus: one connection per node for what follows, so that the table
-- can be dropped in the transaction that updated strata_journals.
SET LOCAL citus.multi_shard_modify_mode TO 'sequential';

-- One session at a time: Citus runs an UPDATE of a distributed table
-- only with constant values where a STABLE function (jsonb_build_object)
-- is involved.
DO $do$
DECLARE
    r RECORD;
BEGIN
    FOR r IN SELECT j.session_id, j.journal || jsonb_build_object('records', x.records) AS journal
               FROM strata_journals j
               JOIN (SELECT session_id, epoch, jsonb_agg(record || jsonb_build_object('n', n) ORDER BY n) AS records
                       FROM strata_journal_records GROUP BY session_id, epoch) x
                 ON x.session_id = j.session_id AND x.epoch = j.epoch
    LOOP
        UPDATE strata_journals SET journal = r.journal WHERE session_id = r.session_id;
    END LOOP;
END
$do$;

DROP TABLE IF EXISTS strata_journal_records;
