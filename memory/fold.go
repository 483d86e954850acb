package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/strata-go/strata/internal/backoff"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// foldPlan is what a fold works from: the session's view, the messages
// after the summary's cursor (for policies that want them), and the cursor
// the summary must reach (0: nothing to fold) with the trigger's name.
type foldPlan struct {
	v        view
	unfolded []store.Message
	cut      int64
	why      trigger
}

// plan reads the session as a load does (one statement when the message
// store reads the summaries too) and asks the policy how far to fold. It
// returns the usable summary beside the plan.
func (e *engine) plan(ctx context.Context, sessionID, userID string, why trigger) (*summary.Summary, foldPlan, error) {
	extra := 0
	if e.bp != nil {
		// Read the messages a fold that waited for its slot has to cover
		// in the same statement (Config.queueBound).
		extra = e.cfg.queueBound()
	}
	v, existing, sumErr, err := e.loadView(ctx, sessionID, userID, extra)
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
	p.cut, p.why = e.pol.target(v, existing, p.unfolded, why != triggerLoad)
	if e.bp != nil {
		e.measured(sessionID, v, existing, p.unfolded)
	}
	return existing, p, nil
}

// fold reads the session, asks the policy how far to fold, and folds: it
// returns the summary now stored (the existing one when nothing was to do).
// Its steps: plan (under the cross-process lease), pick the messages to
// send (foldInput), summarize and save them chunk by chunk (foldChunks),
// then account for the fold.
func (e *engine) fold(ctx context.Context, sessionID, userID string, why trigger, st *slot, r *foldRun) (_ *summary.Summary, err error) {
	ctx, span := e.otel.startSpan(ctx, "strata.memory.fold", sessionID)
	span.SetAttributes(attribute.String("memory.fold.trigger", string(why)))
	defer func() { endSpan(span, err) }()
	if e.planFirst(sessionID, why) {
		// Plan first, without the lease: a save of a session whose backlog
		// this process does not know may find nothing to fold, and taking
		// and releasing the lease costs two writes. A fold that is due is
		// planned again under the lease: another process may have folded
		// meanwhile.
		if existing, p, err := e.plan(ctx, sessionID, userID, why); err != nil || p.cut == 0 {
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
	existing, p, err := e.plan(ctx, sessionID, userID, why)
	if err != nil || p.cut == 0 {
		return existing, err
	}
	r.cut.Store(p.cut)
	if !e.coolReady(sessionID) {
		return nil, errCoolingDown
	}
	j := &foldJob{sessionID: sessionID, userID: userID, st: st, gen: gen, epoch: p.v.epoch, saveLast: saveRelease,
		incremental: e.bp != nil && e.bp.incremental() && existing != nil}
	base := existing
	if base == nil {
		// A summary an erasure emptied (untraced, see summary.Erase) is
		// rebuilt from the surviving messages through its cursor at least:
		// its cursor and its Forgotten list carry over, nothing else.
		if base, err = e.emptied(ctx, sessionID, j.epoch); err != nil {
			return nil, err
		}
		if base != nil && base.UpToSeq > p.cut {
			p.cut = base.UpToSeq
		}
	}
	msgs, err := e.foldInput(ctx, j, existing, p)
	if err != nil {
		return nil, err
	}
	if why == triggerLoad {
		e.stats.lazyFolds.Add(1)
	} else {
		e.stats.backgroundFolds.Add(1)
	}
	j.began = time.Now()
	j.rec = foldRecord{trigger: p.why, messages: len(msgs), tokensBefore: e.cost.Cost(summary.BlocksWith(existing, render(e.cfg))) + e.cost.Cost(chatMessages(msgs)),
		epoch: j.epoch, from: msgs[0].Seq, to: msgs[len(msgs)-1].Seq, began: j.began, since: j.began}
	cur, stale, err := e.foldChunks(ctx, j, base, msgs)
	switch {
	case stale: // another replica stored a newer summary
		e.journalFold(ctx, sessionID, j.rec, err, "stale")
		return e.usableSummary(ctx, sessionID, j.epoch)
	case err != nil:
		return nil, err
	}
	if p.unfolded != nil {
		e.folded(sessionID, j.epoch, p.v.total-len(p.unfolded), existing, cur, p.unfolded)
	}
	e.coolSucceed(sessionID)
	e.observeDuration(time.Since(j.began))
	e.stats.folds.Add(1)
	j.rec.finish(e, ctx, sessionID, j.began, cur, nil)
	return cur, nil
}

// foldJob is one fold once planned under the lease.
type foldJob struct {
	sessionID, userID string
	st                *slot
	gen               uint64 // the session's generation when the fold planned
	epoch             int64  // the session incarnation folded
	// incremental: send only the messages after the summary's cursor, with
	// the summary.
	incremental bool
	// saveLast is the lease's save-and-release for the fold's last save
	// (store.Store.TryLockFold), nil when the lease offers none.
	saveLast func(context.Context, summary.Summary) error
	began    time.Time
	rec      foldRecord
}

// foldInput returns the messages the fold sends up to the plan's cut: the
// ones the plan already read when they are what the fold needs (the
// messages after the summary's cursor, or all when there is no summary),
// else read from the store — from the cursor when incremental, from the
// start otherwise.
func (e *engine) foldInput(ctx context.Context, j *foldJob, existing *summary.Summary, p foldPlan) ([]store.Message, error) {
	var msgs []store.Message
	if p.unfolded != nil && (j.incremental || existing == nil) {
		i := 0
		for i < len(p.unfolded) && p.unfolded[i].Seq <= p.cut {
			i++
		}
		msgs = p.unfolded[:i]
	} else {
		var from int64
		if j.incremental {
			from = existing.UpToSeq
		}
		var err error
		if msgs, err = e.store.Range(ctx, j.sessionID, j.userID, from, p.cut, 0); err != nil {
			return nil, fmt.Errorf("read messages to fold: %w", err)
		}
	}
	if len(msgs) == 0 {
		return nil, errors.New("memory: no messages to fold")
	}
	return msgs, nil
}

// foldChunks summarizes msgs into existing in chunks of bounded input
// (Config.MaxFoldInputTokens; parity's folds too), each after the first
// continuing the summary incrementally, and saves each chunk's result that
// moves the stored cursor on, so that progress survives a later failure;
// every saved summary is announced to the fold observers. A chunk that
// ends at or before the stored cursor (a re-summarization from the
// originals, as parity's) is carried to the next chunk unsaved: saving it
// would record no progress and show loads, until the fold ends, a
// narrative of that chunk alone in place of the stored one. It returns the
// last summary saved. stale reports that a save found a newer summary
// stored by another replica.
func (e *engine) foldChunks(ctx context.Context, j *foldJob, existing *summary.Summary, msgs []store.Message) (cur *summary.Summary, stale bool, err error) {
	cur = existing
	saved := existing // the summary stored last: what a save's record compares with
	var stored int64  // the stored cursor of this incarnation
	if existing != nil && existing.Epoch == j.epoch {
		stored = existing.UpToSeq
	}
	var pending []summary.Fact // the findings of the chunks carried unsaved
	from, end := 0, 0          // msgs[from:end]: the messages of the chunks not saved yet
	parts := chunks(msgs, e.cfg.MaxFoldInputTokens, e.cost)
	for i, chunk := range parts {
		req := summary.Request{SessionID: j.sessionID, Messages: chatMessages(chunk), Seqs: seqsOf(chunk), SentAt: sentAt(chunk), Existing: cur,
			Incremental: j.incremental || i > 0, MaxNarrativeTokens: e.cfg.MaxNarrativeTokens}
		e.stats.summarizerCalls.Add(1)
		j.rec.calls++
		svc, fallback := e.summarizerFor(ctx, j)
		called := time.Now()
		res, err := e.summarize(ctx, svc, req)
		j.rec.count(e, ctx, svc, fallback, req, res, err, time.Since(called))
		if err == nil && res.IsEmpty() {
			err = summary.ErrEmptyReply
		}
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, ErrClosed) { // a fold Close abandoned did not fail
				e.stats.foldFailures.Add(1)
				e.coolFail(j.sessionID)
			}
			j.rec.finish(e, ctx, j.sessionID, j.began, saved, err)
			return nil, false, fmt.Errorf("summarize: %w", err)
		}
		next := suppressForgotten(summary.Apply(cur, j.sessionID, j.epoch, res, chunk[len(chunk)-1].Seq, e.mergeOptions()), chunk)
		cur = &next
		end += len(chunk)
		if i < len(parts)-1 && chunk[len(chunk)-1].Seq <= stored {
			pending = append(pending, res.Facts...)
			continue
		}
		var saveFn func(context.Context, summary.Summary) error // nil: the store's SaveSummary
		if i == len(parts)-1 {
			saveFn = j.saveLast // the last save ends the fold: it may release the lease too
		}
		// The journal record of this save, with the facts it changes, is
		// written in the save's own step where the stores allow it
		// (journal.go), so that no erasure comes between them.
		sctx, journaled := e.journaledSave(ctx, j.sessionID, j.epoch, j.rec.saveRecord(e, saved, &next, append(pending, res.Facts...), msgs[from:end]))
		if err := e.save(sctx, j.st, j.gen, next, saveFn); err != nil {
			if errors.Is(err, summary.ErrStale) {
				return nil, true, err
			}
			j.rec.finish(e, ctx, j.sessionID, j.began, saved, err)
			return nil, false, err
		}
		journaled()
		j.rec.flushed(e)
		saved, pending, from = &next, pending[:0], end
		e.notify(FoldEvent{SessionID: j.sessionID, UserID: j.userID, Summary: next})
	}
	return cur, false, nil
}

