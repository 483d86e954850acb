-- Undo 000005_strata_summaries.up.sql: nothing to do. Versions 1 to 4, as
-- migrations 1 and 3 now read, name the summary table strata_summaries
-- too, so the renamed table is already what version 4 holds (renaming it
-- back could clash with arc-reactor's conversation_summaries).
SELECT 1;
