-- Strata schema, version 10: what strata migrate import-arc-reactor has
-- imported (db.ImportArcReactor), so that the import can be run again
-- during a cut-over and adds only arc-reactor's newer messages.
--
-- One row per session imported from arc-reactor: the id of the newest of
-- arc-reactor's conversation_messages rows (its BIGSERIAL, which orders a
-- session's history) that Strata holds or held. A re-run imports the rows
-- with a greater id only, so a message erased in Strata since
-- (strata forget) is never brought back, and a session deleted in Strata
-- is not created again; epoch is the incarnation of the session imported
-- into (strata_sessions.epoch), so that a session deleted and created anew
-- in Strata under the same id never receives arc-reactor's rows. No
-- foreign key: the row outlives its session on purpose, to remember that
-- deletion.
CREATE TABLE IF NOT EXISTS strata_arc_reactor_imports (
    session_id  TEXT        PRIMARY KEY,
    last_arc_id BIGINT      NOT NULL,
    epoch       BIGINT      NOT NULL,
    imported_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
