package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/strata-go/strata/internal/backoff"
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
	// slots bounds the background fold attempts running at once
	// (Config.MaxConcurrentFolds); see foldSlot.
	slots *semaphore.Weighted

	mu sync.Mutex
	// sessions are the sessions' records (see slot), bounded by
	// maxIdleRecords.
	sessions map[string]*slot
	// waiters counts the calls waiting for every fold (Flush, Close's
	// drain): while one waits, no fold queues for a slot.
	waiters int
	// bp is the policy when it tracks sessions' backlogs between folds
	// (chunked), nil otherwise.
	bp backlogPolicy
}

// slot is a session's one record in this process: its fold run, the
// lock that orders summary saves against deletes, its cool-down after
// failed folds and, under a policy that tracks backlogs (chunked), its
// backlog between folds. It lives while a fold runs or a delete is in
// progress, and after that while it holds a cool-down or a backlog: at
// most maxIdleRecords such idle records are kept (see evictLocked).
type slot struct {
	refs  int
	cur   *foldRun   // the newest fold run, nil when none
	write sync.Mutex // orders summary saves against deletes
	gen   uint64     // bumped by a delete; guarded by write
	// failures and until are the cool-down: consecutive failed folds and
	// when folding may be tried again (exponential backoff). Guarded by
	// engine.mu.
	failures int
	until    time.Time
	// bl is the session's tracked backlog when tracking (chunked, see
	// backlogPolicy). Guarded by engine.mu.
	bl       tracked
	tracking bool
	// saves are this process's latest saves of the session (at most
	// maxLoggedSaves, oldest first), so that a read that missed some of
	// them can be completed with their turns and tokens (trackLocked).
	// Guarded by engine.mu.
	saves []loggedSave
}

// loggedSave is one save as saveDue counted it: the session incarnation,
// the message count after its append (its messages are the n before),
// and their user turns and tokens.
type loggedSave struct {
	epoch         int64
	total, n      int
	turns, tokens int
}

// maxLoggedSaves bounds slot.saves: the saves that can come between a
// read and its measurement are those of the session's writers meanwhile.
const maxLoggedSaves = 8

// logSaveLocked records a save in the record's log. Callers hold e.mu.
func (st *slot) logSaveLocked(s loggedSave) {
	if len(st.saves) == maxLoggedSaves {
		st.saves = append(st.saves[:0], st.saves[1:]...)
	}
	st.saves = append(st.saves, s)
}

// maxIdleRecords bounds the session records kept without a fold or a
// delete in progress (a cool-down or a tracked backlog only). Past it
// an eighth of them are dropped, picked at random: a dropped cool-down
// lets the session's next fold try at once, a dropped backlog makes its
// next save plan a fold again.
const maxIdleRecords = 10_000

// foldRun is one background fold of a session that callers can wait for.
type foldRun struct {
	done    chan struct{}
	cancel  context.CancelFunc
	stopped atomic.Bool  // cancelled by a delete or CancelSummarization
	again   bool         // a save arrived while running; guarded by engine.mu
	next    *foldRun     // the run started after this one stopped; guarded by engine.mu
	began   atomic.Int64 // when the current fold attempt began (unix ns), 0 while settling or queued
	// hurry, while the current attempt waits for a fold slot, lets it
	// start without one, and while the run settles, ends the settling: a
	// load found it due, a flush waits, or queued counts more messages
	// saved meanwhile than the session's usual backlog
	// (Config.queueBound). Both guarded by engine.mu.
	hurry  context.CancelFunc
	queued int
	// urgent: a load started the run, or joined it while it settled
	// (Config.SupersedeDelay), so its next attempt takes no fold slot.
	// settling: the run waits out Config.SupersedeDelay before its next
	// attempt. Both guarded by engine.mu.
	urgent, settling bool
	cut              atomic.Int64 // the cursor the current attempt folds to, 0 until known
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
		closing: make(chan struct{}), slots: semaphore.NewWeighted(int64(d.cfg.foldSlots()))}
	e.bp, _ = d.pol.(backlogPolicy)
	return e
}

