package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/strata-go/strata/internal/bg"
	"github.com/strata-go/strata/internal/clock"
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
// queue behind each other.
type engine struct {
	engineDeps
	runner *bg.Runner
	locker store.FoldLocker
	cool   *cooldowns

	// saveMu orders summary saves against Close: saves hold it shared and
	// check closed, so none completes after Close has returned.
	saveMu    sync.RWMutex
	closed    atomic.Bool
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
	errFoldBusy = errors.New("memory: another process is folding this session")
	// errDeleted: the session was deleted while the fold ran.
	errDeleted = errors.New("memory: session deleted during fold")
)

// engineDeps are what the engine works with, all given by its Manager.
type engineDeps struct {
	store MessageStore
	sums  summary.Store   // nil with summaries off
	svc   summary.Service // nil with summaries off
	cfg   Config          // defaults filled in
	pol   policy
	cost  *trimmer.Trimmer
	clk   clock.Clock
	log   *slog.Logger
	stats *counters
	otel  *instruments
	// foldObservers are told of every stored summary (WithFoldObserver).
	foldObservers []func(context.Context, FoldEvent)
}

func newEngine(d engineDeps) *engine {
	e := &engine{engineDeps: d, runner: bg.New(d.log), sessions: map[string]*slot{},
		closing: make(chan struct{})}
	e.bp, _ = d.pol.(backlogPolicy)
	e.cool = newCooldowns(d.cfg.FailureCooldown, d.cfg.MaxFailureCooldown, d.clk.Now)
	if l, ok := d.store.(store.FoldLocker); ok {
		e.locker = l
	} else if l, ok := d.sums.(store.FoldLocker); ok {
		e.locker = l
	}
	return e
}

