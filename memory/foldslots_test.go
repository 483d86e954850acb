package memory_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// slotsFixture is a manager with MaxConcurrentFolds = n whose summarizer
// holds the calls of sessions named "held-…" until the returned gate
// opens, and answers every other call at once.
func slotsFixture(t *testing.T, cfg memory.Config, n int) (*fixture, *gate) {
	t.Helper()
	cfg.MaxConcurrentFolds = n
	f := &fixture{store: &rangeCounter{MessageStore: memory.NewInMemoryStore()}, sums: summary.NewInMemoryStore(0), svc: &fakeSummarizer{}}
	mgr, err := memory.NewManager(f.store, cfg, memory.WithSummaries(f.sums, f.svc), memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	f.mgr = mgr
	t.Cleanup(func() { _ = mgr.Close() })
	g := newGate()
	held := g.summarizer(true)
	f.svc.set(func(ctx context.Context, call int64, req summary.Request) (summary.Result, error) {
		if strings.HasPrefix(req.SessionID, "held-") {
			return held(ctx, call, req)
		}
		return countingResult(req), nil
	})
	t.Cleanup(g.release)
	return f, g
}

// rangeCounter counts the store's Range reads per session.
type rangeCounter struct {
	memory.MessageStore
	mu     sync.Mutex
	ranges map[string]int
}

func (c *rangeCounter) Range(ctx context.Context, sessionID, userID string, after, through int64, limit int) ([]store.Message, error) {
	c.mu.Lock()
	if c.ranges == nil {
		c.ranges = map[string]int{}
	}
	c.ranges[sessionID]++
	c.mu.Unlock()
	return c.MessageStore.Range(ctx, sessionID, userID, after, through, limit)
}

func (c *rangeCounter) rangesOf(sessionID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ranges[sessionID]
}

// saveNoFlush saves the turns "u<i>"/"a<i>" for i in [from, to] through
// the manager, without waiting for the folds they start.
func saveNoFlush(t *testing.T, m *memory.Manager, session string, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		if err := m.SaveTurn(context.Background(), session, "alice", fmt.Sprintf("u%d", i), fmt.Sprintf("a%d", i)); err != nil {
			t.Fatal(err)
		}
	}
}

// settle lets a synctest bubble's folds go as far as they can: past
// Config.SupersedeDelay (a run that saves asked for another pass waits it
// first) on the bubble's clock, until every goroutine is blocked.
func settle() {
	time.Sleep(time.Second)
	synctest.Wait()
}

// foldedWhileHeld fails the test unless session's fold has run exactly
// once while the held session's fold still holds the only slot (when is
// what made it run).
func foldedWhileHeld(t *testing.T, f *fixture, session, when string) {
	t.Helper()
	if n := callsFor(f, session); n != 1 {
		t.Fatalf("%s folded %d times %s, want 1 while the held fold holds the slot", session, n, when)
	}
	if r := f.svc.running.Load(); r != 1 {
		t.Fatalf("%d summarizer calls running %s, want the held one", r, when)
	}
}

// callsFor counts the summarizer calls made for session.
func callsFor(f *fixture, session string) int {
	n := 0
	for _, r := range f.svc.requests() {
		if r.SessionID == session {
			n++
		}
	}
	return n
}

// At most MaxConcurrentFolds background folds run at once, whatever the
// number of sessions due (random bound and sessions, both policies); the
// ones queued run when slots free, and every session ends up folded
// without a Flush.
func TestMaxConcurrentFoldsBound(t *testing.T) {
	for round := range 6 {
		rng := rand.New(rand.NewPCG(uint64(round), 7))
		n := 1 + rng.IntN(3)
		sessions := n + 1 + rng.IntN(6)
		cfg := hierConfig()
		if round%2 == 1 {
			cfg.Policy = memory.PolicyChunked
			cfg.SafetyTurns = 0
		}
		t.Run(fmt.Sprintf("%s/slots=%d/sessions=%d", cfg.Policy, n, sessions), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, g := slotsFixture(t, cfg, n)
				for s := range sessions {
					saveNoFlush(t, f.mgr, fmt.Sprintf("held-%d", s), 1, 16) // past both policies' triggers
				}
				settle()
				if got := f.svc.running.Load(); got != int64(n) {
					t.Fatalf("%d folds running with %d sessions due, want MaxConcurrentFolds = %d", got, sessions, n)
				}
				g.release()
				settle() // every fold done, through the slots
				if p := f.svc.peak.Load(); p != int64(n) {
					t.Fatalf("peak of %d folds at once, want %d", p, n)
				}
				for s := range sessions {
					sum, err := f.sums.Get(context.Background(), fmt.Sprintf("held-%d", s))
					if err != nil || sum == nil || sum.UpToSeq == 0 {
						t.Fatalf("session %d not folded: %v, %v; stats %+v", s, sum, err, f.mgr.Stats())
					}
				}
			})
		})
	}
}

