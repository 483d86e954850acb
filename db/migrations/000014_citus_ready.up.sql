-- Strata schema, version 14: a schema Citus can distribute by session id
-- (db.Distribute). See db/doc.go for the meaning of every column.
--
-- Citus refuses to distribute a table with triggers. The catalogue's
-- liveness trigger (version 3) goes: every statement that writes a
-- catalogue document (CatalogIndex.Upsert, SetTitle) checks in itself that
-- the session is its user's live session, under a KEY SHARE lock on the
-- session row, so a write racing a delete waits for it and then writes
-- nothing.
DROP TRIGGER IF EXISTS strata_session_index_live ON strata_session_index;
DROP FUNCTION IF EXISTS strata_session_index_live_check();

-- Citus refuses to distribute strata_sessions with triggers too: the
-- journal's triggers (version 13) go, and the statements that end an
-- incarnation (Delete's tombstone, Replace's new epoch) delete the
-- session's journal themselves, in their transaction. A revived tombstone
-- has no journal left (its Delete removed it).
DROP TRIGGER IF EXISTS strata_sessions_journal_gone ON strata_sessions;
DROP TRIGGER IF EXISTS strata_sessions_journal_deleted ON strata_sessions;
DROP FUNCTION IF EXISTS strata_journal_gone();

-- strata_append, as in version 11, in statements Citus runs on one shard,
-- and runs on the worker holding the session when the function is
-- distributed (db.Distribute): no volatile function inside a statement
-- (Citus refuses them in an UPDATE of a distributed table), so the times
-- are read into variables; the session row is updated first (which takes
-- its lock, checks its owner and raises its seq counter), then each
-- message is inserted by its own single-row INSERT (an INSERT … SELECT
-- from the batch would be gathered by Citus before being sent to the
-- shard). created_at is read after the lock, so it never goes back within
-- a session; last_activity never goes back either.
CREATE OR REPLACE FUNCTION strata_append(
    p_session TEXT, p_user TEXT, p_roles TEXT[], p_contents TEXT[], p_tool_calls TEXT[],
    p_tool_call_ids TEXT[], p_names TEXT[], p_metadata TEXT[], p_authors TEXT[], p_first_user TEXT, p_count BIGINT,
    p_new TEXT[], p_max INT)
RETURNS TABLE (total BIGINT, epoch BIGINT, last_seq BIGINT, owner TEXT)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
AS $fn$
#variable_conflict use_column
DECLARE
    v_start   TIMESTAMPTZ := clock_timestamp();
    v_at      TIMESTAMPTZ;
    v_total   BIGINT;
    v_epoch   BIGINT;
    v_counter BIGINT;
    i         INT;
BEGIN
    UPDATE strata_sessions
       SET message_count      = message_count + p_count,
           first_user_message = COALESCE(first_user_message, p_first_user),
           last_activity      = GREATEST(last_activity, v_start),
           participants       = CASE
               WHEN p_new <@ participants OR cardinality(participants) >= p_max THEN participants
               ELSE (participants || ARRAY(SELECT n.a FROM unnest(p_new) WITH ORDINALITY AS n(a, o)
                                            WHERE n.a <> ALL (participants) ORDER BY n.o))[1:p_max]
           END,
           seq_counter        = seq_counter + p_count
     WHERE session_id = p_session AND user_id = p_user AND deleted_at IS NULL
    RETURNING message_count, epoch, seq_counter INTO v_total, v_epoch, v_counter;
    IF NOT FOUND THEN
        RETURN QUERY
        SELECT NULL::bigint, NULL::bigint, NULL::bigint, s.user_id
          FROM (SELECT 1) one
          LEFT JOIN strata_sessions s ON s.session_id = p_session AND s.deleted_at IS NULL;
        RETURN;
    END IF;
    v_at := clock_timestamp();
    FOR i IN 1 .. p_count LOOP
        INSERT INTO strata_messages
               (seq, session_id, role, content, tool_calls, tool_call_id, name, metadata, user_id, created_at)
        VALUES (v_counter - p_count + i, p_session, p_roles[i], p_contents[i], NULLIF(p_tool_calls[i], '')::jsonb,
                p_tool_call_ids[i], p_names[i], NULLIF(p_metadata[i], '')::jsonb,
                COALESCE(NULLIF(p_authors[i], ''), p_user), v_at);
    END LOOP;
    RETURN QUERY SELECT v_total, v_epoch, CASE WHEN p_count > 0 THEN v_counter END, NULL::text;
END
$fn$;
