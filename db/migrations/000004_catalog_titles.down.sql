-- Undo 000004_catalog_titles.up.sql: pinned titles become ordinary titles,
-- which the next refresh of their document may replace (the constraint
-- goes with the column).
ALTER TABLE strata_session_index DROP COLUMN pinned;
