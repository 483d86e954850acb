package db_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// TestSnapshotMatchesTailAndGet: Snapshot returns exactly what Tail and
// SummaryStore.Get return, for sessions with and without a summary, and
// the errors of Tail for missing, deleted and foreign sessions.
func TestSnapshotMatchesTailAndGet(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	if !f.messages.ReadsSummariesOf(f.sums) {
		t.Fatal("ReadsSummariesOf(its own pool's summary store) = false")
	}
	if f.messages.ReadsSummariesOf(summary.NewInMemoryStore(0)) {
		t.Fatal("ReadsSummariesOf(an in-memory summary store) = true")
	}
	for i := range 40 {
		mustAppend(t, ctx, f.messages, "s", "alice", user(fmt.Sprint("q", i)), assistant(fmt.Sprint("a", i)))
	}
	mustAppend(t, ctx, f.messages, "empty-ish", "alice")

	check := func(session string, n int) {
		t.Helper()
		tail, err := f.messages.Tail(ctx, session, "alice", n)
		if err != nil {
			t.Fatal(err)
		}
		want, err := f.sums.Get(ctx, session)
		if err != nil {
			t.Fatal(err)
		}
		gotTail, got, err := f.messages.Snapshot(ctx, session, "alice", n)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gotTail, tail) {
			t.Errorf("%s, n=%d: Snapshot tail = %+v\nTail = %+v", session, n, gotTail, tail)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s, n=%d: Snapshot summary = %+v\nGet = %+v", session, n, got, want)
		}
	}
	check("s", 10)
	check("s", 0)
	check("empty-ish", 5)

	tail, _ := f.messages.Tail(ctx, "s", "alice", 30)
	sm := summary.Summary{SessionID: "s", Epoch: tail.Epoch, UpToSeq: tail.Messages[0].Seq, Narrative: "n",
		Facts: []summary.Fact{{Key: "k", Value: "v", Category: summary.Entity}}}
	if err := f.sums.Save(ctx, sm); err != nil {
		t.Fatal(err)
	}
	check("s", 38)
	check("s", 200)

	for _, c := range []struct {
		session, user string
		want          error
	}{
		{"none", "alice", store.ErrNotFound},
		{"s", "bob", memory.ErrNotOwner},
		{"bad\x00id", "alice", store.ErrNotFound},
	} {
		if tl, s, err := f.messages.Snapshot(ctx, c.session, c.user, 10); !errors.Is(err, c.want) || s != nil || tl.Messages != nil {
			t.Errorf("Snapshot(%q, %q) = %+v, %+v, %v; want nothing and %v", c.session, c.user, tl, s, err, c.want)
		}
	}
	if err := f.messages.Delete(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.messages.Snapshot(ctx, "s", "alice", 10); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Snapshot of a deleted session: %v, want ErrNotFound", err)
	}
}

// TestAppendNeverCreates: only Create makes a session. Append to a
// missing or deleted session returns ErrNotFound and leaves no row; an
// append of nothing to one's own session changes nothing and reports its
// count and epoch.
func TestAppendNeverCreates(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	for _, msgs := range [][]store.Message{nil, {user("hi")}} {
		if _, err := f.messages.Append(ctx, "missing", "alice", msgs...); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Append of %d to a missing session: %v, want ErrNotFound", len(msgs), err)
		}
	}
	if _, _, _, exists := sessionRow(t, ctx, f.d, "missing"); exists {
		t.Fatal("Append created a session")
	}
	first := mustAppend(t, ctx, f.messages, "s", "alice", user("q"), assistant("a"))
	var before string
	if err := f.d.GetContext(ctx, &before, `SELECT last_activity::text FROM strata_sessions WHERE session_id = 's'`); err != nil {
		t.Fatal(err)
	}
	if r, err := f.messages.Append(ctx, "s", "alice"); err != nil || r != (store.AppendResult{Total: 2, Epoch: first.Epoch}) {
		t.Errorf("empty append = %+v, %v; want Total 2 in epoch %d", r, err, first.Epoch)
	}
	var after string
	if err := f.d.GetContext(ctx, &after, `SELECT last_activity::text FROM strata_sessions WHERE session_id = 's'`); err != nil || after != before {
		t.Errorf("an empty append moved last_activity from %s to %s (%v)", before, after, err)
	}
	if err := f.messages.Delete(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.messages.Append(ctx, "s", "alice", user("again")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Append to a deleted session: %v, want ErrNotFound", err)
	}
	if _, _, deleted, _ := sessionRow(t, ctx, f.d, "s"); !deleted {
		t.Error("Append revived a deleted session")
	}
	if n := countRows(t, ctx, f.d, "strata_messages", "s"); n != 0 {
		t.Errorf("%d messages in a deleted session", n)
	}
}

// TestLoadReadsTheManagersSummaryStore: the manager takes the summary from
// Snapshot only when its summary store is the one Snapshot reads. With
// another summary store (here an in-memory one) it reads that store, even
// when the database holds a summary for the session too.
func TestLoadReadsTheManagersSummaryStore(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	for i := range 15 {
		mustAppend(t, ctx, f.messages, "s", "alice", user(fmt.Sprint("q", i)), assistant(fmt.Sprint("a", i)))
	}
	tail, err := f.messages.Tail(ctx, "s", "alice", 11)
	if err != nil {
		t.Fatal(err)
	}
	mem := summary.NewInMemoryStore(0)
	for _, c := range []struct {
		store     summary.Store
		narrative string
	}{{f.sums, "from the database"}, {mem, "from memory"}} {
		sm := summary.Summary{SessionID: "s", Epoch: tail.Epoch, UpToSeq: tail.Messages[0].Seq, Narrative: c.narrative}
		if err := c.store.Save(ctx, sm); err != nil {
			t.Fatal(err)
		}
	}
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	for _, c := range []struct {
		store summary.Store
		want  string
	}{{f.sums, "from the database"}, {mem, "from memory"}} {
		m, err := memory.NewManager(f.messages, cfg, memory.WithSummaries(c.store, summary.NewExtractiveService()))
		if err != nil {
			t.Fatal(err)
		}
		h, err := m.Load(ctx, "s", "alice")
		_ = m.Close()
		if err != nil {
			t.Fatal(err)
		}
		if h.Mode != memory.ModeHierarchical || h.Summary == nil || h.Summary.Narrative != c.want {
			t.Errorf("summary store %T: mode %s, summary %+v; want the narrative %q", c.store, h.Mode, h.Summary, c.want)
		}
	}
}
