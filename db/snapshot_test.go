package db_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/strata-go/strata/db"
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
	if !f.messages.KeepsSummaries(f.sums) {
		t.Fatal("KeepsSummaries(its own pool's summary store) = false")
	}
	if f.messages.KeepsSummaries(summary.NewInMemoryStore(0)) {
		t.Fatal("KeepsSummaries(an in-memory summary store) = true")
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

	checkSnapshotRefusals(t, ctx, f, "Snapshot", f.messages.Snapshot)
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
		if h.Mode != "hierarchical" || h.Summary == nil || h.Summary.Narrative != c.want {
			t.Errorf("summary store %T: mode %s, summary %+v; want the narrative %q", c.store, h.Mode, h.Summary, c.want)
		}
	}
}

// TestSnapshotAfterSummary: SnapshotAfterSummary returns Snapshot's
// result except for its messages, which are only those after the
// summary's cursor when the summary belongs to the session's epoch (the
// newest n of them), and the newest n of all otherwise; its errors are
// Snapshot's.
func TestSnapshotAfterSummary(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	for i := range 40 {
		mustAppend(t, ctx, f.messages, "s", "alice", user(fmt.Sprint("q", i)), assistant(fmt.Sprint("a", i)))
	}
	same := func(n int) {
		t.Helper()
		wantTail, wantSum, err := f.messages.Snapshot(ctx, "s", "alice", n)
		if err != nil {
			t.Fatal(err)
		}
		tail, sum, err := f.messages.SnapshotAfterSummary(ctx, "s", "alice", n)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(tail, wantTail) || !reflect.DeepEqual(sum, wantSum) {
			t.Errorf("n=%d: SnapshotAfterSummary = %+v, %+v\nSnapshot = %+v, %+v", n, tail, sum, wantTail, wantSum)
		}
	}
	same(38) // no summary: the newest messages
	same(0)

	all := allMessages(t, ctx, f.messages, "s", "alice")
	cursor := all[69].Seq // 10 messages after it
	if err := f.sums.Save(ctx, summary.Summary{SessionID: "s", Epoch: mustAppend(t, ctx, f.messages, "s", "alice").Epoch,
		UpToSeq: cursor, Narrative: "n", Facts: []summary.Fact{{Key: "k", Value: "v", Category: summary.Entity}}}); err != nil {
		t.Fatal(err)
	}
	want, err := f.sums.Get(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ n, want int }{{38, 10}, {10, 10}, {4, 4}, {0, 0}} {
		tail, sum, err := f.messages.SnapshotAfterSummary(ctx, "s", "alice", c.n)
		if err != nil {
			t.Fatal(err)
		}
		if tail.Total != 80 || !reflect.DeepEqual(sum, want) {
			t.Errorf("n=%d: total %d, summary %+v; want 80 and %+v", c.n, tail.Total, sum, want)
		}
		if wantMsgs := all[80-c.want:]; len(tail.Messages) != c.want || (c.want > 0 && !reflect.DeepEqual(tail.Messages, wantMsgs)) {
			t.Errorf("n=%d: %d messages %+v, want the newest %d after the cursor", c.n, len(tail.Messages), tail.Messages, c.want)
		}
	}

	// A summary of another epoch (a deleted predecessor's) has no cursor
	// for this incarnation: all messages count. (Written as every writer
	// of a summary does: raising the session's summary_writes.)
	if _, err := f.d.ExecContext(ctx, `UPDATE strata_summaries SET epoch = epoch + 1000 WHERE session_id = 's';
UPDATE strata_sessions SET summary_writes = summary_writes + 1 WHERE session_id = 's'`); err != nil {
		t.Fatal(err)
	}
	same(38)

	checkSnapshotRefusals(t, ctx, f, "SnapshotAfterSummary", f.messages.SnapshotAfterSummary)
}

// readCounter is the message store of a manager that records which reads
// a load makes and how many messages they return.
type readCounter struct {
	*db.MessageStore
	mu                      sync.Mutex
	after, snapshots, other int
	afterRows               []int
}