// mergeOptions are the ledger's bounds and clock for summary.Apply.
func (e *engine) mergeOptions() summary.MergeOptions {
	return summary.MergeOptions{
		MaxFacts: e.cfg.MaxFacts, MaxValueLen: e.cfg.MaxFactValueLen, MaxPerFamily: e.cfg.MaxFactsPerFamily,
		TokenBudget: e.cfg.FactsTokenBudget, Tokens: e.cfg.Estimator.Estimate, PinnedKeys: e.cfg.PinnedFactKeys,
		MaxNarrativeTokens: e.cfg.MaxNarrativeTokens, ShowPrevious: e.cfg.ShowPreviousValues, Now: time.Now(),
	}
}

// planFirst reports whether a fold should plan before taking the lease:
// when a save asks and the session's tracked backlog does not say a fold is
// due (untracked, or a save that raced a fold). A load asks only when its
// own read found a fold due, and a tracked save only when its backlog fires
// a trigger: those take the lease at once and plan once, under it. So does
// every save under parity, which asks only above its trigger, where each
// save moves the verbatim window and so makes a fold due: planning first
// would read the session twice per fold, to spare the lease's two writes
// only to a save that a running fold already covered.
func (e *engine) planFirst(sessionID string, why trigger) bool {
	if why != triggerSave || e.bp == nil {
		return false
	}
	due, ok := e.trackedDue(sessionID)
	return !ok || !due
}

