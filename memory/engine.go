package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-go/strata/internal/bg"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

// engine is the fold engine: it brings a session's summary up to what its
// policy asks, one fold per session at a time (single-flight in process,
// a lease across processes), on the background runner, with a cool-down
// after failures, in chunks of bounded input, and saves each result only
// if the session was not deleted meanwhile and the manager is not closed.
// Callers never run a fold on their own goroutine: they start or join one
// and wait for it as long as they choose (foldRun.wait), so loads never
// queue behind each other. A Manager owns one engine; the engine knows
// nothing of the Manager and works with its engineDeps only. Its waits and
// timestamps are the system clock's (tests move it in testing/synctest
// bubbles).
type engine struct {
	engineDeps
	runner *bg.Runner
	cool   *cooldowns

	// saveMu orders summary saves against Close: saves hold it shared and
	// check closed, so none completes after Close has returned.
	saveMu    sync.RWMutex
	closed    atomic.Bool
	draining  atomic.Bool // Close is letting the attempts in flight finish: no further pass
	closeOnce sync.Once
	closeErr  error
	closing   chan struct{} // closed when Close begins
	calls     callTracker   // summarizer calls running
	// meanFold is the running mean duration of successful folds (ns), 0
	// until one finished; loads use it to skip waiting for a fold that
	// cannot finish within the grace.
	meanFold atomic.Int64

	mu       sync.Mutex
	sessions map[string]*slot
	// bp is the policy when it tracks sessions' backlogs between folds
	// (chunked), nil otherwise.
	bp backlogPolicy
}

// slot is the per-session coordination record; it lives while a fold runs
// or a delete is in progress.
type slot struct {
	refs  int
	cur   *foldRun   // the newest fold run, nil when none
	write sync.Mutex // orders summary saves against deletes
	gen   uint64     // bumped by a delete; guarded by write
}

// foldRun is one background fold of a session that callers can wait for.
type foldRun struct {
	done    chan struct{}
	cancel  context.CancelFunc
	stopped atomic.Bool  // cancelled by a delete or CancelSummarization
	again   bool         // a save arrived while running; guarded by engine.mu
	next    *foldRun     // the run started after this one stopped; guarded by engine.mu
	began   atomic.Int64 // when the current fold attempt began (unix ns), 0 while settling
	cut     atomic.Int64 // the cursor the current attempt folds to, 0 until known
	// attempt is closed when the current fold attempt ends, with its
	// result in sum and err: a run folds again while saves keep asking, and
	// a waiting load wants the first result, not the run's end. All three
	// are guarded by engine.mu.
	attempt chan struct{}
	sum     *summary.Summary
	err     error
	// givenUp is the attempt a load stopped waiting for (its wait ran
	// out): later loads do not wait for that attempt again. Guarded by
	// engine.mu.
	givenUp chan struct{}
}

var (
	// errCoolingDown: a recent failure pauses this session's folds.
	errCoolingDown = errors.New("memory: summarizer cooling down after a failure")
	// errFoldBusy: another process holds the session's fold lock.
	// It is a store.ErrUnavailable: the session is busy for a while,
	// retrying later succeeds.
	errFoldBusy = fmt.Errorf("%w: another process is folding this session", store.ErrUnavailable)
	// errDeleted: the session was deleted while the fold ran.
	errDeleted = errors.New("memory: session deleted during fold")
)

// engineDeps are what the engine works with, all given by its Manager.
type engineDeps struct {
	store store.Store // the one storage contract
	// summaries: WithSummaries was given (a summary store and a
	// summarizer).
	summaries bool
	svc       summary.Service // nil with summaries off
	cfg       Config          // defaults filled in
	pol       policy
	cost      *trimmer.Trimmer
	log       *slog.Logger
	stats     *counters
	otel      *instruments
	// obs are told of every stored summary (WithFoldObserver,
	// Manager.Observe).
	obs *observers
}

func newEngine(d engineDeps) *engine {
	e := &engine{engineDeps: d, runner: bg.New(d.log), sessions: map[string]*slot{},
		closing: make(chan struct{})}
	e.bp, _ = d.pol.(backlogPolicy)
	e.cool = newCooldowns(d.cfg.FailureCooldown, d.cfg.MaxFailureCooldown, time.Now)
	return e
}

// hierarchical reports whether summaries are on.
func (e *engine) hierarchical() bool { return e.cfg.Enabled && e.summaries }

