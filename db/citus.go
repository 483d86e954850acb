package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// citusTables are Strata's tables keyed by session id, in the order
// Distribute distributes them: strata_sessions first, the others
// colocated with it, so that every statement about one session, however
// many of these tables it reads or writes, runs on one shard. A table a
// later migration adds that holds rows of a session belongs in this list
// (a table of the list that does not exist yet is skipped, so the list may
// run ahead of a database's version). strata_schema_migrations stays a
// local table of the coordinator: migrations run there only.
var citusTables = []string{
	"strata_sessions",
	"strata_messages",
	"strata_summaries",
	"strata_session_index",
	"strata_fold_leases",
	"strata_arc_reactor_imports",
	"strata_journals",
	"strata_journal_records",
}

// citusFunctions are Strata's functions, each called with a session id
// as its first argument, which Distribute distributes on that argument:
// Citus then runs a call on the worker holding the session's shard,
// where its statements are local.
//
// Distribute gives each of them plan_cache_mode =
// force_custom_plan: on Citus each of their statements is planned with the
// call's values, every call. A generic plan is no cheaper there: Citus
// keeps, beside a reused plan of a statement on a distributed table, the
// plan of the statement on the local shard, and Citus 13.2 misses that
// cache on every execution (it looks it up in the plan's empty task list),
// so it deparses, parses and plans the shard's statement again and adds
// one more plan to the cached plan's memory, about 140 kB per call of
// strata_append or strata_load, never freed while the worker's connection
// lives. With custom plans nothing is cached, so nothing grows, and a call
// costs less. strata_append also needs them for its owner lookup after a
// refused append, a join, which Citus prunes to one shard from its
// parameters' values, which a generic plan lacks ("could not create
// distributed plan"). On plain PostgreSQL the functions keep the
// migrations' settings.
var citusFunctions = []string{"strata_append", "strata_snapshot", "strata_load", "strata_tail", "strata_save_summary", "strata_journal_append", "strata_save_journaled"}

// citusHelpers are functions that Strata's functions call in their
// statements, which Distribute creates on every node (distributed without
// a distribution argument), so that a call delegated to a worker finds
// them.
var citusHelpers = []string{"strata_merge_participants", "strata_journal_sum"}

// ErrNoCitus is the error (wrapped) of Distribute on a database without
// the citus extension.
var ErrNoCitus = errors.New("the citus extension is not installed in this database (CREATE EXTENSION citus, on the coordinator)")

// Distribute makes a migrated schema a distributed one on Citus: every
// table of citusTables present in the current schema becomes a distributed
// table by session_id (strata_sessions first, the others colocated with
// it), and Strata's functions become distributed functions on their
// session argument, colocated with strata_sessions, with search_path fixed
// to the current schema (a call delegated to a worker does not carry the
// caller's search_path) and custom plans (see citusFunctions). It is idempotent: what is already
// distributed is left as it is, and it ends by setting the functions'
// settings again, which a migration that replaces a function resets
// (Migrate runs it again on a distributed schema for that reason). Run it
// over a direct connection to the coordinator, with the schema migrated:
// `strata migrate up`, then `strata migrate distribute`.
func Distribute(ctx context.Context, d *sqlx.DB) error {
	var citus bool
	if err := d.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')`).Scan(&citus); err != nil {
		return fmt.Errorf("db: distribute: %w", classify(ctx, err))
	}
	if !citus {
		return fmt.Errorf("db: distribute: %w", ErrNoCitus)
	}
	if err := CheckSchema(ctx, d); err != nil {
		return fmt.Errorf("db: distribute: %w", err)
	}
	if err := distribute(ctx, d); err != nil {
		return fmt.Errorf("db: %w", err)
	}
	return nil
}