// A fold that waited for a slot covers the messages its session saved
// while it waited, in one summarizer call (chunked: down to the verbatim
// window), instead of folding once per trigger — and its plan reads them
// with the session's tail, in one store call.
func TestQueuedFoldCoversSavesMadeMeanwhile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := hierConfig()
		cfg.Policy = memory.PolicyChunked
		f, g := slotsFixture(t, cfg, 1)
		// b's first saves past the window make its backlog known (a
		// plan that finds nothing due) while the slot is free.
		saveNoFlush(t, f.mgr, "b", 1, 7)
		settle()
		saveNoFlush(t, f.mgr, "held-a", 1, 16) // takes the one slot and holds it
		settle()
		saveNoFlush(t, f.mgr, "b", 8, 16) // due at turn 15 (safety): queued
		settle()
		if n := callsFor(f, "b"); n != 0 {
			t.Fatalf("b folded %d times while the only slot was held", n)
		}
		// 24 more messages: more than the trigger fired for, fewer than
		// the queue's bound (three times window plus buffer, 90).
		saveNoFlush(t, f.mgr, "b", 17, 28)
		settle()
		if n := callsFor(f, "b"); n != 0 {
			t.Fatalf("b folded %d times before a slot was free", n)
		}
		g.release()
		if err := f.mgr.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := callsFor(f, "b"); n != 1 {
			t.Fatalf("b folded in %d summarizer calls, want 1 covering everything saved", n)
		}
		if n := f.store.(*rangeCounter).rangesOf("b"); n != 0 {
			t.Fatalf("b's fold read its messages again in %d Range calls", n)
		}
		sum, err := f.sums.Get(context.Background(), "b")
		if err != nil || sum == nil {
			t.Fatal(sum, err)
		}
		if want := int64(56 - cfg.RecentMessageCount); sum.UpToSeq != want {
			t.Fatalf("b's summary reaches %d, want %d (all but the verbatim window)", sum.UpToSeq, want)
		}
	})
}

// A fold queued for a slot starts at once when its session's backlog grows
// past the queue's bound (three times the session's usual tail: the
// verbatim window plus buffer, or parity's trigger when larger), so the
// tail of a session nobody loads stays within a few times its usual size
// however long the queue. Both sides of the bound: chunked at the
// defaults (window plus buffer), parity with a trigger above it.
func TestQueuedFoldStartsWhenItsBacklogGrows(t *testing.T) {
	for _, policy := range []memory.Policy{memory.PolicyChunked, memory.PolicyParity} {
		t.Run(string(policy), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := hierConfig()
				cfg.Policy = policy
				usual := cfg.RecentMessageCount + cfg.BufferMessageCount
				due := 15 // chunked: SafetyTurns
				if policy == memory.PolicyParity {
					cfg.TriggerMessageCount = 2*usual + 4
					usual = cfg.TriggerMessageCount
					due = usual/2 + 1
				}
				f, g := slotsFixture(t, cfg, 1)
				saveNoFlush(t, f.mgr, "b", 1, 7) // b's backlog known while the slot is free
				settle()
				saveNoFlush(t, f.mgr, "held-a", 1, due+1)
				settle()
				saveNoFlush(t, f.mgr, "b", 8, due) // due: queued
				settle()
				if n := callsFor(f, "b"); n != 0 {
					t.Fatalf("b folded %d times while the held fold holds the slot, want it queued", n)
				}
				bound := 3 * usual
				turns := bound / 2 // up to the bound: still queued
				saveNoFlush(t, f.mgr, "b", due+1, due+turns)
				settle()
				if n := callsFor(f, "b"); n != 0 {
					t.Fatalf("b folded with %d messages saved while queued (bound %d)", 2*turns, bound)
				}
				saveNoFlush(t, f.mgr, "b", due+turns+1, due+turns+1) // past it
				settle()
				foldedWhileHeld(t, f, "b", "after its backlog passed the bound")
				g.release()
			})
		})
	}
}