func (e *engine) acquireLocked(sessionID string) *slot {
	st := e.sessions[sessionID]
	if st == nil {
		st = &slot{}
		e.sessions[sessionID] = st
	}
	st.refs++
	return st
}

func (e *engine) releaseLocked(sessionID string, st *slot) {
	st.refs--
	if st.refs == 0 && e.sessions[sessionID] == st {
		delete(e.sessions, sessionID)
	}
}

// request starts a background fold of the session, or joins the one
// running, and returns it. fromSave says a save asks: a save that arrives
// while a fold runs asks it to run once more when it finishes (after
// Config.SupersedeDelay, so that a burst of saves settles into one more
// fold) rather than cancelling it, so the summary keeps advancing however
// slow the summarizer is. A load joins whatever runs.
func (e *engine) request(sessionID, userID string, why trigger, fromSave bool) *foldRun {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.acquireLocked(sessionID)
	defer e.releaseLocked(sessionID, st)
	prev := st.cur
	if prev != nil && !prev.stopped.Load() {
		if fromSave {
			prev.again = true
		}
		return prev
	}
	// No run, or one that a delete or CancelSummarization stopped: start a
	// new one, which waits for the stopped one to end so that folds of a
	// session never overlap.
	ctx, cancel := context.WithCancel(e.runner.Context())
	r := &foldRun{done: make(chan struct{}), cancel: cancel, attempt: make(chan struct{})}
	if prev != nil {
		prev.next = r
	}
	st.cur = r
	st.refs++ // held by the run until it ends
	err := e.runner.Go("fold", func(context.Context) { e.run(ctx, sessionID, userID, why, st, r, prev) })
	if err != nil { // closed
		st.cur = nil
		e.releaseLocked(sessionID, st)
		cancel()
		r.err = ErrClosed
		close(r.attempt)
		close(r.done)
	}
	return r
}

func (e *engine) run(ctx context.Context, sessionID, userID string, why trigger, st *slot, r, prev *foldRun) {
	open := true // r.attempt not closed yet; guarded by e.mu
	finish := func(sum *summary.Summary, err error) {
		r.sum, r.err = sum, err
		close(r.attempt)
		open = false
	}
	defer func() {
		r.cancel()
		e.mu.Lock()
		if open {
			finish(nil, ctx.Err())
		}
		if st.cur == r { // compare-and-delete: never evict a newer run
			st.cur = nil
		}
		e.releaseLocked(sessionID, st)
		e.mu.Unlock()
		close(r.done)
	}()
	if prev != nil {
		select {
		case <-prev.done:
		case <-ctx.Done():
			return
		}
	}
	for {
		r.cut.Store(0)
		r.began.Store(time.Now().UnixNano())
		sum, err := e.fold(ctx, sessionID, userID, why, st, r)
		if err != nil && ctx.Err() == nil {
			e.log.DebugContext(ctx, "strata: fold skipped or failed", "session_id", sessionID, "error", err)
		}
		e.mu.Lock()
		finish(sum, err)
		again := r.again
		r.again = false
		if again && err == nil {
			// The saves that asked counted a backlog from before this fold
			// stored its summary; the tracked backlog, which the fold has
			// brought up to date, says whether one more fold is due.
			if due, ok := e.trackedDue(sessionID); ok && !due {
				again = false
			}
		}
		if !again || ctx.Err() != nil || e.draining.Load() {
			// Deciding to end and leaving st.cur happen in one critical
			// section: a save that asks for another pass after this point
			// starts a new run instead of setting again on this one, which
			// would never read it.
			if st.cur == r {
				st.cur = nil
			}
			e.mu.Unlock()
			return
		}
		r.attempt, open = make(chan struct{}), true
		r.began.Store(0)
		e.mu.Unlock()
		why = triggerSave
		// Saves arrived during the fold: let a burst settle first.
		if d := e.cfg.SupersedeDelay; d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
	}
}

// expectedWait is how long a load that needs the summary to reach need may
// usefully wait for run, at most grace: none when the run's current attempt
// folds to an older cursor (it cannot give the load what it needs) or is
// expected to take longer than the grace by this manager's past folds —
// waiting would only delay the reply; else the whole grace.
func (e *engine) expectedWait(r *foldRun, grace time.Duration, need int64) time.Duration {
	if cut := r.cut.Load(); cut != 0 && cut < need {
		return 0
	}
	mean := time.Duration(e.meanFold.Load())
	if mean == 0 {
		return grace
	}
	remaining := mean
	if began := r.began.Load(); began != 0 {
		remaining -= time.Since(time.Unix(0, began))
	}
	if remaining > grace {
		return 0
	}
	return grace
}

