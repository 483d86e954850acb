package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// Close returns within its timeout even when a summarizer ignores
// cancellation, says so, and the abandoned fold saves nothing when it
// finally ends; then no goroutine is left behind. In a testing/synctest
// bubble: the timeout passes on the bubble's clock.
func TestCloseAbandonsSummarizerIgnoringCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sums := summary.NewInMemoryStore(0)
		entered, release := make(chan struct{}, 1), make(chan struct{})
		returned := make(chan struct{})
		svc := summary.ServiceFunc(func(_ context.Context, req summary.Request) (summary.Result, error) {
			defer close(returned)
			entered <- struct{}{}
			<-release // no select on ctx.Done(): cancellation is ignored
			return countingResult(req), nil
		})
		ms := memory.NewInMemoryStore()
		cfg := hierConfig()
		cfg.CloseTimeout = 20 * time.Millisecond
		mgr, err := memory.NewManager(ms, cfg, memory.WithSummaries(sums, svc), memory.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		seed(t, ms, "s", "alice", 10)
		if err := mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
			t.Fatal(err)
		}
		await(t, entered, "the fold")

		// Close returns while the summarizer is still blocked: it cannot have
		// waited for it.
		err = within(t, "Close to return", mgr.Close)
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "still running") {
			t.Fatalf("Close = %v, want an error saying a fold is still running", err)
		}
		select {
		case <-returned:
			t.Fatal("the summarizer returned before it was released")
		default:
		}

		// The abandoned fold ends; it must not save.
		close(release)
		await(t, returned, "the summarizer to return")
		fctx, cancel := context.WithTimeout(ctx, patience)
		defer cancel()
		if err := mgr.Flush(fctx); err != nil {
			t.Fatalf("abandoned fold did not end: %v", err)
		}
		if s, _ := sums.Get(ctx, "s"); s != nil {
			t.Fatalf("a summary was saved after Close returned: %+v", s)
		}
		// The manager still serves reads and writes, without folding.
		if err := mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
			t.Fatal(err)
		}
		if h, err := mgr.Load(ctx, "s", "alice"); err != nil || h.Mode != "fallback" || h.Summary != nil {
			t.Fatalf("load after Close: mode %s, %v", h.Mode, err)
		}
		// Close again returns at once, with nothing to report once the
		// abandoned call's goroutine, which ends just after the summarizer
		// returns, has ended (synctest.Wait: every other goroutine of the
		// bubble is blocked or gone).
		synctest.Wait()
		start := time.Now()
		if err := mgr.Close(); err != nil {
			t.Fatalf("Close again, with nothing running: %v", err)
		}
		if took := time.Since(start); took != 0 {
			t.Fatalf("Close again took %v, want no wait", took)
		}
	})
	goleak.VerifyNone(t)
}

// A fold observer that ignores cancellation is abandoned by Close too (in
// a testing/synctest bubble, as above).
func TestCloseAbandonsSlowFoldObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		entered, release := make(chan struct{}, 1), make(chan struct{})
		cfg := hierConfig()
		cfg.CloseTimeout = 20 * time.Millisecond
		f := newFixture(t, cfg, memory.WithFoldObserver(func(context.Context, memory.FoldEvent) {
			entered <- struct{}{}
			<-release
		}))
		seed(t, f.store, "s", "alice", 16)
		if _, err := f.mgr.Load(context.Background(), "s", "alice"); err != nil {
			t.Fatal(err)
		}
		await(t, entered, "the fold observer")
		if err := within(t, "Close to return", f.mgr.Close); err == nil {
			t.Fatal("Close reported no error with an observer still running")
		}
		close(release)
		fctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		if err := f.mgr.Flush(fctx); err != nil {
			t.Fatal(err)
		}
	})
	goleak.VerifyNone(t)
}

// Close drains before it cancels: a fold in flight when a short program
// closes its manager finishes and its summary is saved, without a Flush;
// one that outlasts four fifths of CloseTimeout is cancelled then, and
// Close returns. In a synctest bubble, so the 4s pass in no time.
func TestCloseDrainsFoldsInFlight(t *testing.T) {
	for _, slow := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			cfg := hierConfig()
			cfg.CloseTimeout = 5 * time.Second
			f := newFixture(t, cfg)
			g := newGate()
			f.svc.set(g.summarizer(true))
			seed(t, f.store, "s", "alice", 10)
			ctx := context.Background()
			if err := f.mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
				t.Fatal(err)
			}
			<-g.entered
			closed := make(chan error, 1)
			start := time.Now()
			go func() { closed <- f.mgr.Close() }()
			if !slow {
				time.Sleep(3 * time.Second)
				synctest.Wait()
				select {
				case err := <-closed:
					t.Fatalf("Close returned while a fold was in flight: %v", err)
				default:
				}
				g.release()
				if err := <-closed; err != nil {
					t.Fatalf("Close after the fold finished: %v", err)
				}
				if s, _ := f.sums.Get(ctx, "s"); s == nil || s.UpToSeq == 0 {
					t.Fatalf("the fold in flight at Close saved no summary: %+v", s)
				}
				return
			}
			if err := <-closed; err != nil {
				t.Fatalf("Close of a fold that honours cancellation: %v", err)
			}
			if d := time.Since(start); d != 4*time.Second {
				t.Fatalf("Close cancelled the fold after %v, want 4s", d)
			}
			if s, _ := f.sums.Get(ctx, "s"); s != nil {
				t.Fatalf("a cancelled fold saved a summary: %+v", s)
			}
			g.release()
		})
	}
}
