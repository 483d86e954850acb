package db_test

import (
	"database/sql"
	"errors"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/catalog/catalogtest"
	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/memorytest"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// citusSchema is a fresh distributed schema on the Citus coordinator of
// CITUS_URL (dbtest.NewCitusSchema); without it the test is skipped.
func citusSchema(t testing.TB) dbtest.Schema {
	t.Helper()
	return dbtest.NewCitusSchema(t)
}

// citusPool is a pool on a fresh distributed schema (citusSchema).
func citusPool(t testing.TB) *sqlx.DB {
	t.Helper()
	return dbtest.Open(t, citusSchema(t).URL)
}

// TestCitusMessageStoreConformance runs the memory.MessageStore conformance
// suite against a store on a distributed schema, through two replicas
// (separate pools) taking every other call.
func TestCitusMessageStoreConformance(t *testing.T) {
	s := citusSchema(t)
	r := &replicas{stores: [2]store.Store{
		db.NewMessageStore(dbtest.Open(t, s.URL)),
		db.NewMessageStore(dbtest.Open(t, s.URL)),
	}}
	memorytest.Run(t, func(t *testing.T) store.Store { return r })
}

// TestCitusSummaryCapabilitiesConformance runs the summary capabilities'
// suite (fold leases, saves under a lease, snapshots, reads after the
// summary) on a distributed schema.
func TestCitusSummaryCapabilitiesConformance(t *testing.T) {
	d := citusPool(t)
	memorytest.RunSummaries(t, func(*testing.T) store.Store { return db.NewMessageStore(d) })
}

// TestCitusJournalConformance runs the journal's suite (appends as data
// and as edits, retention, totals, scrubs, the journal going with its
// session) on a distributed schema.
func TestCitusJournalConformance(t *testing.T) {
	d := citusPool(t)
	memorytest.RunJournal(t, func(*testing.T) memory.MessageStore { return db.NewMessageStore(d) })
}

// TestCitusSingleShard checks, on the plans Citus makes for them, that
// every statement of a load, an append and a fold about one session runs
// on one shard: EXPLAIN shows one task, and for strata_append and
// strata_snapshot the task is the function call itself, delegated to the
// worker that holds the session (its statements then run there, locally).
func TestCitusSingleShard(t *testing.T) {
	d := citusPool(t)
	ctx := testCtx(t)
	ms := db.NewMessageStore(d)
	if err := ms.Create(ctx, "plan-s", "plan-u"); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, ctx, ms, "plan-s", "plan-u", user("hello"))
	for _, st := range db.CitusStatements("plan-s", "plan-u") {
		var lines []string
		if err := d.SelectContext(ctx, &lines, "EXPLAIN (COSTS OFF) "+st.SQL, st.Args...); err != nil {
			t.Fatalf("%s: EXPLAIN: %v", st.Name, err)
		}
		plan := strings.Join(lines, "\n")
		// One distributed step with one task: no subplan gathered on the
		// coordinator first, no INSERT … SELECT pulled to it.
		if strings.Count(plan, "Task Count:") != 1 || !strings.Contains(plan, "Task Count: 1\n") ||
			strings.Contains(plan, "Distributed Subplan") || strings.Contains(plan, "pull to coordinator") {
			t.Errorf("%s: not a single-shard plan:\n%s", st.Name, plan)
			continue
		}
		for _, fn := range []string{"strata_append", "strata_snapshot", "strata_load", "strata_tail", "strata_save_summary", "strata_journal_append", "strata_save_journaled"} {
			if strings.Contains(st.SQL, fn+"(") && !strings.Contains(plan, "Function Scan on "+fn) {
				t.Errorf("%s: the call of %s is not delegated to the worker holding the session:\n%s", st.Name, fn, plan)
			}
		}
		t.Logf("%s: one task\n%s", st.Name, plan)
	}
}

// TestCitusFoldLeases runs the fold lease tests (one holder across
// replicas and under contention, expiry and take-over, the save that
// releases the lease, the save refused after a take-over) on a
// distributed schema.
func TestCitusFoldLeases(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, dbtest.Schema)
	}{
		{"ExclusiveAcrossReplicas", testFoldLeaseExclusiveAcrossReplicas},
		{"Expires", testFoldLeaseExpires},
		{"SingleHolderUnderContention", testFoldLeaseSingleHolderUnderContention},
		{"SaveReleases", testFoldLeaseSaveReleases},
		{"SaveRefusedAfterTakeOver", testFoldLeaseSaveRefusedAfterTakeOver},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, citusSchema(t)) })
	}
}