// observeDuration folds one successful fold's duration into the running
// mean (an exponentially weighted average, so it follows a summarizer that
// gets slower or faster).
func (e *engine) observeDuration(d time.Duration) {
	for {
		old := e.meanFold.Load()
		next := int64(d)
		if old != 0 {
			next = (3*old + int64(d)) / 4
		}
		if e.meanFold.CompareAndSwap(old, next) {
			return
		}
	}
}

// wait waits at most d, or until ctx is done, for the run to store a
// summary that reaches need: through the run's successive fold attempts
// (saves during a fold make it fold again) and the run started after it
// when it was stopped. It returns the newest summary an attempt stored
// meanwhile, and whether there was one, even when it falls short of need.
func (r *foldRun) wait(ctx context.Context, e *engine, d time.Duration, need int64) (*summary.Summary, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	var best *summary.Summary
	for {
		e.mu.Lock()
		ch, givenUp := r.attempt, r.givenUp
		e.mu.Unlock()
		if ch == givenUp {
			// A load already waited for this attempt until it gave up:
			// waiting again would only delay this one too.
			select {
			case <-ch:
			default:
				return best, best != nil
			}
		}
		select {
		case <-ch:
		case <-t.C:
			e.mu.Lock()
			r.givenUp = ch
			e.mu.Unlock()
			return best, best != nil
		case <-ctx.Done():
			return best, best != nil
		}
		e.mu.Lock()
		sum, err, next, again := r.sum, r.err, r.next, r.attempt != ch
		e.mu.Unlock()
		if err == nil && sum != nil {
			best = sum
			if sum.UpToSeq >= need {
				return best, true
			}
		}
		switch {
		case again: // the run folds once more
		case next != nil:
			r = next
		default:
			return best, best != nil
		}
	}
}

// cancelRun stops the session's running fold, if any.
func (e *engine) cancelRun(sessionID string) {
	e.mu.Lock()
	var r *foldRun
	if st := e.sessions[sessionID]; st != nil {
		r = st.cur
	}
	e.mu.Unlock()
	if r != nil {
		r.stopped.Store(true)
		r.cancel()
	}
}

// close stops the engine: no run starts, running ones are cancelled and
// waited for until ctx ends, and no summary is saved once it returns.
// Only the first call waits; later ones return at once, with an error
// only for what still runs then.
func (e *engine) close(ctx context.Context) error {
	first := false
	e.closeOnce.Do(func() { first, e.closeErr = true, e.closeNow(ctx) })
	if first || e.closeErr == nil {
		return e.closeErr
	}
	if n := e.runner.Pending(); n > 0 {
		return fmt.Errorf("memory: %d background task(s) still running after cancellation", n)
	}
	select {
	case <-e.calls.wait():
		return nil
	default:
		return errors.New("memory: a summarizer call still running after cancellation (it ignores its context), abandoned")
	}
}

func (e *engine) closeNow(ctx context.Context) error {
	e.closed.Store(true)
	close(e.closing) // folds stop waiting for their summarizer calls
	err := e.runner.Close(ctx)
	// Wait for saves in progress; a save that starts now sees closed.
	locked := make(chan struct{})
	go func() { e.saveMu.Lock(); close(locked); e.saveMu.Unlock() }()
	// Even past ctx's deadline (a fold that outlived it), a moment for
	// the lock: only a save really in progress is reported.
	select {
	case <-locked:
	case <-ctx.Done():
		t := time.NewTimer(50 * time.Millisecond)
		defer t.Stop()
		select {
		case <-locked:
		case <-t.C:
			return errors.Join(err, errors.New("memory: a summary save still in progress at the close deadline"))
		}
	}
	// A summarizer that ignores cancellation is abandoned (its fold has
	// ended, its lock is released); say so when it outlives the deadline.
	select {
	case <-e.calls.wait():
	case <-ctx.Done():
		err = errors.Join(err, fmt.Errorf("memory: a summarizer call still running after cancellation (it ignores its context), abandoned: %w", ctx.Err()))
	}
	return err
}