// save writes s unless the manager is closed, the session was deleted
// (gen changed) or the fold was cancelled since it started, so no late fold
// resurrects a deleted session's summary or writes after Close.
// With saveFn non-nil (the lease's save-and-release, see
// store.Store.TryLockFold) it saves through saveFn instead of SaveSummary.
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
		saveFn = e.store.SaveSummary
	}
	if err := saveFn(ctx, s); err != nil {
		return fmt.Errorf("save summary: %w", err)
	}
	return nil
}

// notify hands a stored summary to the fold observers, in the background.
func (e *engine) notify(ev FoldEvent) {
	for _, fn := range e.obs.folds() {
		_ = e.runner.Go("fold observer", func(ctx context.Context) { fn(ctx, ev) })
	}
}

// lock takes the session's fold lease (store.Store.TryLockFold), waiting
// for another holder's fold at most Config.FoldWait. save, when not nil,
// saves a summary and releases the lease in one step.
func (e *engine) lock(ctx context.Context, sessionID string) (release func(), save func(context.Context, summary.Summary) error, err error) {
	deadline := time.NewTimer(e.cfg.FoldWait)
	defer deadline.Stop()
	retry := backoff.Exp{Base: 20 * time.Millisecond, Ceiling: time.Second}
	for {
		var ok bool
		release, save, ok, err = e.store.TryLockFold(ctx, sessionID, e.cfg.FoldLockTTL)
		if err != nil {
			return nil, nil, fmt.Errorf("fold lock: %w", err)
		}
		if ok {
			return release, save, nil
		}
		t := time.NewTimer(retry.Next())
		select {
		case <-t.C:
		case <-deadline.C:
			t.Stop()
			return nil, nil, errFoldBusy
		case <-ctx.Done():
			t.Stop()
			return nil, nil, ctx.Err()
		}
	}
}

// foldRecord collects what one fold did, for its log record and its
// journal record (journal.go).
type foldRecord struct {
	trigger      trigger
	messages     int
	calls        int
	tokensBefore int

	epoch    int64
	from, to int64 // the first and last message read
	began    time.Time
	// spend is what the calls since the fold's last journal record cost;
	// since is when that record was written (began before one).
	spend foldSpend
	since time.Time
	// budgetRead: spentToday holds the session's spend of the day before
	// the fold (read from its journal once); spentFold is the fold's own.
	budgetRead bool
	spentToday int64
	spentFold  int64
}

func (r foldRecord) finish(e *engine, ctx context.Context, sessionID string, began time.Time, s *summary.Summary, err error) {
	attrs := []any{"session_id", sessionID, "trigger", string(r.trigger), "messages_folded", r.messages,
		"summarizer_calls", r.calls, "tokens_before", r.tokensBefore, "tokens_after", e.cost.Cost(summary.BlocksWith(s, render(e.cfg))),
		"input_tokens_reported", r.spend.in, "output_tokens_reported", r.spend.out, "duration", time.Since(began)}
	e.otel.observeFold(ctx, r, err)
	if err != nil { // a saved summary was journaled with its save
		e.journalFold(ctx, sessionID, r, err, "")
	}
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

// seqsOf lists the messages' sequence numbers (summary.Request.Seqs).
func seqsOf(msgs []store.Message) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.Seq
	}
	return out
}

// emptied returns what a fold keeps of a stored summary of the session
// incarnation epoch that cannot be shown (an erasure emptied it): its
// cursor, Forgotten list and key, creation time and version, without facts
// or narrative; nil when there is none.
func (e *engine) emptied(ctx context.Context, sessionID string, epoch int64) (*summary.Summary, error) {
	s, err := e.store.Summary(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if s == nil || s.Epoch != epoch {
		return nil, nil
	}
	return &summary.Summary{SessionID: s.SessionID, Epoch: s.Epoch, UpToSeq: s.UpToSeq, Forgotten: s.Forgotten,
		ForgetKey: s.ForgetKey, Version: s.Version, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}, nil
}