func (c *readCounter) SnapshotAfterSummary(ctx context.Context, sessionID, userID string, n int) (store.Tail, *summary.Summary, error) {
	t, s, err := c.MessageStore.SnapshotAfterSummary(ctx, sessionID, userID, n)
	c.mu.Lock()
	c.after++
	c.afterRows = append(c.afterRows, len(t.Messages))
	c.mu.Unlock()
	return t, s, err
}

func (c *readCounter) Snapshot(ctx context.Context, sessionID, userID string, n int) (store.Tail, *summary.Summary, error) {
	c.mu.Lock()
	c.snapshots++
	c.mu.Unlock()
	return c.MessageStore.Snapshot(ctx, sessionID, userID, n)
}

func (c *readCounter) Tail(ctx context.Context, sessionID, userID string, n int) (store.Tail, error) {
	c.mu.Lock()
	c.other++
	c.mu.Unlock()
	return c.MessageStore.Tail(ctx, sessionID, userID, n)
}

func (c *readCounter) Range(ctx context.Context, sessionID, userID string, afterSeq, throughSeq int64, limit int) ([]store.Message, error) {
	c.mu.Lock()
	c.other++
	c.mu.Unlock()
	return c.MessageStore.Range(ctx, sessionID, userID, afterSeq, throughSeq, limit)
}

func (c *readCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.after, c.snapshots, c.other, c.afterRows = 0, 0, 0, nil
}

