-- Undo 000014_citus_ready.up.sql: the catalogue's liveness trigger of
-- version 3 and the journal's triggers of version 13 again (on a
-- distributed schema, Citus refuses them).
CREATE OR REPLACE FUNCTION strata_journal_gone() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    DELETE FROM strata_journals WHERE session_id = OLD.session_id;
    RETURN NULL;
END
$fn$;

DROP TRIGGER IF EXISTS strata_sessions_journal_gone ON strata_sessions;
CREATE TRIGGER strata_sessions_journal_gone
    AFTER UPDATE OF epoch, deleted_at ON strata_sessions
    FOR EACH ROW
    WHEN (NEW.deleted_at IS NOT NULL OR NEW.epoch IS DISTINCT FROM OLD.epoch)
    EXECUTE FUNCTION strata_journal_gone();

DROP TRIGGER IF EXISTS strata_sessions_journal_deleted ON strata_sessions;
CREATE TRIGGER strata_sessions_journal_deleted
    AFTER DELETE ON strata_sessions
    FOR EACH ROW
    EXECUTE FUNCTION strata_journal_gone();

CREATE FUNCTION strata_session_index_live_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    live integer;
BEGIN
    EXECUTE format('SELECT 1 FROM %I.strata_sessions
                     WHERE session_id = $1 AND deleted_at IS NULL
                       FOR KEY SHARE', TG_TABLE_SCHEMA)
       USING NEW.session_id;
    GET DIAGNOSTICS live = ROW_COUNT;
    IF live = 0 THEN
        RAISE EXCEPTION 'session % does not exist or is deleted', NEW.session_id
              USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER strata_session_index_live
    BEFORE INSERT OR UPDATE OF session_id ON strata_session_index
    FOR EACH ROW EXECUTE FUNCTION strata_session_index_live_check();

-- strata_append as in version 11.
CREATE OR REPLACE FUNCTION strata_append(
    p_session TEXT, p_user TEXT, p_roles TEXT[], p_contents TEXT[], p_tool_calls TEXT[],
    p_tool_call_ids TEXT[], p_names TEXT[], p_metadata TEXT[], p_authors TEXT[], p_first_user TEXT, p_count BIGINT,
    p_new TEXT[], p_max INT)
RETURNS TABLE (total BIGINT, epoch BIGINT, last_seq BIGINT, owner TEXT)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
AS $fn$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH s AS (
        UPDATE strata_sessions
           SET message_count      = message_count + p_count,
               first_user_message = COALESCE(first_user_message, p_first_user),
               last_activity      = clock_timestamp(),
               participants       = CASE
                   WHEN p_new <@ participants OR cardinality(participants) >= p_max THEN participants
                   ELSE (participants || ARRAY(SELECT n.a FROM unnest(p_new) WITH ORDINALITY AS n(a, o)
                                                WHERE n.a <> ALL (participants) ORDER BY n.o))[1:p_max]
               END,
               seq_counter        = seq_counter + p_count
         WHERE session_id = p_session AND user_id = p_user AND deleted_at IS NULL
        RETURNING message_count, epoch, seq_counter
    ), ins AS (
        INSERT INTO strata_messages
               (seq, session_id, role, content, tool_calls, tool_call_id, name, metadata, user_id, created_at)
        SELECT s.seq_counter - p_count + b.ord, p_session, b.role, b.content, NULLIF(b.tool_calls, '')::jsonb, b.tool_call_id,
               b.name, NULLIF(b.metadata, '')::jsonb, COALESCE(NULLIF(b.author, ''), p_user), clock_timestamp()
          FROM s, unnest(p_roles, p_contents, p_tool_calls, p_tool_call_ids, p_names, p_metadata, p_authors)
               WITH ORDINALITY AS b(role, content, tool_calls, tool_call_id, name, metadata, author, ord)
         ORDER BY b.ord
        RETURNING seq
    )
    SELECT (SELECT message_count FROM s) AS total, (SELECT epoch FROM s) AS epoch,
           (SELECT max(seq) FROM ins) AS last_seq,
           CASE WHEN NOT EXISTS (SELECT 1 FROM s)
                THEN (SELECT user_id FROM strata_sessions WHERE session_id = p_session AND deleted_at IS NULL)
           END AS owner;
END
$fn$;
