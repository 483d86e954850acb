-- Undo 000002_catalog.up.sql (the optional vector column goes with the
-- table; the vector extension itself is left installed).
DROP TABLE strata_session_index;
