package memory_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// After one load has given up waiting for a fold whose summarizer hangs
// (and ignores its context), five further loads of the session each return
// within a second: they do not wait for that same fold again. Each would
// otherwise wait the whole FoldWait, ten minutes here. (In a
// testing/synctest bubble: the waits are on the bubble's clock.)
func TestLoadsDoNotWaitAgainForAFoldGivenUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := waits(hierConfig(), 0, 10*time.Minute)
		f := newFixture(t, cfg)
		g := f.blockWith(t, false)
		seed(t, f.store, "s", "alice", 11) // past the trigger, no summary yet

		// The first load waits until its own deadline, then degrades.
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		first := loadAsync(t, f.mgr, ctx, "s", "alice")
		if first.err != nil || first.h.Mode != "fallback" {
			t.Fatalf("first load: mode %s, %v", first.h.Mode, first.err)
		}
		await(t, g.entered, "the fold")
		for i := range 5 {
			began := time.Now()
			l := loadAsync(t, f.mgr, context.Background(), "s", "alice")
			if l.err != nil || l.h.Mode != "fallback" {
				t.Fatalf("load %d: mode %s, %v", i+2, l.h.Mode, l.err)
			}
			if d := time.Since(began); d > time.Second {
				t.Fatalf("load %d waited %s for the fold a load already gave up on", i+2, d)
			}
		}
		if n := f.svc.calls.Load(); n != 1 {
			t.Fatalf("%d summarizer calls, want the one still hanging", n)
		}
	})
}

// A summarizer call has a deadline (Config.SummarizeTimeout): a summarizer
// that hangs and ignores its context fails the fold at the deadline — the
// fold ends, nothing is saved, the failure is counted — instead of holding
// the session's fold forever. (In a testing/synctest bubble: the deadline
// passes on the bubble's clock.)
func TestSummarizerCallDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if d := memory.DefaultConfig().SummarizeTimeout; d != time.Minute {
			t.Fatalf("default SummarizeTimeout = %s, want the documented 60s", d)
		}
		cfg := hierConfig()
		cfg.SummarizeTimeout = 50 * time.Millisecond
		f := newFixture(t, cfg)
		g := f.blockWith(t, false)
		seed(t, f.store, "s", "alice", 10)
		ctx := context.Background()
		if err := f.mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
			t.Fatal(err)
		}
		await(t, g.entered, "the fold")
		fctx, cancel := context.WithTimeout(ctx, patience)
		defer cancel()
		if err := f.mgr.Flush(fctx); err != nil {
			t.Fatalf("the fold did not end at the summarizer's deadline: %v", err)
		}
		if st := f.mgr.Stats(); st.FoldFailures != 1 || st.Folds != 0 {
			t.Fatalf("stats after a timed-out summarizer: %+v", st)
		}
		if s, _ := f.sums.Get(ctx, "s"); s != nil {
			t.Fatalf("a summary was saved: %+v", s)
		}
		select {
		case <-g.open:
			t.Fatal("the summarizer was released before the fold ended")
		default:
		}
	})
}

// Close abandons a fold stuck in a summarizer that ignores cancellation:
// its error names the summarizer, not a summary save, and a second Close
// returns at once instead of waiting another CloseTimeout. In a
// testing/synctest bubble: the first Close takes exactly its timeout of
// the bubble's clock, and nothing waits for real.
func TestSecondCloseReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := hierConfig()
		cfg.CloseTimeout = 2 * time.Second
		f := newFixture(t, cfg)
		g, returned := newGate(), make(chan struct{})
		hang := g.summarizer(false)
		f.svc.set(func(ctx context.Context, call int64, req summary.Request) (summary.Result, error) {
			defer close(returned)
			return hang(ctx, call, req)
		})
		seed(t, f.store, "s", "alice", 10)
		if err := f.mgr.SaveTurn(context.Background(), "s", "alice", "q", "a"); err != nil {
			t.Fatal(err)
		}
		<-g.entered
		// The first Close drains, then cancels and waits the rest of its
		// CloseTimeout for the hung summarizer.
		start := time.Now()
		err := f.mgr.Close()
		if err == nil || !strings.Contains(err.Error(), "summarizer call still running") || strings.Contains(err.Error(), "save") {
			t.Fatalf("first Close = %v, want an error naming the summarizer call", err)
		}
		if took := time.Since(start); took != cfg.CloseTimeout {
			t.Fatalf("first Close took %v, want its CloseTimeout %v", took, cfg.CloseTimeout)
		}
		// The cancelled fold stopped waiting for the summarizer and ended;
		// only the summarizer's call is left.
		if err := f.mgr.Flush(context.Background()); err != nil {
			t.Fatalf("the cancelled fold did not end: %v", err)
		}
		// The second does not wait again.
		start = time.Now()
		err = f.mgr.Close()
		if err == nil || !strings.Contains(err.Error(), "summarizer call still running") {
			t.Fatalf("second Close, the summarizer still hanging = %v", err)
		}
		if took := time.Since(start); took != 0 {
			t.Fatalf("second Close took %v, want no wait", took)
		}
		// Once the summarizer returns and its call's goroutine has ended
		// (synctest.Wait: every other goroutine of the bubble is blocked
		// or gone), Close has nothing left to report.
		g.release()
		<-returned
		synctest.Wait()
		if err := f.mgr.Close(); err != nil {
			t.Fatalf("Close once the summarizer returned: %v", err)
		}
	})
	goleak.VerifyNone(t)
}
