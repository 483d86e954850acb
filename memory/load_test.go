package memory_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// These tests show that no reply waits long for a fold. "Did not wait" is
// proven causally: the summarizer blocks on a gate the test opens only after
// the load returned, so a load that waited for the fold could never return
// (the test would give up after patience and fail).

// staleSession leaves session "s" of alice with 38 messages and a summary
// (made by the fixture's fast summarizer) that covers only the messages
// before the verbatim window of the first 32: stale.
func staleSession(t *testing.T, f *fixture) (cursor int64) {
	t.Helper()
	ctx := context.Background()
	seed(t, f.store, "s", "alice", 16)
	if _, err := f.mgr.Load(ctx, "s", "alice"); err != nil { // starts the fold
		t.Fatal(err)
	}
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := f.mgr.Summary(ctx, "s", "alice")
	if err != nil || s == nil {
		t.Fatalf("no summary after the first fold: %v", err)
	}
	seedTurns(t, f.store, "s", "alice", "", 17, 19)
	return s.UpToSeq
}

// A stale summary and a slow summarizer: the load shows the stale
// summary plus every message after its cursor without waiting for the fold;
// once the fold finishes, loads are hierarchical again.
func TestStaleLoadDoesNotWaitForSlowFold(t *testing.T) {
	f := newFixture(t, waits(hierConfig(), time.Millisecond, 0))
	ctx := context.Background()
	cursor := staleSession(t, f)
	g := f.blockWith(t, true)

	r := loadAsync(t, f.mgr, ctx, "s", "alice") // returns while the summarizer is held
	await(t, g.entered, "the load to start a fold")
	if r.err != nil {
		t.Fatal(r.err)
	}
	h := r.h
	if h.Mode != "stale" || h.Summary == nil || h.Summary.UpToSeq != cursor {
		t.Fatalf("mode %s, summary %+v: want the stale summary (cursor %d)", h.Mode, h.Summary, cursor)
	}
	after := mustMessages(t, f.mgr, "s", "alice", cursor)
	if len(after) != 16 || len(h.Recent) != len(after) {
		t.Fatalf("shown %d verbatim messages, want every one of the %d after the cursor", len(h.Recent), len(after))
	}
	for i := range after {
		if h.Recent[i].Seq != after[i].Seq {
			t.Fatalf("verbatim message %d is seq %d, want %d", i, h.Recent[i].Seq, after[i].Seq)
		}
	}
	wantContents(t, h.Messages, append(contents(summary.Blocks(h.Summary)), storedContents(after)...)...)

	g.release()
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := f.mgr.Load(ctx, "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != "hierarchical" || h.Summary.UpToSeq <= cursor || len(h.Recent) != 10 {
		t.Fatalf("after the fold: mode %s, cursor %d (was %d), %d recent", h.Mode, h.Summary.UpToSeq, cursor, len(h.Recent))
	}
	if c := f.svc.calls.Load(); c != 2 {
		t.Fatalf("summarizer calls = %d, want 2", c)
	}
}

// A fast summarizer finishes within the load grace: the stale load
// shows the fresh summary, as arc-reactor (which folds inline) does.
func TestStaleLoadShowsFreshSummaryFromFastFold(t *testing.T) {
	f := newFixture(t, waits(hierConfig(), time.Minute, 0))
	cursor := staleSession(t, f)
	h, err := f.mgr.Load(context.Background(), "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != "hierarchical" || h.Summary.UpToSeq <= cursor || len(h.Recent) != 10 {
		t.Fatalf("mode %s, cursor %d (stale one %d), %d recent", h.Mode, h.Summary.UpToSeq, cursor, len(h.Recent))
	}
	wantContents(t, h.Messages[2:], seqStrings(15, 19)...)
	if st := f.mgr.Stats(); st.Fallbacks != 0 || st.SummarizerCalls != 2 {
		t.Fatalf("stats = %+v", st)
	}
}

