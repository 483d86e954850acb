package db_test

import (
	"testing"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/summary"
)

// TestSnapshotReusesUnchangedSummary: a load of a session whose summary
// this store already read neither receives nor decodes it again — shown by
// changing the stored facts behind the store's back without changing the
// summary's identity, which the second load does not see — while every
// real change (a save, a delete and a new save at version 1, a new
// incarnation) is seen by the next load. WithSummaryCache(0) reads the
// stored row every time.
func TestSnapshotReusesUnchangedSummary(t *testing.T) {
	t.Parallel()
	d := dbtest.New(t)
	ctx := testCtx(t)
	ms, sums := db.NewMessageStore(d), db.NewSummaryStore(d)
	uncached := db.NewMessageStore(d, db.WithSummaryCache(0))
	mustAppend(t, ctx, ms, "s", "alice", user("q"), assistant("a"))
	tail, err := ms.Tail(ctx, "s", "alice", 1)
	if err != nil {
		t.Fatal(err)
	}
	save := func(value string) {
		t.Helper()
		err := sums.Save(ctx, summary.Summary{SessionID: "s", Epoch: tail.Epoch, UpToSeq: 1, Narrative: "n-" + value,
			Facts: []summary.Fact{{Key: "k", Value: value, Category: summary.State}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	load := func(s *db.MessageStore) (string, string) {
		t.Helper()
		_, sm, err := s.Snapshot(ctx, "s", "alice", 1)
		if err != nil || sm == nil || len(sm.Facts) != 1 {
			t.Fatalf("Snapshot: %+v, %v", sm, err)
		}
		return sm.Narrative, sm.Facts[0].Value
	}
	save("v1")
	if n, v := load(ms); n != "n-v1" || v != "v1" {
		t.Fatalf("first load: %q %q", n, v)
	}
	// Behind the store's back, keeping epoch, version and updated_at.
	if _, err := d.ExecContext(ctx, `UPDATE strata_summaries SET narrative = 'n-sneaky',
		facts_json = '[{"key":"k","value":"sneaky","category":"STATE"}]' WHERE session_id = 's'`); err != nil {
		t.Fatal(err)
	}
	if n, v := load(ms); n != "n-v1" || v != "v1" {
		t.Errorf("second load = %q %q, want the held summary (not sent again)", n, v)
	}
	if n, v := load(uncached); n != "n-sneaky" || v != "sneaky" {
		t.Errorf("load without the cache = %q %q, want the stored row", n, v)
	}
	// The caller may modify what it got.
	_, sm, err := ms.Snapshot(ctx, "s", "alice", 1)
	if err != nil {
		t.Fatal(err)
	}
	sm.Facts[0].Value = "mutated"
	if _, v := load(ms); v != "v1" {
		t.Errorf("after the caller modified its copy: %q", v)
	}

	save("v2")
	if n, v := load(ms); n != "n-v2" || v != "v2" {
		t.Errorf("after a save: %q %q, want v2", n, v)
	}
	if err := sums.Delete(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	save("v3") // version 1 again, same epoch
	if n, v := load(ms); n != "n-v3" || v != "v3" {
		t.Errorf("after delete and save: %q %q, want v3", n, v)
	}
	if err := ms.Delete(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := ms.Create(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, ctx, ms, "s", "alice", user("q"), assistant("a"))
	if tail, err = ms.Tail(ctx, "s", "alice", 1); err != nil {
		t.Fatal(err)
	}
	save("v4")
	if n, v := load(ms); n != "n-v4" || v != "v4" {
		t.Errorf("new incarnation: %q %q, want v4", n, v)
	}
}