// TestCitusManagersFoldOnce runs the two-replica fold test on a
// distributed schema: two Managers on separate pools save and load turns
// of the same sessions; the summarizer never runs twice at once for a
// session nor folds covered messages, no cursor goes down, and every pair
// is whole.
func TestCitusManagersFoldOnce(t *testing.T) {
	for _, policy := range []memory.Policy{memory.PolicyParity, memory.PolicyChunked} {
		t.Run(string(policy), func(t *testing.T) { testManagersFoldOnce(t, policy, 2, citusSchema(t).URL) })
	}
}

// TestCitusCapabilitiesConformance runs the conformance suites of the
// optional capabilities (import, erasure, participants) and the erasure
// scenarios with the catalogue on a distributed schema.
func TestCitusCapabilitiesConformance(t *testing.T) {
	d := citusPool(t)
	s := db.NewMessageStore(d)
	memorytest.RunCapabilities(t, func(*testing.T) store.Store { return s })
	catalogtest.RunErasure(t, func(*testing.T) catalogtest.Env {
		return catalogtest.Env{Store: s, Summaries: db.NewSummaryStore(d), Index: db.NewCatalogIndex(d)}
	})
}

// TestCitusMigrateKeepsDistribution: Distribute is idempotent, and
// migrating a distributed schema down and up again (migration 15 drops and
// re-creates strata_save_summary and replaces strata_snapshot) leaves every
// function distributed with its search_path, and the stores working.
func TestCitusMigrateKeepsDistribution(t *testing.T) {
	d := citusPool(t)
	ctx := testCtx(t)
	if err := db.Distribute(ctx, d); err != nil {
		t.Fatalf("second Distribute: %v", err)
	}
	if err := db.MigrateTo(ctx, d, 14); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
	var fns []string
	if err := d.SelectContext(ctx, &fns, `
SELECT p.proname FROM pg_proc p JOIN pg_dist_object o ON o.classid = 'pg_proc'::regclass AND o.objid = p.oid
 WHERE p.pronamespace = current_schema()::regnamespace AND o.distribution_argument_index = 0
   AND EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%')
 ORDER BY 1`); err != nil {
		t.Fatal(err)
	}
	if want := []string{"strata_append", "strata_journal_append", "strata_load", "strata_save_journaled", "strata_save_summary", "strata_snapshot", "strata_tail"}; !slices.Equal(fns, want) {
		t.Fatalf("distributed functions with a search_path after down and up: %v, want %v", fns, want)
	}
	// Migrations re-create functions with force_generic_plan (18
	// strata_append, 19 strata_save_journaled); Distribute, run again by
	// Migrate, gives every distributed function custom plans again, on the
	// coordinator and on every worker.
	var modes []string
	if err := d.SelectContext(ctx, &modes, `
WITH f AS (SELECT format('%I.%I(%s)', current_schema(), p.proname,
                  (SELECT string_agg(format_type(a, NULL), ',') FROM unnest(p.proargtypes) a)) AS sig FROM pg_proc p
            WHERE p.pronamespace = current_schema()::regnamespace
              AND p.proname IN ('strata_append', 'strata_snapshot', 'strata_load', 'strata_tail', 'strata_save_summary',
                                'strata_journal_append', 'strata_save_journaled'))
SELECT c FROM f, pg_proc p, unnest(p.proconfig) c WHERE p.oid = f.sig::regprocedure AND c LIKE 'plan\_cache\_mode=%'
UNION ALL
SELECT r.result FROM f, run_command_on_workers(format($$SELECT c FROM pg_proc p, unnest(p.proconfig) c
  WHERE p.oid = %L::regprocedure AND c LIKE 'plan\_cache\_mode=%%'$$, f.sig)) r`); err != nil {
		t.Fatal(err)
	}
	if len(modes) < 3*7 || slices.ContainsFunc(modes, func(m string) bool { return m != "plan_cache_mode=force_custom_plan" }) {
		t.Fatalf("the functions' plan_cache_mode on the coordinator and the workers after down and up: %q, want force_custom_plan for each on each", modes)
	}
	ms, sums := db.NewMessageStore(d), db.NewSummaryStore(d)
	res := mustAppend(t, ctx, ms, "again", "alice", user("q"), assistant("a"))
	if err := sums.Save(ctx, summary.Summary{SessionID: "again", Epoch: res.Epoch, UpToSeq: res.LastSeq, Narrative: "n"}); err != nil {
		t.Fatal(err)
	}
	tail, sm, err := ms.Snapshot(ctx, "again", "alice", 5)
	if err != nil || len(tail.Messages) != 2 || sm == nil || sm.UpToSeq != res.LastSeq {
		t.Fatalf("Snapshot after down and up = %+v, %+v, %v", tail, sm, err)
	}
}