// hierarchical reports whether summaries are on.
func (e *engine) hierarchical() bool { return e.cfg.Enabled && e.sums != nil }

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
func (e *engine) request(sessionID, userID, trigger string, fromSave bool) *foldRun {
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
	err := e.runner.Go("fold", func(context.Context) { e.run(ctx, sessionID, userID, trigger, st, r, prev) })
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

func (e *engine) run(ctx context.Context, sessionID, userID, trigger string, st *slot, r, prev *foldRun) {
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
		r.began.Store(e.clk.Now().UnixNano())
		sum, err := e.fold(ctx, sessionID, userID, trigger, st, r)
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
		if !again || ctx.Err() != nil {
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
		trigger = "save"
		// Saves arrived during the fold: let a burst settle first.
		if d := e.cfg.SupersedeDelay; d > 0 {
			t := e.clk.NewTimer(d)
			select {
			case <-t.C():
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
		remaining -= e.clk.Now().Sub(time.Unix(0, began))
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
	t := e.clk.NewTimer(d)
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
		case <-t.C():
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
// deleteSession deletes the session for owner from the message store and
// then the summary store, and stops its fold, under the session's write
// lock: no fold of this process saves between the messages going and the
// summary going, the bumped generation makes a fold still running discard
// its result, and a re-created session's first save waits until both are
// gone. The fold lease is left alone: it ends with the fold that holds it.
func (e *engine) deleteSession(ctx context.Context, sessionID, owner string) error {
	e.mu.Lock()
	st := e.acquireLocked(sessionID)
	e.mu.Unlock()
	defer func() { e.mu.Lock(); e.releaseLocked(sessionID, st); e.mu.Unlock() }()
	st.write.Lock()
	defer st.write.Unlock()
	if err := e.store.Delete(ctx, sessionID, owner); err != nil {
		return err
	}
	st.gen++
	e.cancelRun(sessionID)
	e.forgetBacklog(sessionID)
	if e.sums != nil && !e.storeKeepsSummaries() {
		if err := e.sums.Delete(ctx, sessionID); err != nil {
			return fmt.Errorf("summary: %w", err)
		}
	}
	e.cool.succeed(sessionID)
	return nil
}

// storeKeepsSummaries reports whether the message store keeps the summary
// store's summaries beside its sessions (store.SnapshotReader's
// ReadsSummariesOf): its Delete and Replace then remove the session's
// summary in the same atomic step, and the manager must not delete it
// again by id — by then another replica may have re-created the session
// and stored the new incarnation's summary.
func (e *engine) storeKeepsSummaries() bool {
	sr, ok := e.store.(store.SnapshotReader)
	return ok && sr.ReadsSummariesOf(e.sums)
}

// replaceSession makes msgs (already validated) the whole history of the
// session for owner, under the session's write lock, and stops its fold as
// deleteSession does. With a store.Replacer the store does it in one atomic
// step; without, it is a delete then an append under the write lock (see
// store.Replacer for what that fallback does not cover). The old summary
// belongs to the old incarnation: it is removed.
func (e *engine) replaceSession(ctx context.Context, sessionID, owner string, msgs []store.Message) (store.AppendResult, error) {
	e.mu.Lock()
	st := e.acquireLocked(sessionID)
	e.mu.Unlock()
	defer func() { e.mu.Lock(); e.releaseLocked(sessionID, st); e.mu.Unlock() }()
	st.write.Lock()
	defer st.write.Unlock()
	var res store.AppendResult
	var err error
	if r, ok := e.store.(store.Replacer); ok {
		res, err = r.Replace(ctx, sessionID, owner, msgs...)
	} else {
		res, err = e.replaceFallback(ctx, sessionID, owner, msgs)
	}
	if err != nil {
		return store.AppendResult{}, err
	}
	st.gen++
	e.cancelRun(sessionID)
	e.forgetBacklog(sessionID)
	if e.sums != nil && !e.storeKeepsSummaries() {
		if err := e.sums.Delete(ctx, sessionID); err != nil {
			return res, fmt.Errorf("summary: %w", err)
		}
	}
	e.cool.succeed(sessionID)
	return res, nil
}

// replaceFallback replaces a session's history with a store that is no
// store.Replacer: delete (a missing session is fine), create, append.
func (e *engine) replaceFallback(ctx context.Context, sessionID, owner string, msgs []store.Message) (store.AppendResult, error) {
	if err := e.store.Delete(ctx, sessionID, owner); err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.AppendResult{}, err
	}
	if err := e.store.Create(ctx, sessionID, owner); err != nil {
		return store.AppendResult{}, err
	}
	return e.store.Append(ctx, sessionID, owner, msgs...)
}

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

// foldPlan is what a fold works from: the session's view, the messages
// after the summary's cursor (for policies that want them), and the cursor
// the summary must reach (0: nothing to fold) with the trigger's name.
type foldPlan struct {
	v        view
	unfolded []store.Message
	cut      int64
	why      string
}

// plan reads the session as a load does (one statement when the message
// store reads the summaries too) and asks the policy how far to fold. It
// returns the usable summary beside the plan.
func (e *engine) plan(ctx context.Context, sessionID, userID, trigger string) (*summary.Summary, foldPlan, error) {
	v, existing, sumErr, err := e.loadView(ctx, sessionID, userID)
	if err != nil {
		return nil, foldPlan{}, fmt.Errorf("read session: %w", err)
	}
	if sumErr != nil {
		return nil, foldPlan{}, sumErr
	}
	p := foldPlan{v: v}
	if e.bp != nil {
		if p.unfolded, err = e.after(ctx, sessionID, userID, v, cursorOf(existing)); err != nil {
			return nil, foldPlan{}, fmt.Errorf("read messages: %w", err)
		}
	}
	p.cut, p.why = e.pol.target(v, existing, p.unfolded, trigger != "load")
	if e.bp != nil {
		e.bp.measured(sessionID, v, existing, p.unfolded)
	}
	return existing, p, nil
}

// saveDue reports whether a save that appended msgs (res) may need a fold:
// always for a policy that does not track backlogs (parity folds after
// every save past the trigger), else as the policy's tracked backlog says.
func (e *engine) saveDue(sessionID string, res store.AppendResult, msgs []store.Message) bool {
	return e.bp == nil || e.bp.saved(sessionID, res, msgs)
}

// trackedDue reports whether the session's backlog is tracked (ok) and,
// if so, whether it fires a trigger.
func (e *engine) trackedDue(sessionID string) (due, ok bool) {
	if e.bp == nil {
		return false, false
	}
	return e.bp.trackedDue(sessionID)
}

// forgetBacklog drops the session's tracked backlog (deleted, replaced or
// rewritten): its next save plans a fold again.
func (e *engine) forgetBacklog(sessionID string) {
	if e.bp != nil {
		e.bp.forget(sessionID)
	}
}

// fold reads the session, asks the policy how far to fold, and folds: it
// returns the summary now stored (the existing one when nothing was to do).
func (e *engine) fold(ctx context.Context, sessionID, userID, trigger string, st *slot, r *foldRun) (_ *summary.Summary, err error) {
	ctx, span := e.otel.startSpan(ctx, "strata.memory.fold", sessionID)
	span.SetAttributes(attribute.String("memory.fold.trigger", trigger))
	defer func() { endSpan(span, err) }()
	if e.locker != nil && e.planFirst(sessionID, trigger) {
		// Plan first, without the lease: a save of a session whose backlog
		// this process does not know may find nothing to fold, and taking
		// and releasing the lease costs two writes. A fold that is due is
		// planned again under the lease: another process may have folded
		// meanwhile.
		if existing, p, err := e.plan(ctx, sessionID, userID, trigger); err != nil || p.cut == 0 {
			return existing, err
		}
	}
	release, saveRelease, err := e.lock(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	defer release()

	st.write.Lock()
	gen := st.gen
	st.write.Unlock()
	existing, p, err := e.plan(ctx, sessionID, userID, trigger)
	if err != nil || p.cut == 0 {
		return existing, err
	}
	v, unfolded, cut, why := p.v, p.unfolded, p.cut, p.why
	r.cut.Store(cut)
	if !e.cool.ready(sessionID) {
		return nil, errCoolingDown
	}
	incremental := e.bp != nil && e.bp.incremental() && existing != nil
	var from int64
	if incremental {
		from = existing.UpToSeq
	}
	var msgs []store.Message
	if unfolded != nil && (incremental || existing == nil) {
		// Already read: the messages after the summary's cursor (all of
		// them when there is no summary yet).
		i := 0
		for i < len(unfolded) && unfolded[i].Seq <= cut {
			i++
		}
		msgs = unfolded[:i]
	} else if msgs, err = e.store.Range(ctx, sessionID, userID, from, cut, 0); err != nil {
		return nil, fmt.Errorf("read messages to fold: %w", err)
	}
	if len(msgs) == 0 {
		return nil, errors.New("memory: no messages to fold")
	}
	if trigger == "load" {
		e.stats.lazyFolds.Add(1)
	} else {
		e.stats.backgroundFolds.Add(1)
	}
	began := e.clk.Now()
	rec := foldRecord{trigger: why, messages: len(msgs), tokensBefore: e.cost.Cost(existing.BlocksWith(render(e.cfg))) + e.cost.Cost(chatMessages(msgs))}
	cur := existing
	// Every fold's input is capped, parity's too: a long range is folded in
	// chunks, each after the first continuing the summary incrementally.
	limit := e.cfg.MaxFoldInputTokens
	parts := chunks(msgs, limit, e.cost)
	for i, chunk := range parts {
		req := summary.Request{SessionID: sessionID, Messages: chatMessages(chunk), SentAt: sentAt(chunk), Existing: cur, Incremental: incremental || i > 0,
			MaxNarrativeTokens: e.cfg.MaxNarrativeTokens}
		e.stats.summarizerCalls.Add(1)
		rec.calls++
		res, err := e.summarize(ctx, req)
		if err == nil && res.IsEmpty() {
			err = summary.ErrEmptyReply
		}
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, ErrClosed) { // a fold Close abandoned did not fail
				e.stats.foldFailures.Add(1)
				e.cool.fail(sessionID)
			}
			rec.finish(e, ctx, sessionID, began, cur, err)
			return nil, fmt.Errorf("summarize: %w", err)
		}
		rec.inputTokens += res.Usage.InputTokens
		next := summary.Apply(cur, sessionID, v.epoch, res, chunk[len(chunk)-1].Seq, summary.MergeOptions{
			MaxFacts: e.cfg.MaxFacts, MaxValueLen: e.cfg.MaxFactValueLen, MaxPerFamily: e.cfg.MaxFactsPerFamily,
			TokenBudget: e.cfg.FactsTokenBudget, Tokens: e.cfg.Estimator.Estimate, PinnedKeys: e.cfg.PinnedFactKeys,
			MaxNarrativeTokens: e.cfg.MaxNarrativeTokens, ShowPrevious: e.cfg.ShowPreviousValues, Now: e.clk.Now(),
		})
		next = suppressForgotten(next, chunk)
		// Each chunk's result covers a whole prefix of the session: save it so
		// progress survives a later failure.
		var saveFn func(context.Context, summary.Summary) error // nil: the summary store's Save
		if i == len(parts)-1 {
			saveFn = saveRelease // the last save ends the fold: it may release the lease too
		}
		if err := e.save(ctx, st, gen, next, saveFn); err != nil {
			if errors.Is(err, summary.ErrStale) { // another replica stored a newer one
				return e.usableSummary(ctx, sessionID, v.epoch)
			}
			rec.finish(e, ctx, sessionID, began, cur, err)
			return nil, err
		}
		cur = &next
		e.notify(FoldEvent{SessionID: sessionID, UserID: userID, Summary: next})
	}
	if unfolded != nil {
		e.bp.folded(sessionID, v.epoch, v.total-len(unfolded), existing, cur, unfolded)
	}
	e.cool.succeed(sessionID)
	e.observeDuration(e.clk.Now().Sub(began))
	e.stats.folds.Add(1)
	rec.finish(e, ctx, sessionID, began, cur, nil)
	return cur, nil
}

// errSummarizerTimeout: a summarizer call outlived Config.SummarizeTimeout.
var errSummarizerTimeout = errors.New("memory: summarizer did not answer in time")

// summarize calls the summarizer with a deadline of
// Config.SummarizeTimeout and returns its answer, or an error once the
// deadline passes or the manager closes, even if the summarizer ignores its
// context: the fold then ends and releases its lock, and the abandoned
// call's late result is discarded. A fold cancelled otherwise (a delete,
// CancelSummarization) still waits for its call, at most until the
// deadline, so that folds of one session do not overlap. A panic in the
// summarizer is an error too.
func (e *engine) summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	timeout := e.cfg.SummarizeTimeout
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	deadline := e.clk.NewTimer(timeout)
	defer deadline.Stop()
	type outcome struct {
		res summary.Result
		err error
	}
	done := make(chan outcome, 1) // never blocks a late summarizer
	e.calls.start()
	go func() {
		defer e.calls.end()
		defer func() {
			if v := recover(); v != nil {
				done <- outcome{err: fmt.Errorf("memory: summarizer panicked: %v", v)}
			}
		}()
		res, err := e.svc.Summarize(cctx, req)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-deadline.C():
		if err := ctx.Err(); err != nil {
			return summary.Result{}, err
		}
		return summary.Result{}, fmt.Errorf("%w (%s)", errSummarizerTimeout, timeout)
	case <-e.closing:
		return summary.Result{}, ErrClosed
	}
}

// callTracker counts the summarizer calls still running, abandoned ones
// included, so that Close can tell whether one outlived it.
type callTracker struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n == 0
}

func (c *callTracker) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.idle = make(chan struct{})
	}
	c.n++
}