// A load that needs a fold never queues behind other sessions' folds: it
// starts its own at once, and a load joining a fold that queued for a slot
// lets that fold start (parity: the first summary of a session past the
// trigger).
func TestLoadDoesNotQueueForAFoldSlot(t *testing.T) {
	for _, joined := range []bool{false, true} {
		t.Run(fmt.Sprintf("joins-queued=%v", joined), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, g := slotsFixture(t, waits(hierConfig(), 0, time.Hour), 1)
				saveNoFlush(t, f.mgr, "held-a", 1, 11)
				settle()
				if joined {
					saveNoFlush(t, f.mgr, "b", 1, 11) // due: queued behind held-a
				} else {
					seed(t, f.store, "b", "alice", 11) // past the trigger, no fold asked
				}
				settle()
				if n := callsFor(f, "b"); n != 0 {
					t.Fatalf("b folded %d times before its load", n)
				}
				began := time.Now()
				h, err := f.mgr.Load(context.Background(), "b", "alice")
				if err != nil {
					t.Fatal(err)
				}
				if h.Mode != memory.ModeHierarchical || time.Since(began) > time.Second {
					t.Fatalf("load of b: mode %s after %s, want its summary at once while held-a holds the slot", h.Mode, time.Since(began))
				}
				foldedWhileHeld(t, f, "b", "after its load")
				g.release()
			})
		})
	}
}

// A chunked load that finds its session's fold due (the tail past K+B)
// shows the whole tail at once and lets that fold start although the slot
// is held: only folds of sessions nobody loads queue.
func TestChunkedLoadStartsItsDueFold(t *testing.T) {
	for _, queued := range []bool{false, true} {
		t.Run(fmt.Sprintf("queued=%v", queued), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := hierConfig()
				cfg.Policy = memory.PolicyChunked
				f, g := slotsFixture(t, cfg, 1)
				if queued {
					saveNoFlush(t, f.mgr, "b", 1, 7) // b's backlog known while the slot is free
					settle()
				}
				saveNoFlush(t, f.mgr, "held-a", 1, 16) // holds the one slot
				settle()
				if queued {
					saveNoFlush(t, f.mgr, "b", 8, 16) // due: queued
				} else {
					seed(t, f.store, "b", "alice", 16) // due, no fold asked
				}
				settle()
				if n := callsFor(f, "b"); n != 0 {
					t.Fatalf("b folded %d times before its load", n)
				}
				h, err := f.mgr.Load(context.Background(), "b", "alice")
				if err != nil {
					t.Fatal(err)
				}
				if len(h.Messages) < 32 {
					t.Fatalf("the load showed %d messages, want the whole unfolded tail of 32", len(h.Messages))
				}
				settle()
				foldedWhileHeld(t, f, "b", "after a load found its fold due")
				g.release()
			})
		})
	}
}

// Flush does not wait for folds queued behind a slot: they start at once,
// and so does a fold that becomes due while Flush waits.
func TestFlushStartsQueuedFolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, g := slotsFixture(t, hierConfig(), 1)
		saveNoFlush(t, f.mgr, "held-a", 1, 11) // holds the one slot
		settle()
		saveNoFlush(t, f.mgr, "b", 1, 11) // queued
		settle()
		if n := callsFor(f, "b"); n != 0 {
			t.Fatalf("b folded %d times while the only slot was held", n)
		}
		flushed := make(chan error, 1)
		go func() { flushed <- f.mgr.Flush(context.Background()) }()
		settle()
		foldedWhileHeld(t, f, "b", "once Flush waited")
		saveNoFlush(t, f.mgr, "c", 1, 11) // due while Flush waits
		settle()
		if n := callsFor(f, "c"); n != 1 {
			t.Fatalf("c folded %d times while Flush waited, want 1", n)
		}
		g.release()
		if err := <-flushed; err != nil {
			t.Fatal(err)
		}
		// Flush returned: the bound holds again.
		g2 := newGate()
		defer g2.release()
		f.svc.set(g2.summarizer(true))
		saveNoFlush(t, f.mgr, "d", 1, 11)
		settle()
		saveNoFlush(t, f.mgr, "e", 1, 11)
		settle()
		if d, e := callsFor(f, "d"), callsFor(f, "e"); d != 1 || e != 0 {
			t.Fatalf("after Flush returned: d folded %d times, e %d, want 1 and 0 (queued)", d, e)
		}
	})
}