// querier is what distribute needs of a pool or a connection.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// distribute is Distribute on a migrated schema of a database with Citus.
func distribute(ctx context.Context, d querier) error {
	colocate := "none" // Strata's tables make a colocation group of their own
	for _, table := range citusTables {
		var exists, done bool
		err := d.QueryRowContext(ctx, `
SELECT to_regclass(format('%I.%I', current_schema(), $1::text)) IS NOT NULL,
       EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = to_regclass(format('%I.%I', current_schema(), $1::text)))`,
			table).Scan(&exists, &done)
		if err != nil {
			return fmt.Errorf("distribute %s: %w", table, classify(ctx, err))
		}
		if !exists {
			continue
		}
		if !done {
			if _, err := d.ExecContext(ctx, `SELECT create_distributed_table(format('%I.%I', current_schema(), $1::text), 'session_id', colocate_with => $2)`,
				table, colocate); err != nil {
				return fmt.Errorf("distribute %s: %w", table, classify(ctx, err))
			}
		}
		if colocate == "none" {
			var parent string
			if err := d.QueryRowContext(ctx, `SELECT format('%I.%I', current_schema(), $1::text)`, table).Scan(&parent); err != nil {
				return fmt.Errorf("distribute %s: %w", table, classify(ctx, err))
			}
			colocate = parent
		}
	}
	if err := distributeHelpers(ctx, d); err != nil {
		return err
	}
	rows, err := d.QueryContext(ctx, `
SELECT p.proname, p.oid::regprocedure::text, format('%I.%I', n.nspname, 'strata_sessions'), n.nspname,
       EXISTS (SELECT 1 FROM pg_dist_object o WHERE o.classid = 'pg_proc'::regclass AND o.objid = p.oid
                  AND o.distribution_argument_index IS NOT NULL),
       COALESCE(p.proconfig @> ARRAY['search_path=' || quote_ident(n.nspname)], false),
       COALESCE(p.proconfig @> ARRAY['plan_cache_mode=force_custom_plan'], false)
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = current_schema() AND p.proname = ANY($1)
 ORDER BY p.proname`, pq.Array(citusFunctions))
	if err != nil {
		return fmt.Errorf("distribute functions: %w", classify(ctx, err))
	}
	type fn struct {
		name, sig, parent, schema string
		done, hasPath, hasCustom  bool
	}
	var fns []fn
	for rows.Next() {
		var f fn
		if err := rows.Scan(&f.name, &f.sig, &f.parent, &f.schema, &f.done, &f.hasPath, &f.hasCustom); err != nil {
			_ = rows.Close()
			return fmt.Errorf("distribute functions: %w", classify(ctx, err))
		}
		fns = append(fns, f)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("distribute functions: %w", classify(ctx, err))
	}
	for _, f := range fns {
		// Settings first, when they are not yet as wanted: ALTER FUNCTION
		// of a distributed function reaches the workers too.
		var stmts []string
		if !f.hasPath {
			stmts = append(stmts, fmt.Sprintf(`ALTER FUNCTION %s SET search_path = %s`, f.sig, pq.QuoteIdentifier(f.schema)))
		}
		if !f.hasCustom {
			stmts = append(stmts, fmt.Sprintf(`ALTER FUNCTION %s SET plan_cache_mode = force_custom_plan`, f.sig))
		}
		for _, stmt := range stmts {
			if _, err := d.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("distribute %s: %w", f.sig, classify(ctx, err))
			}
		}
		if f.done {
			continue
		}
		if _, err := d.ExecContext(ctx, `SELECT create_distributed_function($1, '$1', colocate_with => $2)`, f.sig, f.parent); err != nil {
			return fmt.Errorf("distribute %s: %w", f.sig, classify(ctx, err))
		}
	}
	return nil
}

// distributeHelpers creates the functions of citusHelpers present in the
// current schema on every node, unless Citus does already.
func distributeHelpers(ctx context.Context, d querier) error {
	rows, err := d.QueryContext(ctx, `
SELECT p.oid::regprocedure::text
  FROM pg_proc p
 WHERE p.pronamespace = current_schema()::regnamespace AND p.proname = ANY($1)
   AND NOT EXISTS (SELECT 1 FROM pg_dist_object o WHERE o.classid = 'pg_proc'::regclass AND o.objid = p.oid)`,
		pq.Array(citusHelpers))
	if err != nil {
		return fmt.Errorf("distribute functions: %w", classify(ctx, err))
	}
	var sigs []string
	for rows.Next() {
		var sig string
		if err := rows.Scan(&sig); err != nil {
			_ = rows.Close()
			return fmt.Errorf("distribute functions: %w", classify(ctx, err))
		}
		sigs = append(sigs, sig)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("distribute functions: %w", classify(ctx, err))
	}
	for _, sig := range sigs {
		if _, err := d.ExecContext(ctx, `SELECT create_distributed_function($1)`, sig); err != nil {
			return fmt.Errorf("distribute %s: %w", sig, classify(ctx, err))
		}
	}
	return nil
}

// redistribute runs Distribute when the current schema's strata_sessions
// is a distributed table, and does nothing otherwise (no Citus, or a
// schema not distributed).
func redistribute(ctx context.Context, d querier) error {
	var catalog bool
	if err := d.QueryRowContext(ctx, `SELECT to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL`).Scan(&catalog); err != nil {
		return fmt.Errorf("distribute: %w", classify(ctx, err))
	}
	if !catalog {
		return nil
	}
	var distributed bool
	if err := d.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_dist_partition
	   WHERE logicalrelid = to_regclass(format('%I.strata_sessions', current_schema())))`).Scan(&distributed); err != nil {
		return fmt.Errorf("distribute: %w", classify(ctx, err))
	}
	if !distributed {
		return nil
	}
	return distribute(ctx, d)
}
