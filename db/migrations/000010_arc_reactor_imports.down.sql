-- Undo 000010_arc_reactor_imports.up.sql.
DROP TABLE IF EXISTS strata_arc_reactor_imports;