// Close with folds queued for a slot lets them start in its drain (a short
// program's last folds are saved), returns within its deadline and leaves
// no goroutine behind (TestMain checks for leaks); no summarizer call
// starts after it returns.
func TestCloseWithQueuedFolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := hierConfig()
		cfg.CloseTimeout = time.Second
		f, _ := slotsFixture(t, cfg, 1)
		for s := range 5 {
			saveNoFlush(t, f.mgr, fmt.Sprintf("held-%d", s), 1, 11)
		}
		settle()
		began := time.Now()
		if err := f.mgr.Close(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Logf("close: %v", err)
		}
		if d := time.Since(began); d > 2*cfg.CloseTimeout {
			t.Fatalf("Close took %s with folds queued (CloseTimeout %s)", d, cfg.CloseTimeout)
		}
		calls := f.svc.calls.Load()
		settle()
		if got := f.svc.calls.Load(); got != calls || calls != 5 {
			t.Fatalf("%d summarizer calls by Close's return, %d after, want the 5 due, started in its drain", calls, got)
		}
	})
}

// MaxConcurrentFolds below 0 is refused with a FieldError naming it.
func TestMaxConcurrentFoldsValidate(t *testing.T) {
	cfg := hierConfig()
	cfg.MaxConcurrentFolds = -1
	var fe *memory.FieldError
	if err := cfg.Validate(); !errors.As(err, &fe) || fe.Field != "MaxConcurrentFolds" {
		t.Fatalf("Validate: %v, want a FieldError for MaxConcurrentFolds", err)
	}
}

// A run that saves asked for another pass waits Config.SupersedeDelay
// before it (a burst of saves settles into one fold), but not while a
// caller waits: Flush ends the settling, and so does a load that finds the
// fold due, whose attempt then takes no slot, or more saves meanwhile than
// a queued fold waits for. Both policies; the delay is an hour on the
// bubble's clock, so that only ending it early passes.
func TestSettlingEndsForFlushAndLoads(t *testing.T) {
	for _, policy := range []memory.Policy{memory.PolicyParity, memory.PolicyChunked} {
		for _, by := range []string{"flush", "load", "backlog"} {
			t.Run(fmt.Sprintf("%s/%s", policy, by), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					cfg := waits(hierConfig(), time.Minute, 0)
					cfg.Policy = policy
					cfg.SupersedeDelay = time.Hour
					f, g := slotsFixture(t, cfg, 1)
					turns := 11
					if policy == memory.PolicyChunked {
						turns = 16
					}
					saveNoFlush(t, f.mgr, "held-a", 1, turns) // its fold waits for the gate
					synctest.Wait()
					saveNoFlush(t, f.mgr, "held-a", turns+1, 2*turns) // make one more pass due
					g.release()
					synctest.Wait() // the first pass saved; the run settles
					if n := callsFor(f, "held-a"); n != 1 {
						t.Fatalf("held-a folded %d times before the settling ended, want 1", n)
					}
					began := time.Now()
					var h memory.History
					switch by {
					case "flush":
						if err := f.mgr.Flush(context.Background()); err != nil {
							t.Fatal(err)
						}
					case "load":
						var err error
						if h, err = f.mgr.Load(context.Background(), "held-a", "alice"); err != nil {
							t.Fatal(err)
						}
					case "backlog":
						// Up to the queue's bound (three times window plus
						// buffer) the run goes on settling; one turn past
						// it ends the settling.
						bound := 3 * (cfg.RecentMessageCount + cfg.BufferMessageCount)
						next := 2*turns + 1
						saveNoFlush(t, f.mgr, "held-a", next, next+bound/2-1)
						synctest.Wait()
						if n := callsFor(f, "held-a"); n != 1 {
							t.Fatalf("held-a folded %d times with %d messages saved while settling (bound %d), want 1", n, bound, bound)
						}
						saveNoFlush(t, f.mgr, "held-a", next+bound/2, next+bound/2)
					}
					synctest.Wait()
					if waited := time.Since(began); waited >= cfg.LoadGrace {
						t.Fatalf("the %s waited %s: it waited out the settling", by, waited)
					}
					if n := callsFor(f, "held-a"); n != 2 {
						t.Fatalf("held-a folded %d times after the %s, want 2", n, by)
					}
					// A parity load waits for the fold it found due (within
					// LoadGrace); a chunked one shows the whole tail at once.
					if by == "load" && policy == memory.PolicyParity && h.Mode != memory.ModeHierarchical {
						t.Fatalf("the load showed mode %s, want the summary its fold made", h.Mode)
					}
				})
			})
		}
	}
}