// tightView gives a chunked config a view budget (PromptMemoryBudget) that
// 24 short messages exceed, so a load needs its fold before the view fits.
func tightView(cfg memory.Config) memory.Config {
	cfg.PromptMemoryBudget = 200
	return cfg
}

// No summary yet and a slow summarizer: after Config.FoldWait the load
// degrades — parity to takeLast, chunked (whose tail is over its view's
// token budget) to the whole unfolded tail.
func TestFirstFoldWaitIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   memory.Config
		turns int
		from  int // first turn shown
	}{
		{"parity", hierConfig(), 16, 7},
		{"chunked", tightView(chunkedConfig(4, 4)), 12, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, waits(tc.cfg, 0, time.Millisecond))
			g := f.blockWith(t, true)
			seed(t, f.store, "s", "alice", tc.turns)
			r := loadAsync(t, f.mgr, context.Background(), "s", "alice")
			await(t, g.entered, "the load to start a fold")
			if r.err != nil || r.h.Mode != "fallback" || r.h.Summary != nil {
				t.Fatalf("mode %s, summary %v, err %v", r.h.Mode, r.h.Summary, r.err)
			}
			wantContents(t, r.h.Messages, seqStrings(tc.from, tc.turns)...)
		})
	}
}

// deadlineOnly reports a deadline but is never cancelled.
type deadlineOnly struct {
	context.Context
	deadline time.Time
}

func (c deadlineOnly) Deadline() (time.Time, bool) { return c.deadline, true }

// A caller's deadline shorter than Config.FoldWait: the load returns the
// degraded history, with no error, instead of waiting for the fold.
//
// With a context that has a deadline but is never cancelled, FoldWait of an
// hour and the summarizer blocked, only the load's own bound derived from
// the deadline can end its wait: that it returns at all shows the bound is
// there (rather than a wait for cancellation). With a real deadline, the
// load returns a degraded history and no error even if the deadline passes
// while it waits.
func TestLoadReturnsBeforeCallerDeadline(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   memory.Config
		turns int
		from  int
	}{
		{"parity", hierConfig(), 16, 7},
		{"chunked", tightView(chunkedConfig(4, 4)), 12, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, waits(tc.cfg, 0, time.Hour))
			g := f.blockWith(t, true)
			seed(t, f.store, "s", "alice", tc.turns)

			ctx := deadlineOnly{context.Background(), time.Now().Add(100 * time.Millisecond)}
			r := loadAsync(t, f.mgr, ctx, "s", "alice")
			if r.err != nil || r.h.Mode != "fallback" {
				t.Fatalf("mode %s, err %v: want a degraded history and no error", r.h.Mode, r.err)
			}
			wantContents(t, r.h.Messages, seqStrings(tc.from, tc.turns)...)
			await(t, g.entered, "the fold the load started")

			tctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			r = loadAsync(t, f.mgr, tctx, "s", "alice")
			if r.err != nil || errors.Is(r.err, context.DeadlineExceeded) || r.h.Mode != "fallback" {
				t.Fatalf("mode %s, err %v: want a degraded history and no error", r.h.Mode, r.err)
			}
			wantContents(t, r.h.Messages, seqStrings(tc.from, tc.turns)...)
			if c := f.svc.calls.Load(); c != 1 {
				t.Fatalf("summarizer calls = %d, want 1 (the second load joins the blocked fold)", c)
			}
		})
	}
}