func (c *callTracker) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n--; c.n == 0 {
		close(c.idle)
		c.idle = nil
	}
}

// wait returns a channel closed when no call runs.
func (c *callTracker) wait() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return c.idle
}

// planFirst reports whether a fold should plan before taking the lease:
// when a save asks and the session's tracked backlog does not say a fold is
// due (untracked, or a save that raced a fold). A load asks only when its
// own read found a fold due, and a tracked save only when its backlog fires
// a trigger: those take the lease at once and plan once, under it.
func (e *engine) planFirst(sessionID, trigger string) bool {
	if trigger != "save" {
		return false
	}
	due, ok := e.trackedDue(sessionID)
	return !ok || !due
}

// save writes s unless the manager is closed, the session was deleted
// (gen changed) or the fold was cancelled since it started, so no late fold
// resurrects a deleted session's summary or writes after Close.
// With saveFn non-nil (a lease's save-and-release, see store.FoldSaveLocker) it
// saves through saveFn instead of the summary store.
func (e *engine) save(ctx context.Context, st *slot, gen uint64, s summary.Summary, saveFn func(context.Context, summary.Summary) error) error {
	e.saveMu.RLock()
	defer e.saveMu.RUnlock()
	if e.closed.Load() {
		return ErrClosed
	}
	st.write.Lock()
	defer st.write.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if st.gen != gen {
		return errDeleted
	}
	if saveFn == nil {
		saveFn = e.sums.Save
	}
	if err := saveFn(ctx, s); err != nil {
		return fmt.Errorf("save summary: %w", err)
	}
	return nil
}