// staleTail holds the first read of the session's tail until the gate
// opens, then returns what the store held at that read: the read of a
// fold planned just before the saves that made a fold due.
type staleTail struct {
	memory.MessageStore
	session string
	held    atomic.Bool // the first read is held
	open    chan struct{}
	fail    bool // the held read fails
}

func (s *staleTail) Tail(ctx context.Context, sessionID, userID string, n int) (store.Tail, error) {
	t, err := s.MessageStore.Tail(ctx, sessionID, userID, n)
	if sessionID == s.session && s.held.CompareAndSwap(false, true) {
		<-s.open
		if s.fail {
			return store.Tail{}, errors.New("read failed")
		}
	}
	return t, err
}

// A run whose attempt found nothing to fold (its plan read the session
// before the saves that made a fold due) starts the fold those saves ask
// for at once: no fold has just run, so there is no burst to let settle,
// and the fold starts as it would have with no run in progress. Before,
// it waited out Config.SupersedeDelay (an hour here). An attempt whose
// read failed still settles, so that failures are not retried at the
// rate of saves. Chunked, whose first save past the window plans a fold
// that is not yet due; a random number of saves past its triggers while
// that plan reads.
func TestNoOpAttemptDoesNotSettle(t *testing.T) {
	for round := range 6 {
		fail := round%2 == 1
		t.Run(fmt.Sprintf("%d/read-fails=%v", round, fail), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(round), 11))
				cfg := hierConfig()
				cfg.Policy = memory.PolicyChunked
				cfg.SupersedeDelay = time.Hour
				st := &staleTail{MessageStore: memory.NewInMemoryStore(), session: "s", open: make(chan struct{}), fail: fail}
				svc := &fakeSummarizer{}
				mgr, err := memory.NewManager(st, cfg, memory.WithSummaries(summary.NewInMemoryStore(0), svc), memory.WithLogger(quiet))
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = mgr.Close() }()
				defer close(st.open)
				turn := 0
				for !st.held.Load() { // the first save that plans a fold
					turn++
					saveNoFlush(t, mgr, "s", turn, turn)
					synctest.Wait()
				}
				last := 16 + rng.IntN(8) // past the safety and overflow triggers
				saveNoFlush(t, mgr, "s", turn+1, last)
				synctest.Wait()
				if n := svc.calls.Load(); n != 0 {
					t.Fatalf("%d summarizer calls while the plan of turn %d reads, want 0", n, turn)
				}
				began := time.Now()
				st.open <- struct{}{} // the plan finds nothing to fold in its read, or the read fails
				synctest.Wait()
				if fail {
					if n := svc.calls.Load(); n != 0 {
						t.Fatalf("%d summarizer calls at once after a failed attempt, want 0 (it settles)", n)
					}
					time.Sleep(cfg.SupersedeDelay)
					synctest.Wait()
					if n := svc.calls.Load(); n != 1 {
						t.Fatalf("%d summarizer calls once the failed attempt settled, want 1", n)
					}
					return
				}
				if n := svc.calls.Load(); n != 1 {
					t.Fatalf("%d summarizer calls once the attempt planned at turn %d ended, want 1 (the due fold, at once)", n, turn)
				}
				if waited := time.Since(began); waited != 0 {
					t.Fatalf("the due fold started after %s, want at once", waited)
				}
			})
		})
	}
}