// Loads never queue: many concurrent loads of a session whose fold is
// blocked all return while it is still blocked, and they all join that one
// fold instead of starting their own.
func TestConcurrentLoadsDoNotQueueBehindFold(t *testing.T) {
	for _, stale := range []bool{false, true} {
		name := "no summary"
		if stale {
			name = "stale summary"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, waits(hierConfig(), time.Millisecond, time.Millisecond))
			ctx := context.Background()
			var before int64
			if stale {
				staleSession(t, f)
				before = f.svc.calls.Load()
			} else {
				seed(t, f.store, "s", "alice", 16)
			}
			g := f.blockWith(t, true)
			if err := f.mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil { // starts the fold
				t.Fatal(err)
			}
			await(t, g.entered, "the background fold")

			const n = 16
			var wg sync.WaitGroup
			modes := make(chan string, n)
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					h, err := f.mgr.Load(ctx, "s", "alice")
					if err != nil {
						t.Error(err)
					}
					modes <- string(h.Mode)
				}()
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			await(t, done, "the concurrent loads (they must not wait for the blocked fold)")
			close(modes)
			want := "fallback"
			if stale {
				want = "stale"
			}
			for m := range modes {
				if m != want {
					t.Fatalf("load mode %s, want %s", m, want)
				}
			}
			if c := f.svc.calls.Load() - before; c != 1 {
				t.Fatalf("summarizer called %d times for one session, want 1 (loads join the running fold)", c)
			}
			g.release()
			if err := f.mgr.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			h, err := f.mgr.Load(ctx, "s", "alice")
			if err != nil || h.Mode != "hierarchical" {
				t.Fatalf("after the fold: mode %s, %v", h.Mode, err)
			}
			if c := f.svc.calls.Load() - before; c != 1 {
				t.Fatalf("summarizer calls = %d, want 1", c)
			}
		})
	}
}

// Once this manager's folds are known to take longer than the load grace, a
// stale load does not wait for the regeneration at all (waiting could not
// get it the fresh summary, only delay the reply): here the grace is an
// hour and the first fold takes ten hours of a testing/synctest bubble's
// clock, so a load that waited would never come back in time.
func TestStaleLoadSkipsAFoldKnownToBeSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := hierConfig()
		cfg.LoadGrace = time.Hour
		cfg.SupersedeDelay = time.Nanosecond
		cfg.SummarizeTimeout = 24 * time.Hour // the bubble's clock also times the summarizer call
		f := newFixture(t, cfg)
		second, release := make(chan struct{}), make(chan struct{})
		f.svc.set(func(ctx context.Context, call int64, req summary.Request) (summary.Result, error) {
			if call == 1 {
				time.Sleep(10 * time.Hour) // the first fold takes 10 hours
				return countingResult(req), nil
			}
			close(second)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return countingResult(req), nil
		})
		ctx := context.Background()
		seed(t, f.store, "s", "alice", 10)
		if err := f.mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
			t.Fatal(err)
		}
		if err := f.mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		// Two more turns make the summary stale; their fold blocks.
		for range 2 {
			if err := f.mgr.SaveTurn(ctx, "s", "alice", "later", "a"); err != nil {
				t.Fatal(err)
			}
		}
		await(t, second, "the second fold")
		r := loadAsync(t, f.mgr, ctx, "s", "alice")
		h, err := r.h, r.err
		if err != nil {
			t.Fatal(err)
		}
		if h.Mode != "stale" || h.Summary == nil {
			t.Fatalf("mode %s, summary %v; want the stale summary", h.Mode, h.Summary)
		}
		close(release)
	})
}

// A chunked tail over K+B that still fits the view's token budget does not
// make a load wait at all, even for the first summary: the load starts the
// fold in the background and shows every unfolded message at once.
func TestChunkedOverflowWithinBudgetNeverWaits(t *testing.T) {
	f := newFixture(t, waits(chunkedConfig(4, 4), time.Hour, time.Hour))
	g := f.blockWith(t, true)
	seed(t, f.store, "s", "alice", 12)
	h, err := f.mgr.Load(context.Background(), "s", "alice") // a wait would block the test for an hour
	if err != nil || h.Mode != "all" {
		t.Fatalf("mode %s, err %v", h.Mode, err)
	}
	wantContents(t, h.Messages, seqStrings(1, 12)...)
	await(t, g.entered, "the background fold the load started")
	if st := f.mgr.Stats(); st.Fallbacks != 0 {
		t.Fatalf("fallbacks = %d, want 0: a complete view is not a degradation", st.Fallbacks)
	}
}
