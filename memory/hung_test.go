package memory_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/strata-go/strata/internal/clock"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// After one load has given up waiting for a fold whose summarizer hangs
// (and ignores its context), five further loads of the session each return
// within a second: they do not wait for that same fold again. Each would
// otherwise wait the whole FoldWait, ten minutes here.
func TestLoadsDoNotWaitAgainForAFoldGivenUp(t *testing.T) {
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
}

// A summarizer call has a deadline (Config.SummarizeTimeout): a summarizer
// that hangs and ignores its context fails the fold at the deadline — the
// fold ends, nothing is saved, the failure is counted — instead of holding
// the session's fold forever.
func TestSummarizerCallDeadline(t *testing.T) {
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
}

// Close abandons a fold stuck in a summarizer that ignores cancellation:
// its error names the summarizer, not a summary save, and a second Close
// returns at once instead of waiting another CloseTimeout.
func TestSecondCloseReturnsAtOnce(t *testing.T) {
	cfg := hierConfig()
	cfg.CloseTimeout = 2 * time.Second
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := newFixture(t, cfg, memory.WithClock(clk))
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
	await(t, g.entered, "the fold")
	// The first Close drains (on the system clock), then cancels and waits
	// the rest of its CloseTimeout (on the manager's clock) for the hung
	// summarizer.
	first := make(chan error, 1)
	armed := clk.Armed()
	go func() { first <- f.mgr.Close() }()
	await(t, armed, "Close to arm its timeout")
	// The cancelled fold stops waiting for the summarizer and ends; only
	// the summarizer's call is left when the manager's clock moves on.
	fctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := f.mgr.Flush(fctx); err != nil {
		t.Fatalf("the cancelled fold did not end: %v", err)
	}
	select {
	case err := <-first:
		t.Fatalf("first Close returned before its timeout: %v", err)
	default:
	}
	drive(clk, func() {
		if err := <-first; err == nil || !strings.Contains(err.Error(), "summarizer call still running") || strings.Contains(err.Error(), "save") {
			t.Errorf("first Close = %v, want an error naming the summarizer call", err)
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	// The second does not wait again: it returns on a clock that no longer
	// moves.
	err := within(t, "Close again", f.mgr.Close)
	if err == nil || !strings.Contains(err.Error(), "summarizer call still running") {
		t.Fatalf("second Close, the summarizer still hanging = %v", err)
	}
	g.release()
	await(t, returned, "the summarizer to return")
	// The call's goroutine ends just after the summarizer returns.
	for deadline := time.Now().Add(patience); ; time.Sleep(5 * time.Millisecond) {
		err := f.mgr.Close()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Close once the summarizer returned: %v", err)
		}
	}
	goleak.VerifyNone(t)
}
