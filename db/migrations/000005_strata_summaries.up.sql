-- Strata schema, version 5: Strata's summary table is strata_summaries.
-- See db/doc.go for the meaning of every column.
--
-- Strata used to keep its summaries in conversation_summaries, the name
-- arc-reactor gives its own summary table, so the two could not share a
-- schema. Databases made since then create strata_summaries directly
-- (migration 1); this renames the table of older ones. Only Strata's own
-- table (the one with an up_to_seq column) in the current schema is
-- renamed: arc-reactor's, with summarized_up_to, is never touched, and
-- db.ImportArcReactorSummaries can copy its summaries afterwards.
DO $$
DECLARE
    con record;
BEGIN
    IF to_regclass(format('%I.strata_summaries', current_schema())) IS NULL
       AND EXISTS (SELECT 1 FROM information_schema.columns
                    WHERE table_schema = current_schema()
                      AND table_name = 'conversation_summaries'
                      AND column_name = 'up_to_seq') THEN
        EXECUTE format('ALTER TABLE %I.conversation_summaries RENAME TO strata_summaries', current_schema());
        -- Constraint and index names follow the table, so that arc-reactor
        -- can create its own conversation_summaries_pkey later.
        FOR con IN SELECT conname FROM pg_constraint
                    WHERE conrelid = format('%I.strata_summaries', current_schema())::regclass
                      AND conname LIKE 'conversation\_summaries\_%'
        LOOP
            EXECUTE format('ALTER TABLE %I.strata_summaries RENAME CONSTRAINT %I TO %I', current_schema(),
                           con.conname, 'strata_summaries_' || substr(con.conname, length('conversation_summaries_') + 1));
        END LOOP;
    END IF;
END
$$;