// TestDistributeWithoutCitus: on plain PostgreSQL, Distribute refuses
// with ErrNoCitus and changes nothing; Migrate does not try it.
func TestDistributeWithoutCitus(t *testing.T) {
	t.Parallel()
	d := dbtest.New(t)
	ctx := testCtx(t)
	if err := db.Distribute(ctx, d); !errors.Is(err, db.ErrNoCitus) {
		t.Fatalf("Distribute without Citus: %v, want ErrNoCitus", err)
	}
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
}

// TestCitusAppendLeavesNoPlanBehind: strata_append's and strata_tail's
// statements on the worker holding the session cache nothing that grows
// with the calls.
// With generic plans Citus 13.2 adds a plan of each statement on the local
// shard to the function's cached plans on every call (about 140 kB per
// append, kept as long as the connection lives), which custom plans
// (citusCustomPlans) avoid. The appends run over one connection to that
// worker, where Citus plans and runs them as in a call delegated to it;
// the memory of the connection's cached plans after 150 appends must be
// that after 10.
func TestCitusAppendLeavesNoPlanBehind(t *testing.T) {
	s := citusSchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := testCtx(t)
	const session, owner = "no-plan-behind", "alice"
	mustAppend(t, ctx, db.NewMessageStore(d), session, owner, user("hello"))
	var host string
	var port int
	if err := d.QueryRowContext(ctx, `
SELECT nodename, nodeport FROM pg_dist_shard_placement
 WHERE shardid = get_shard_id_for_distribution_column(format('%I.strata_sessions', current_schema()), $1::text)`,
		session).Scan(&host, &port); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	w, err := db.Open(ctx, u.String())
	if err != nil {
		t.Skipf("the worker %s does not take the coordinator's credentials: %v", u.Host, err)
	}
	defer w.Close()
	conn, err := w.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var appendSt, loadSt db.CitusStatement
	for _, st := range db.CitusStatements(session, owner) {
		switch st.Name {
		case "append":
			appendSt = st
		case "load, tail held":
			loadSt = st
		}
	}
	plans := func(appends int) int64 {
		t.Helper()
		for range appends {
			var total int64
			var epoch, last, erasures sql.NullInt64
			var gotOwner sql.NullString
			var at sql.NullTime
			if err := conn.QueryRowContext(ctx, appendSt.SQL, appendSt.Args...).Scan(&total, &epoch, &last, &gotOwner, &erasures, &at); err != nil {
				t.Fatalf("append on the worker: %v", err)
			}
			if !last.Valid || gotOwner.Valid {
				t.Fatalf("append on the worker refused: last seq %v, owner %v", last, gotOwner)
			}
			rows, err := conn.QueryContext(ctx, loadSt.SQL, loadSt.Args...)
			if err != nil {
				t.Fatalf("load on the worker: %v", err)
			}
			n := 0
			for rows.Next() {
				n++
			}
			if err := errors.Join(rows.Err(), rows.Close()); err != nil || n == 0 {
				t.Fatalf("load on the worker: %d rows, %v", n, err)
			}
		}
		var bytes int64
		if err := conn.QueryRowContext(ctx,
			`SELECT COALESCE(sum(total_bytes), 0) FROM pg_backend_memory_contexts WHERE name = 'CachedPlan'`).Scan(&bytes); err != nil {
			t.Fatal(err)
		}
		return bytes
	}
	before := plans(10)
	after := plans(140)
	t.Logf("cached plans on the worker's connection: %d bytes after 10 appends and loads, %d after 150", before, after)
	if after > before+64<<10 {
		t.Fatalf("cached plans on the worker's connection grew from %d to %d bytes over 140 appends and loads", before, after)
	}
}
