package memory

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// The read path: what a load shows, and whether it must wait for a fold
// first. It belongs to the engine because the answer depends on the folds
// running, their expected duration and the cool-down, not only on the
// policy; the Manager adds the span, the counters and the error wrapping.

// assemble builds the history a load of sessionID returns for owner user.
// ErrNotFound and ErrNotOwner come from the store unwrapped; a failing
// summary store degrades instead of failing.
func (e *engine) assemble(ctx context.Context, sessionID, user string) (History, error) {
	v, s, sumErr, err := e.loadView(ctx, sessionID, user, 0)
	switch {
	case err != nil:
		return History{}, err
	case v.total == 0:
		return History{Mode: ModeEmpty}, nil
	case !e.hierarchical():
		return takeLast(v, 2*e.cfg.MaxConversationTurns, ModeTakeLast), nil
	}
	if sumErr != nil {
		e.stats.fallbacks.Add(1)
		e.log.WarnContext(ctx, "strata: summary store failed, degrading", "session_id", sessionID, "error", sumErr)
		return e.pol.degraded(v, v.msgs), nil
	}
	var unfolded []store.Message
	if e.bp != nil || s != nil {
		if unfolded, err = e.after(ctx, sessionID, user, v, cursorOf(s)); err != nil {
			return History{}, err
		}
	}
	cut, why := e.pol.target(v, s, unfolded, false)
	// The view needs the fold (why is triggerLoad): the engine starts or
	// joins one and waits for it a bounded time — the grace when a stale
	// summary can be shown meanwhile, the fold wait for the first summary,
	// never past ctx's deadline. A fold due without being needed is only
	// asked for.
	wait := e.cfg.FoldWait
	if s != nil {
		wait = e.cfg.LoadGrace
	}
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		wait = min(wait, left-min(left/10, 50*time.Millisecond))
	}
	fresh, ok := e.loaded(ctx, sessionID, user, v, s, unfolded, cut, why, wait)
	if cut == 0 || why != triggerLoad {
		return e.pol.show(v, s, unfolded), nil
	}
	ok = ok && fresh.Epoch == v.epoch && fresh.UpToSeq > cursorOf(s)
	if ok && (covers(fresh, cut) || unfolded != nil) {
		i := 0
		for i < len(unfolded) && unfolded[i].Seq <= fresh.UpToSeq {
			i++
		}
		h := e.pol.show(v, fresh, unfolded[i:])
		if h.Mode != ModeHierarchical && h.Mode != ModeAll {
			e.stats.fallbacks.Add(1)
		}
		return h, nil
	}
	e.stats.fallbacks.Add(1)
	if s != nil {
		return e.pol.show(v, s, unfolded), nil
	}
	return e.pol.degraded(v, unfolded), nil
}

// loadView reads what a load starts from: the session's tail and, with
// hierarchical memory on, its usable summary, both from one store call
// (store.Store.SnapshotAfterSummary: one statement for a database). The
// read stops at the summary's cursor: chunked shows every message after
// it and none before; parity's verbatim window is, once folded, exactly
// those messages, everything before them covered by the summary
// (view.recent). The read's limit is the policy's load size plus extra
// (a fold's plan reads further); when more than the limit are unfolded,
// after() reads them all. sumErr: the store read the tail but not the
// summary (store.ErrSummaryUnavailable), the tail is good.
func (e *engine) loadView(ctx context.Context, sessionID, userID string, extra int) (v view, s *summary.Summary, sumErr, err error) {
	defer func() { v.prices = new(tailPrices) }()
	want := e.pol.loadSize()
	if !e.hierarchical() {
		v, err = e.readTail(ctx, sessionID, userID, want)
		return v, nil, nil, err
	}
	n := want + extra + alignSlack
	t, s, err := e.store.SnapshotAfterSummary(ctx, sessionID, userID, n)
	if errors.Is(err, store.ErrSummaryUnavailable) {
		sumErr, s = err, nil
		if v, err = e.readTail(ctx, sessionID, userID, want); err != nil {
			return view{}, nil, nil, err
		}
		return v, nil, sumErr, nil
	}
	if err != nil {
		return view{}, nil, nil, err
	}
	v = view{total: t.Total, epoch: t.Epoch, msgs: t.Messages, all: len(t.Messages) < n}
	if s != nil && s.Epoch == t.Epoch {
		v.from = s.UpToSeq // the read stopped at this cursor, usable summary or not
	}
	s = usable(s, v.epoch)
	if v.from > 0 && e.bp == nil && (s == nil || v.total <= e.cfg.TriggerMessageCount) && len(v.msgs) < min(v.total, want) {
		// Parity shows the newest messages, older ones than the cursor
		// included, at or below its trigger (takeLast) and when the
		// summary cannot be shown (an erasure emptied it).
		if v, err = e.readTail(ctx, sessionID, userID, want); err != nil {
			return view{}, nil, nil, err
		}
	}
	return v, s, nil, nil
}

// readTail fetches at least the newest want messages (plus slack), growing
// the fetch until the aligned window start has a known predecessor or the
// whole session is in hand. Ownership is checked by the store in the same
// step (ErrNotFound, ErrNotOwner).
func (e *engine) readTail(ctx context.Context, sessionID, userID string, want int) (view, error) {
	n := want + alignSlack
	for {
		t, err := e.store.Tail(ctx, sessionID, userID, n)
		if err != nil {
			return view{}, err
		}
		v := view{total: t.Total, epoch: t.Epoch, msgs: t.Messages}
		if len(v.msgs) >= v.total || alignedStart(v.msgs, want) > 0 {
			return v, nil
		}
		n *= 2
	}
}

// after returns the session's messages with Seq > cursor, oldest first:
// from v when v reaches back to the cursor, else read from the store.
func (e *engine) after(ctx context.Context, sessionID, userID string, v view, cursor int64) ([]store.Message, error) {
	if len(v.msgs) == v.total || (len(v.msgs) > 0 && v.msgs[0].Seq <= cursor) || (v.all && cursor >= v.from) {
		i := 0
		for i < len(v.msgs) && v.msgs[i].Seq <= cursor {
			i++
		}
		return v.msgs[i:], nil
	}
	return e.store.Range(ctx, sessionID, userID, cursor, math.MaxInt64, 0)
}

// usableSummary is the stored summary of the session's current epoch, nil
// when there is none, it is empty, or it belongs to a deleted predecessor.
func (e *engine) usableSummary(ctx context.Context, sessionID string, epoch int64) (*summary.Summary, error) {
	s, err := e.store.Summary(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return usable(s, epoch), nil
}

// usable is s when it can be shown for the session incarnation epoch: nil
// when it is empty or belongs to a deleted predecessor.
func usable(s *summary.Summary, epoch int64) *summary.Summary {
	if s.IsEmpty() || s.Epoch != epoch {
		return nil
	}
	return s
}