// hierarchical reports whether summaries are on.
func (e *engine) hierarchical() bool { return e.cfg.Enabled && e.summaries }

// acquireLocked returns the session's record, made when it has none, and
// holds it until releaseLocked. Callers hold e.mu.
func (e *engine) acquireLocked(sessionID string) *slot {
	st := e.sessions[sessionID]
	if st == nil {
		e.evictLocked()
		st = &slot{}
		e.sessions[sessionID] = st
	}
	st.refs++
	return st
}

// releaseLocked lets go of a record acquireLocked returned, dropping it
// when nothing holds it and it keeps neither a cool-down nor a backlog.
func (e *engine) releaseLocked(sessionID string, st *slot) {
	st.refs--
	if st.refs == 0 && st.failures == 0 && !st.tracking && e.sessions[sessionID] == st {
		delete(e.sessions, sessionID)
	}
}

// evictLocked makes room for one more record when maxIdleRecords are
// kept: it drops an eighth of the records nothing holds (map order, so
// at random). Records in use are never dropped.
func (e *engine) evictLocked() {
	if len(e.sessions) < maxIdleRecords {
		return
	}
	n := maxIdleRecords/8 + 1
	for id, st := range e.sessions {
		if n == 0 {
			return
		}
		if st.refs == 0 {
			delete(e.sessions, id)
			n--
		}
	}
}

// coolingLocked reports whether the record's cool-down after failed
// folds is still in force. Callers hold e.mu.
func (e *engine) coolingLocked(st *slot) bool {
	return e.cfg.FailureCooldown > 0 && st != nil && st.failures > 0 && time.Now().Before(st.until)
}

// coolReady reports whether the session may be folded now (no cool-down
// in force).
func (e *engine) coolReady(sessionID string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.coolingLocked(e.sessions[sessionID])
}

// coolFail records a failed fold of the session and pushes its next try
// back (Config.FailureCooldown, doubling up to MaxFailureCooldown).
func (e *engine) coolFail(sessionID string) {
	if e.cfg.FailureCooldown <= 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.acquireLocked(sessionID)
	st.failures++
	st.until = time.Now().Add(backoff.Delay(e.cfg.FailureCooldown, e.cfg.MaxFailureCooldown, st.failures))
	e.releaseLocked(sessionID, st)
}

// coolSucceed clears the session's cool-down.
func (e *engine) coolSucceed(sessionID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if st := e.sessions[sessionID]; st != nil && st.failures > 0 {
		st.failures, st.until = 0, time.Time{}
		st.refs++ // released at once: drops the record when nothing else keeps it
		e.releaseLocked(sessionID, st)
	}
}

// trackLocked makes t, measured by a read, the record's backlog, keeping
// the larger count of saves reported since the read. The messages the
// read missed are added with their turns and tokens when this process's
// logged saves account for every one of them (saves counted before the
// read measured, appended after its snapshot: the common case of a
// session whose writer goes on while its fold plans); else — another
// process's appends, or saves beyond the log — the record is partial:
// they count as messages only. Callers hold e.mu.
func (st *slot) trackLocked(t tracked) {
	if st.tracking && st.bl.epoch == t.epoch && st.bl.total > t.total {
		missed, n, turns, tokens := st.bl.total-t.total, 0, 0, 0
		for _, s := range st.saves {
			if s.epoch == t.epoch && s.total-s.n >= t.total && s.total <= st.bl.total {
				n, turns, tokens = n+s.n, turns+s.turns, tokens+s.tokens
			}
		}
		t.total = st.bl.total
		t.messages = t.total - t.covered
		if n == missed {
			t.turns, t.tokens = t.turns+turns, t.tokens+tokens
		} else {
			t.partial = true
		}
	}
	st.bl, st.tracking = t, true
}

// knowsLocked reports whether the record tracks a measured backlog of the
// session incarnation epoch. Callers hold e.mu.
func (st *slot) knowsLocked(epoch int64) bool {
	return st != nil && st.tracking && st.bl.epoch == epoch && !st.bl.countOnly
}

