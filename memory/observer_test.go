package memory_test

import (
	"context"
	"sync"
	"testing"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// refusingSummaries refuses every save with err, as a store does that knows
// the session was deleted (summary.ErrSessionGone) or holds a newer summary
// (summary.ErrStale).
type refusingSummaries struct {
	summary.Store
	err error
}

func (s refusingSummaries) Save(context.Context, summary.Summary) error { return s.err }

// Fold observers hear only of summaries that were stored.
func TestFoldObserverOnlySeesStoredSummaries(t *testing.T) {
	for _, refusal := range []error{summary.ErrSessionGone, summary.ErrStale} {
		t.Run(refusal.Error(), func(t *testing.T) {
			var events eventLog
			store, svc := memory.NewInMemoryStore(), &fakeSummarizer{}
			mgr, err := memory.NewManager(store, hierConfig(),
				memory.WithSummaries(refusingSummaries{summary.NewInMemoryStore(0), refusal}, svc),
				memory.WithLogger(quiet), memory.WithFoldObserver(events.observe))
			if err != nil {
				t.Fatal(err)
			}
			defer mgr.Close()
			ctx := context.Background()
			seed(t, store, "s", "alice", 16)
			h, err := mgr.Load(ctx, "s", "alice")
			if err != nil || h.Mode != "fallback" || h.Summary != nil {
				t.Fatalf("load with a refused save: mode %s, summary %+v, %v", h.Mode, h.Summary, err)
			}
			if err := mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil { // a background fold too
				t.Fatal(err)
			}
			if err := mgr.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if svc.calls.Load() != 2 {
				t.Fatalf("calls = %d: the folds did not run", svc.calls.Load())
			}
			if evs := events.all(); len(evs) != 0 {
				t.Fatalf("observer told of summaries never stored: %+v", evs)
			}
		})
	}
	t.Run("stored", func(t *testing.T) {
		var events eventLog
		f := newFixture(t, hierConfig(), memory.WithFoldObserver(events.observe))
		seed(t, f.store, "s", "alice", 16)
		if _, err := f.mgr.Load(context.Background(), "s", "alice"); err != nil {
			t.Fatal(err)
		}
		if err := f.mgr.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		evs := events.all()
		stored, _ := f.sums.Get(context.Background(), "s")
		if len(evs) != 1 || stored == nil {
			t.Fatalf("events %+v, stored %+v", evs, stored)
		}
		ev := evs[0]
		if ev.SessionID != "s" || ev.UserID != "alice" || ev.Summary.UpToSeq != stored.UpToSeq ||
			ev.Summary.Epoch != stored.Epoch || summaryText(ev.Summary) != summaryText(*stored) {
			t.Fatalf("event %+v does not describe the stored summary %+v", ev, stored)
		}
	})
}

// Observers run in the background: a slow one does not hold up the load
// whose fold it observes, and a panicking one harms nothing.
func TestFoldObserverRunsInBackground(t *testing.T) {
	got := make(chan memory.FoldEvent, 4)
	block := make(chan struct{})
	f := newFixture(t, hierConfig(), memory.WithFoldObserver(func(_ context.Context, ev memory.FoldEvent) {
		<-block
		got <- ev
	}), memory.WithFoldObserver(func(context.Context, memory.FoldEvent) { panic("observer bug") }))
	seed(t, f.store, "s", "alice", 16)
	h, err := f.mgr.Load(context.Background(), "s", "alice") // returns while the observer is blocked
	if err != nil || h.Mode != "hierarchical" {
		t.Fatalf("mode %s, %v", h.Mode, err)
	}
	close(block)
	if ev := await(t, got, "the fold event"); ev.SessionID != "s" || ev.Summary.UpToSeq != h.Summary.UpToSeq {
		t.Fatalf("observer got %+v", ev)
	}
}

// Observers registered on a built manager (Manager.Observe, as a catalogue
// subscribes) hear the folds, erasures and deletes after the call, and
// none before; registering while saves fold is safe (run with -race).
func TestObserveOnBuiltManager(t *testing.T) {
	f := newFixture(t, hierConfig())
	ctx := context.Background()
	saveTurns(t, f.mgr, "before", 1, 12)
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var early, late eventLog
	var deleted sync.Map
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.mgr.Observe(early.observe, nil)
	}()
	saveTurns(t, f.mgr, "during", 1, 12) // folds racing the registration
	<-done
	f.mgr.Observe(late.observe, func(_ context.Context, sessionID string) { deleted.Store(sessionID, true) })
	f.mgr.Observe(nil, nil) // nothing registered
	saveTurns(t, f.mgr, "after", 1, 12)
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.mgr.DeleteSession(ctx, "after", "alice"); err != nil {
		t.Fatal(err)
	}
	sessions := func(l *eventLog) map[string]bool {
		out := map[string]bool{}
		for _, ev := range l.all() {
			out[ev.SessionID] = true
		}
		return out
	}
	if got := sessions(&late); !got["after"] || got["before"] || got["during"] {
		t.Fatalf("late observer heard of %v: want the session folded after it, only", got)
	}
	if got := sessions(&early); !got["after"] || got["before"] {
		t.Fatalf("early observer heard of %v", got)
	}
	if _, ok := deleted.Load("after"); !ok {
		t.Fatal("delete observer registered on the built manager not told")
	}
}
