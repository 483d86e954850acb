-- Undo 000020_helpers_plpgsql.up.sql: the two helpers as SQL functions,
-- as in versions 16 and 15.
CREATE OR REPLACE FUNCTION strata_journal_sum(p_a JSONB, p_b JSONB)
RETURNS JSONB
LANGUAGE sql IMMUTABLE
AS $fn$
SELECT COALESCE(jsonb_object_agg(k, COALESCE((p_a->>k)::bigint, 0) + COALESCE((p_b->>k)::bigint, 0)), '{}'::jsonb)
  FROM (SELECT jsonb_object_keys(COALESCE(p_a, '{}'::jsonb)) UNION SELECT jsonb_object_keys(COALESCE(p_b, '{}'::jsonb))) AS t(k)
$fn$;

CREATE OR REPLACE FUNCTION strata_merge_participants(p_current TEXT[], p_new TEXT[], p_max INT)
RETURNS TEXT[]
LANGUAGE sql IMMUTABLE
AS $fn$
SELECT CASE
    WHEN p_new <@ p_current OR cardinality(p_current) >= p_max THEN p_current
    ELSE (p_current || ARRAY(SELECT n.a FROM unnest(p_new) WITH ORDINALITY AS n(a, o)
                              WHERE n.a <> ALL (p_current) ORDER BY n.o))[1:p_max]
END
$fn$;