// request starts a background fold of the session, or joins the one
// running, and returns it. saved > 0 says a save of that many messages
// asks: a save that arrives while a fold runs asks it to run once more
// when it finishes (after Config.SupersedeDelay, so that a burst of saves
// settles into one more fold) rather than cancelling it, so the summary
// keeps advancing however slow the summarizer is. A load joins whatever
// runs.
func (e *engine) request(sessionID, userID string, why trigger, saved int) *foldRun {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.acquireLocked(sessionID)
	defer e.releaseLocked(sessionID, st)
	return e.requestLocked(sessionID, userID, st, why, saved, false)
}

// requestLocked is request on the session's record st, which the caller
// holds (acquireLocked) with e.mu; byLoad says a load found the fold due.
func (e *engine) requestLocked(sessionID, userID string, st *slot, why trigger, saved int, byLoad bool) *foldRun {
	prev := st.cur
	if prev != nil && !prev.stopped.Load() {
		if saved > 0 {
			prev.again = true
		}
		if prev.hurry != nil { // queued for a fold slot, or settling
			prev.queued += saved
			if byLoad && prev.settling {
				prev.urgent = true // the attempt the load waits for takes no slot
			}
			if byLoad || prev.queued > e.cfg.queueBound() {
				prev.hurry() // a load found it due, or its backlog grew too far
			}
		}
		return prev
	}
	// No run, or one that a delete or CancelSummarization stopped: start a
	// new one, which waits for the stopped one to end so that folds of a
	// session never overlap.
	ctx, cancel := context.WithCancel(e.runner.Context())
	r := &foldRun{done: make(chan struct{}), cancel: cancel, attempt: make(chan struct{}), urgent: byLoad}
	if prev != nil {
		prev.next = r
	}
	st.cur = r
	st.refs++ // held by the run until it ends
	err := e.runner.Go("fold", func(context.Context) { e.run(ctx, sessionID, userID, why, st, r, prev) })
	if err != nil { // closed
		st.cur = nil
		st.refs-- // the run's hold, never taken (the caller still holds st)
		cancel()
		r.err = ErrClosed
		close(r.attempt)
		close(r.done)
	}
	return r
}

// loaded is a load's one call into the engine, once it has read the
// session — the view v, the usable summary s, the messages after its
// cursor — and its policy has decided how far the summary should reach
// (cut, why; 0 when no fold is due). On the session's record it starts
// tracking the backlog the read measured (chunked) unless already
// tracked; it asks for a fold that is due but that the view does without
// (why not triggerLoad) unless the session is cooling down; and when the
// view needs the fold (triggerLoad) it starts or joins it and waits at
// most wait for a summary that reaches cut — with a stale summary to show
// meanwhile, not at all when the running attempt cannot reach cut or this
// manager's folds take longer than the grace. It returns the newest
// summary a fold stored meanwhile, and whether there was one. The load
// never plans a fold: the fold plans under its lease.
func (e *engine) loaded(ctx context.Context, sessionID, userID string, v view, s *summary.Summary, unfolded []store.Message, cut int64, why trigger, wait time.Duration) (*summary.Summary, bool) {
	var fresh tracked
	measure := false
	if e.bp != nil {
		e.mu.Lock()
		measure = !e.sessions[sessionID].knowsLocked(v.epoch)
		e.mu.Unlock()
		if measure {
			fresh = e.bp.track(v, s, unfolded) // priced outside the lock
		}
	}
	if !measure && cut == 0 {
		return nil, false
	}
	e.mu.Lock()
	st := e.acquireLocked(sessionID)
	if measure && !st.knowsLocked(v.epoch) { // else a plan or another load was first
		st.trackLocked(fresh)
	}
	var run *foldRun
	switch {
	case cut == 0:
	case why != triggerLoad: // due, but the view is complete without it
		if !e.coolingLocked(st) {
			e.requestLocked(sessionID, userID, st, why, 0, true)
		}
	default:
		run = e.requestLocked(sessionID, userID, st, triggerLoad, 0, true)
	}
	e.releaseLocked(sessionID, st)
	e.mu.Unlock()
	if run == nil {
		return nil, false
	}
	if s != nil {
		wait = min(wait, e.expectedWait(run, e.cfg.LoadGrace, cut))
	}
	return run.wait(ctx, e, max(wait, 0), cut)
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
		release, ok := e.foldSlot(ctx, r, why)
		if !ok {
			return
		}
		r.began.Store(time.Now().UnixNano())
		sum, err := e.fold(ctx, sessionID, userID, why, st, r)
		release()
		noop := err == nil && r.cut.Load() == 0 // planned, and found nothing to fold
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
			if due, ok := e.trackedDueLocked(st); ok && !due {
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
		r.cut.Store(0) // the next attempt's, unknown until it plans
		why = triggerSave
		// Saves arrived during the fold: let a burst settle first, unless
		// a caller waits for every fold (flush), which would only wait
		// longer, or the attempt planned and found nothing to fold (its
		// plan read the session before the saves that made a fold due):
		// then no fold has just run, and the one due starts at once, as it
		// would have with no run in progress. A failed attempt settles, so
		// that failures are not retried at the rate of saves. The settling
		// ends early, as a queued attempt does, when a flush starts, a load
		// finds the fold due (the attempt then takes no slot) or its
		// backlog grows past Config.queueBound.
		if d := e.cfg.SupersedeDelay; d > 0 && e.waiters == 0 && !noop {
			sctx, hurry := context.WithTimeout(ctx, d)
			r.hurry, r.queued, r.settling = hurry, 0, true
			e.mu.Unlock()
			<-sctx.Done()
			e.mu.Lock()
			r.hurry, r.settling = nil, false
			e.mu.Unlock()
			hurry()
			if ctx.Err() != nil {
				return
			}
			continue
		}
		e.mu.Unlock()
	}
}

