package memory_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// eventLog collects fold events.
type eventLog struct {
	mu     sync.Mutex
	events []memory.FoldEvent
}

func (l *eventLog) observe(_ context.Context, ev memory.FoldEvent) {
	l.mu.Lock()
	l.events = append(l.events, ev)
	l.mu.Unlock()
}

func (l *eventLog) all() []memory.FoldEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]memory.FoldEvent(nil), l.events...)
}

// summaryText is everything a summary would show.
func summaryText(s summary.Summary) string {
	return strings.Join(contents(summary.Blocks(&s)), "\n")
}

// A session deleted while its fold runs: the fold's late result is not
// saved and not announced, and the session re-created under the same id by
// another user shows nothing of the old one and never has two folds at
// once.
func TestDeleteDuringFold(t *testing.T) {
	var events eventLog
	cfg := waits(hierConfig(), 0, time.Millisecond)
	cfg.SupersedeDelay = time.Nanosecond
	f := newFixture(t, cfg, memory.WithFoldObserver(events.observe))
	alice := newGate()
	t.Cleanup(alice.release)
	f.svc.set(func(ctx context.Context, call int64, req summary.Request) (summary.Result, error) {
		if call == 1 { // alice's fold: ignores cancellation, answers late
			alice.entered <- call
			<-alice.open
		}
		res := countingResult(req)
		res.Facts = append(res.Facts, summary.Fact{Key: "first_message", Value: req.Messages[0].GetContent()})
		return res, nil
	})
	ctx := context.Background()
	seedTurns(t, f.store, "s", "alice", "alice-secret-", 1, 10)
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "alice-secret-q", "alice-secret-a"); err != nil {
		t.Fatal(err)
	}
	await(t, alice.entered, "alice's fold")
	if err := f.mgr.DeleteSession(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}

	// Bob re-creates the session while alice's fold is still blocked. His
	// saves ask for folds; none may run beside alice's.
	for i := 1; i <= 11; i++ {
		if err := f.mgr.SaveTurn(ctx, "s", "bob", "bob-q", "bob-a"); err != nil {
			t.Fatal(err)
		}
	}
	h, err := f.mgr.Load(ctx, "s", "bob")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range h.Messages {
		if strings.Contains(m.GetContent(), "alice") {
			t.Fatalf("bob's view shows alice's session: %q", m.GetContent())
		}
	}
	if f.svc.calls.Load() != 1 {
		t.Fatalf("bob's folds called the summarizer while alice's fold ran (%d calls)", f.svc.calls.Load())
	}

	alice.release()
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if p := f.svc.peak.Load(); p != 1 {
		t.Fatalf("%d summarizer calls ran at once for one session id", p)
	}
	s, err := f.mgr.Summary(ctx, "s", "bob")
	if err != nil || s == nil {
		t.Fatalf("bob's summary = %v, %v", s, err)
	}
	if strings.Contains(summaryText(*s), "alice") {
		t.Fatalf("bob's summary carries alice's session: %q", summaryText(*s))
	}
	stored, _ := f.sums.Get(ctx, "s")
	if stored == nil || stored.Epoch != s.Epoch || strings.Contains(summaryText(*stored), "alice") {
		t.Fatalf("stored summary = %+v", stored)
	}
	evs := events.all()
	if len(evs) == 0 {
		t.Fatal("bob's fold was not announced")
	}
	for _, ev := range evs {
		if ev.UserID != "bob" || strings.Contains(summaryText(ev.Summary), "alice") {
			t.Fatalf("event for the deleted session: %+v", ev)
		}
	}
	h, err = f.mgr.Load(ctx, "s", "bob")
	if err != nil || h.Mode != "hierarchical" {
		t.Fatalf("bob's load: mode %s, %v", h.Mode, err)
	}
	for _, m := range h.Messages {
		if strings.Contains(m.GetContent(), "alice") {
			t.Fatalf("bob's view shows alice's session: %q", m.GetContent())
		}
	}
	// Deleting the old incarnation again as alice is refused: it is bob's now.
	if err := f.mgr.DeleteSession(ctx, "s", "alice"); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("alice deleting bob's session: %v", err)
	}
}

// keptSummaries ignores deletes, as a summary left behind by a crash
// between the message delete and the summary delete would be.
type keptSummaries struct{ summary.Store }

func (keptSummaries) Delete(context.Context, string) error { return nil }

// A summary of a deleted session that is still stored is never shown for
// the session re-created under its id: the epochs differ.
func TestRecreatedSessionNeverShowsPredecessorSummary(t *testing.T) {
	store, sums, svc := memory.NewInMemoryStore(), keptSummaries{summary.NewInMemoryStore(0)}, &fakeSummarizer{}
	mgr, err := memory.NewManager(store, hierConfig(), memory.WithSummaries(sums, svc), memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	ctx := context.Background()
	seedTurns(t, store, "s", "alice", "alice-", 1, 16)
	if h, err := mgr.Load(ctx, "s", "alice"); err != nil || h.Mode != "hierarchical" {
		t.Fatalf("alice: mode %s, %v", h.Mode, err)
	}
	if err := mgr.DeleteSession(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	old, _ := sums.Get(ctx, "s")
	if old == nil {
		t.Fatal("test setup: the old summary should have been left behind")
	}

	seedTurns(t, store, "s", "bob", "bob-", 1, 5)
	if s, err := mgr.Summary(ctx, "s", "bob"); err != nil || s != nil {
		t.Fatalf("bob's new session has a summary: %+v, %v", s, err)
	}
	h, err := mgr.Load(ctx, "s", "bob") // below the trigger: takeLast
	if err != nil || h.Summary != nil || h.Mode != "take-last" {
		t.Fatalf("bob: mode %s, summary %+v, %v", h.Mode, h.Summary, err)
	}
	seedTurns(t, store, "s", "bob", "bob-", 6, 16)
	h, err = mgr.Load(ctx, "s", "bob")
	if err != nil || h.Mode != "hierarchical" || h.Summary == nil || h.Summary.Epoch == old.Epoch {
		t.Fatalf("bob: mode %s, summary %+v, %v", h.Mode, h.Summary, err)
	}
	for _, m := range h.Messages {
		if strings.Contains(m.GetContent(), "alice") {
			t.Fatalf("bob's view shows alice's session: %q", m.GetContent())
		}
	}
	reqs := svc.requests()
	if last := reqs[len(reqs)-1]; last.Existing != nil {
		t.Fatalf("bob's fold was offered alice's summary: %+v", last.Existing)
	}
}

// Delete observers run after a deletion that happened, on the caller's
// goroutine; a panicking one does not fail the deletion.
func TestDeleteObserver(t *testing.T) {
	var mu sync.Mutex
	var deleted []string
	f := newFixture(t, hierConfig(), memory.WithDeleteObserver(func(_ context.Context, id string) {
		mu.Lock()
		deleted = append(deleted, id)
		mu.Unlock()
	}), memory.WithDeleteObserver(func(context.Context, string) { panic("observer bug") }))
	ctx := context.Background()
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
		t.Fatal(err)
	}
	if err := f.mgr.DeleteSession(ctx, "s", "mallory"); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatal(err)
	}
	if err := f.mgr.DeleteSession(ctx, "missing", "alice"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	if err := f.mgr.DeleteSession(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(deleted, ",") != "s" {
		t.Fatalf("observer saw %v, want only the deletion that happened", deleted)
	}
}