// notify hands a stored summary to the fold observers, in the background.
func (e *engine) notify(ev FoldEvent) {
	for _, fn := range e.foldObservers {
		_ = e.runner.Go("fold observer", func(ctx context.Context) { fn(ctx, ev) })
	}
}

// lock takes the cross-process fold lock when the stores have one, waiting
// for another process's fold at most Config.FoldWait. save, when not nil,
// saves a summary and releases the lock in one step (store.FoldSaveLocker).
func (e *engine) lock(ctx context.Context, sessionID string) (release func(), save func(context.Context, summary.Summary) error, err error) {
	if e.locker == nil {
		return func() {}, nil, nil
	}
	deadline := e.clk.NewTimer(e.cfg.FoldWait)
	defer deadline.Stop()
	saver, _ := e.locker.(store.FoldSaveLocker)
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		var ok bool
		if saver != nil {
			release, save, ok, err = saver.TryLockFoldSaving(ctx, sessionID, e.cfg.FoldLockTTL, e.sums)
		} else {
			release, ok, err = e.locker.TryLockFold(ctx, sessionID, e.cfg.FoldLockTTL)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("fold lock: %w", err)
		}
		if ok {
			return release, save, nil
		}
		t := e.clk.NewTimer(delay)
		select {
		case <-t.C():
		case <-deadline.C():
			t.Stop()
			return nil, nil, errFoldBusy
		case <-ctx.Done():
			t.Stop()
			return nil, nil, ctx.Err()
		}
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
		t := e.clk.NewTimer(50 * time.Millisecond)
		defer t.Stop()
		select {
		case <-locked:
		case <-t.C():
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

// foldRecord collects what one fold did, for its log record.
type foldRecord struct {
	trigger      string
	messages     int
	calls        int
	tokensBefore int
	inputTokens  int
}

func (r foldRecord) finish(e *engine, ctx context.Context, sessionID string, began time.Time, s *summary.Summary, err error) {
	attrs := []any{"session_id", sessionID, "trigger", r.trigger, "messages_folded", r.messages,
		"summarizer_calls", r.calls, "tokens_before", r.tokensBefore, "tokens_after", e.cost.Cost(s.BlocksWith(render(e.cfg))),
		"input_tokens_reported", r.inputTokens, "duration", e.clk.Now().Sub(began)}
	e.otel.observeFold(ctx, r, err)
	level := slog.LevelDebug
	outcome := "ok"
	if err != nil {
		outcome = "error"
		attrs = append(attrs, "error", err)
		if ctx.Err() == nil && !errors.Is(err, ErrClosed) && !errors.Is(err, errDeleted) {
			level = slog.LevelWarn
		}
	} else {
		attrs = append(attrs, "up_to_seq", s.UpToSeq, "facts", len(s.Facts))
	}
	e.log.Log(ctx, level, "strata: fold", append(attrs, "outcome", outcome)...)
}

// sentAt lists when each message was stored, for summarizers that resolve
// relative dates ("tomorrow") against the day a message was written.
func sentAt(msgs []store.Message) []time.Time {
	out := make([]time.Time, len(msgs))
	for i, m := range msgs {
		out[i] = m.CreatedAt
	}
	return out
}

// exclusive runs fn with the session to itself as far as folds go: its
// running fold is cancelled, the cross-process fold lock (when the stores
// have one) is held, no fold of this process saves a summary meanwhile,
// and none that began before saves one after (the generation is bumped).
// Erasure and import rewrite a session's summary under it, so that no fold
// works from what they replace.
func (e *engine) exclusive(ctx context.Context, sessionID string, fn func() error) error {
	e.mu.Lock()
	st := e.acquireLocked(sessionID)
	e.mu.Unlock()
	defer func() { e.mu.Lock(); e.releaseLocked(sessionID, st); e.mu.Unlock() }()
	e.cancelRun(sessionID)
	release, _, err := e.lock(ctx, sessionID)
	if err != nil {
		return err
	}
	defer release()
	st.write.Lock()
	defer st.write.Unlock()
	st.gen++
	err = fn()
	e.forgetBacklog(sessionID)
	return err
}
