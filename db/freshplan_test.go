package db_test

import (
	"fmt"
	"testing"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory/store"
)

// TestLoadPlanOnFreshDatabase: on a newly created database that nothing
// has analyzed (autovacuum kept off, checked), a load — Tail, Snapshot,
// SnapshotAfterSummary — of a 5 000-message session reads from
// strata_messages only about the rows it returns: it touches about as many
// pages as for a 2-message session. The statements were first run while the
// table was nearly empty, as a new deployment's first loads are.
func TestLoadPlanOnFreshDatabase(t *testing.T) {
	t.Parallel()
	p := dbtest.NewDatabase(t)
	d := dbtest.Open(t, p.DirectURL)
	ctx := testCtx(t)
	for _, tbl := range []string{"strata_sessions", "strata_messages", "strata_summaries"} {
		if _, err := d.ExecContext(ctx, "ALTER TABLE "+tbl+" SET (autovacuum_enabled = false)"); err != nil {
			t.Fatal(err)
		}
	}
	ms := db.NewMessageStore(d)
	mustAppend(t, ctx, ms, "early", "bench", user("q"), assistant("a"))
	for range 10 { // the first loads, on a nearly empty table
		if _, _, err := ms.Snapshot(ctx, "early", "bench", 20); err != nil {
			t.Fatal(err)
		}
	}
	if err := ms.Create(ctx, "big", "bench"); err != nil {
		t.Fatal(err)
	}
	batch := make([]store.Message, 500)
	for i := range 10 {
		for j := range batch {
			batch[j] = user(fmt.Sprintf("m %d-%d", i, j))
		}
		if _, err := ms.Append(ctx, "big", "bench", batch...); err != nil {
			t.Fatal(err)
		}
	}
	const window = 20
	for name, q := range map[string]string{
		"Tail": db.TailSQL(window), "Snapshot": db.SnapshotSQL(window), "SnapshotAfterSummary": db.SnapshotAfterSQL(window),
	} {
		queryBuffers(t, ctx, d, q, "early") // the function's plans are made
		small, big := queryBuffers(t, ctx, d, q, "early"), queryBuffers(t, ctx, d, q, "big")
		// 5 000 messages fill about 40 pages: reading the session would show.
		if big > small+8 {
			t.Errorf("%s on a fresh database touched %d pages for the 5 000-message session, %d for a 2-message one", name, big, small)
		}
	}
	var analyzed bool
	if err := d.GetContext(ctx, &analyzed, `SELECT last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL
		FROM pg_stat_user_tables WHERE relname = 'strata_messages'`); err != nil || analyzed {
		t.Fatalf("strata_messages analyzed = %v (%v): the test needs a fresh table", analyzed, err)
	}
}