// foldSlot waits for one of the Config.MaxConcurrentFolds slots of
// background fold attempts, and returns its release. While an attempt
// queues, the session's saves go on and its fold, when it runs, covers
// them too: under load folds become fewer and larger instead of more
// concurrent. Some attempts take no slot, so their number is bounded
// otherwise: one that a load found due — started by it, or queued and
// joined by it (foldRun.hurry) — so that neither a reply nor the prompts
// of a session being talked to wait behind other sessions' folds (bounded
// by the loads in progress); a queued one as soon as more messages were
// saved to its session meanwhile than Config.queueBound, so that the
// verbatim tail stays near its usual size (bounded by the sessions being
// written to); and every attempt while a caller waits for all of them
// (flush). So the queue holds the folds of sessions only written to. ok
// is false when ctx ended first.
func (e *engine) foldSlot(ctx context.Context, r *foldRun, why trigger) (release func(), ok bool) {
	e.mu.Lock()
	urgent := r.urgent || why == triggerLoad
	r.urgent = false // the run's later attempts are for saves
	switch {
	case urgent:
		e.mu.Unlock()
		return func() {}, true
	case e.slots.TryAcquire(1):
		e.mu.Unlock()
		return func() { e.slots.Release(1) }, true
	case e.waiters > 0:
		e.mu.Unlock()
		return func() {}, true
	}
	qctx, hurry := context.WithCancel(ctx)
	r.hurry, r.queued = hurry, 0
	e.mu.Unlock()
	err := e.slots.Acquire(qctx, 1)
	e.mu.Lock()
	r.hurry = nil
	e.mu.Unlock()
	hurry()
	switch {
	case err == nil:
		return func() { e.slots.Release(1) }, true
	case ctx.Err() != nil:
		return nil, false
	default: // hurried by a load
		return func() {}, true
	}
}

// flush returns when no fold (nor fold observer) is queued or running, or
// when ctx ends first. While it waits, folds queued for a slot start at
// once and none queues: its caller is waiting for exactly that work.
func (e *engine) flush(ctx context.Context) error {
	e.mu.Lock()
	e.waiters++
	for _, st := range e.sessions {
		if r := st.cur; r != nil && r.hurry != nil {
			r.hurry()
		}
	}
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.waiters--
		e.mu.Unlock()
	}()
	return e.runner.Flush(ctx)
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