// TestLoadReadsOnlyAfterTheCursor: a chunked load over the
// PostgreSQL stores reads, in one statement, the summary and only the
// messages its cursor does not cover, and shows exactly those; a parity
// load reads the newest messages as before.
func TestLoadReadsOnlyAfterTheCursor(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	cfg := hierarchicalConfig(memory.PolicyChunked)
	cfg.BufferMessageCount = 8 // K = 4: folds down to 4 when more than 12 are unfolded
	cfg.SafetyTurns, cfg.FoldTokenFraction = 0, 0
	store := &readCounter{MessageStore: f.messages}
	m, err := memory.NewManager(store, cfg, memory.WithSummaries(f.sums, summary.NewExtractiveService()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	for i := range 30 {
		if err := m.SaveTurn(ctx, "s", "alice", fmt.Sprintf("I moved to city %d last week.", i), fmt.Sprint("Noted ", i)); err != nil {
			t.Fatal(err)
		}
		if err := m.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := f.sums.Get(ctx, "s")
	if err != nil || sum == nil {
		t.Fatalf("no summary after 60 messages: %v", err)
	}
	unfolded, err := f.messages.Range(ctx, "s", "alice", sum.UpToSeq, 1<<62, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(unfolded) == 0 || len(unfolded) >= 20 { // a load reads at most K+B+8 = 20 at once
		t.Fatalf("%d messages after the cursor; the test wants fewer than a load's limit", len(unfolded))
	}
	store.reset()
	h, err := m.Load(ctx, "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if store.after != 1 || store.snapshots != 0 || store.other != 0 {
		t.Fatalf("a load made %d cursor reads, %d snapshots and %d other reads; want one cursor read", store.after, store.snapshots, store.other)
	}
	if store.afterRows[0] != len(unfolded) {
		t.Errorf("the load read %d messages, want the %d after the cursor", store.afterRows[0], len(unfolded))
	}
	if h.Mode != "hierarchical" || h.Summary == nil || h.Summary.UpToSeq != sum.UpToSeq || len(h.Recent) != len(unfolded) {
		t.Fatalf("mode %s, summary %+v, %d recent; want the summary through %d and the %d messages after it", h.Mode, h.Summary, len(h.Recent), sum.UpToSeq, len(unfolded))
	}
	for i := range unfolded {
		if h.Recent[i].Seq != unfolded[i].Seq || h.Recent[i].Content != unfolded[i].Content {
			t.Fatalf("recent[%d] = %d %q, want %d %q", i, h.Recent[i].Seq, h.Recent[i].Content, unfolded[i].Seq, unfolded[i].Content)
		}
	}

	// More unfolded messages than the read's limit: the load reads them all
	// (and asks for a fold, in the background, whose reads may add up).
	for i := range 30 {
		mustAppend(t, ctx, f.messages, "s", "alice", user(fmt.Sprint("q", i)), assistant(fmt.Sprint("a", i)))
	}
	m2, err := memory.NewManager(store, cfg, memory.WithSummaries(f.sums, summary.NewExtractiveService()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m2.Close() }()
	store.reset()
	h, err = m2.Load(ctx, "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	first, other := store.afterRows[0], store.other
	store.mu.Unlock()
	if first != 20 || other < 1 || len(h.Recent) != len(unfolded)+60 || h.Recent[0].Seq != unfolded[0].Seq {
		t.Fatalf("first read %d messages, %d other reads, %d recent from seq %d; want 20, then every one of the %d unfolded messages",
			first, other, len(h.Recent), h.Recent[0].Seq, len(unfolded)+60)
	}

	// Parity shows a window of the newest messages; once folded, that
	// window is what follows the summary's cursor: it reads only those too.
	pm, err := memory.NewManager(store, hierarchicalConfig(memory.PolicyParity), memory.WithSummaries(f.sums, summary.NewExtractiveService()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pm.Close() }()
	if err := m2.Flush(ctx); err != nil { // the chunked fold that the load above asked for
		t.Fatal(err)
	}
	if _, err := pm.Load(ctx, "s", "alice"); err != nil { // parity folds to its own window
		t.Fatal(err)
	}
	if err := pm.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	store.reset()
	h, err = pm.Load(ctx, "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	after, snaps := store.after, store.snapshots
	store.mu.Unlock()
	if after != 1 || snaps != 0 {
		t.Fatalf("a parity load made %d cursor reads and %d snapshots; want one cursor read", after, snaps)
	}
	tail, err := f.messages.Tail(ctx, "s", "alice", hierarchicalConfig(memory.PolicyParity).RecentMessageCount+1)
	if err != nil {
		t.Fatal(err)
	}
	newest := tail.Messages[1:]
	if h.Mode != "hierarchical" || h.Summary == nil || h.Summary.UpToSeq != tail.Messages[0].Seq || len(h.Recent) != len(newest) {
		t.Fatalf("parity: mode %s, summary %+v, %d recent; want the summary through %d and the %d newest messages",
			h.Mode, h.Summary, len(h.Recent), tail.Messages[0].Seq, len(newest))
	}
	for i := range newest {
		if h.Recent[i].Seq != newest[i].Seq {
			t.Fatalf("parity recent[%d] = seq %d, want %d", i, h.Recent[i].Seq, newest[i].Seq)
		}
	}
}

// checkSnapshotRefusals checks that snap (a snapshot read of f's store,
// named name) of session "s", owned by alice, returns nothing and the
// store's error for a missing session, another user and an invalid id, and
// ErrNotFound once "s" is deleted.
func checkSnapshotRefusals(t *testing.T, ctx context.Context, f *fixture, name string,
	snap func(ctx context.Context, sessionID, userID string, n int) (store.Tail, *summary.Summary, error)) {
	t.Helper()
	for _, c := range []struct {
		session, user string
		want          error
	}{
		{"none", "alice", store.ErrNotFound},
		{"s", "bob", memory.ErrNotOwner},
		{"bad\x00id", "alice", store.ErrNotFound},
	} {
		if tl, s, err := snap(ctx, c.session, c.user, 10); !errors.Is(err, c.want) || s != nil || tl.Messages != nil {
			t.Errorf("%s(%q, %q) = %+v, %+v, %v; want nothing and %v", name, c.session, c.user, tl, s, err, c.want)
		}
	}
	if err := f.messages.Delete(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := snap(ctx, "s", "alice", 10); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("%s of a deleted session: %v, want ErrNotFound", name, err)
	}
}
