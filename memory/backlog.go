package memory

import (
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// backlogPolicy is a policy that shows every message its summary does not
// cover (chunked). Its plans and views need those messages; it folds them
// incrementally (unless Config.FoldMode is "full"); and the engine tracks
// each session's backlog between folds on the session's record (slot.bl),
// kept up to date by this process's saves and folds, so that most saves
// need not read the session to know that no fold is due. The policy
// measures and judges backlogs; the engine keeps them.
type backlogPolicy interface {
	policy
	// incremental reports whether a fold sends only the messages after the
	// summary's cursor (with the summary) rather than all of them.
	incremental() bool
	// track measures the backlog of a read: v, the usable summary s and the
	// messages after its cursor.
	track(v view, s *summary.Summary, unfolded []store.Message) tracked
	// backlogOf measures the backlog of a summary and messages after it.
	backlogOf(v view, s *summary.Summary, unfolded []store.Message) backlog
	// due reports whether a backlog fires a trigger.
	due(b backlog) bool
	// saveTokens prices the messages a save appended.
	saveTokens(msgs []store.Message) int
}

// tracked is a session's backlog as of its last fold plan (or, before the
// first, the first load that read it), kept up to date by this process's
// saves and folds: backlog.messages is always total − covered.
type tracked struct {
	epoch   int64 // the session incarnation it belongs to
	covered int   // messages the summary covers
	total   int   // the largest message count read or saved
	// partial: saves reported messages the plan did not read, whose turns
	// and tokens the plan's backlog lacks (they only count messages).
	partial bool
	// countOnly: nothing has measured the backlog yet, only total is
	// known (from saves that came before the first plan or load).
	countOnly bool
	backlog
}

// track is the record of a read: v, the usable summary s and the messages
// after its cursor.
func (c chunked) track(v view, s *summary.Summary, unfolded []store.Message) tracked {
	return tracked{epoch: v.epoch, covered: v.total - len(unfolded), total: v.total, backlog: c.backlogOf(v, s, unfolded)}
}

func (c chunked) saveTokens(msgs []store.Message) int { return c.cost.Cost(chatMessages(msgs)) }

// measured records a session's backlog as a fold plan measured it: v, the
// usable summary s and the messages after its cursor. Saves that reported
// a larger count meanwhile appended after the plan's read: their messages
// still count, and the record is marked partial (their turns and tokens
// are not in it).
func (e *engine) measured(sessionID string, v view, s *summary.Summary, unfolded []store.Message) {
	t := e.bp.track(v, s, unfolded) // priced outside the lock
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.acquireLocked(sessionID)
	st.trackLocked(t)
	e.releaseLocked(sessionID, st)
}

// saveDue reports whether a save that appended msgs (res) may need a fold:
// not while the session cools down after a failed fold; else always for a
// policy that does not track backlogs (parity folds after every save past
// the trigger), and as the tracked backlog says for one that does. With
// the session's backlog tracked since its last plan it adds the save to
// it and asks the policy; a chunked session then reads nothing until its
// backlog fires a trigger. Untracked (or re-created) sessions are due: the
// fold plans and tracks them. The count of unfolded messages comes from
// the store, so appends by other processes count too; their tokens and
// turns do not, which can only delay a token or safety fold until this
// process plans again (a load whose view is over its budget asks for one
// anyway).
func (e *engine) saveDue(sessionID string, res store.AppendResult, msgs []store.Message) bool {
	tokens := 0
	if e.bp != nil {
		tokens = e.bp.saveTokens(msgs) // priced outside the lock
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.coolingLocked(e.sessions[sessionID]) {
		return false
	}
	if e.bp == nil {
		return true
	}
	st := e.acquireLocked(sessionID)
	defer e.releaseLocked(sessionID, st)
	turns := userTurns(msgs)
	st.logSaveLocked(loggedSave{epoch: res.Epoch, total: res.Total, n: len(msgs), turns: turns, tokens: tokens})
	t, ok := st.bl, st.tracking
	if !ok || t.epoch != res.Epoch || t.countOnly {
		// Due: the fold plans and measures the backlog. Keep the count, so
		// that the plan knows of messages appended after its read.
		if !ok || t.epoch != res.Epoch {
			t = tracked{epoch: res.Epoch, countOnly: true}
		}
		t.total = max(t.total, res.Total)
		st.bl, st.tracking = t, true
		return true
	}
	// Saves of one session may report here out of order: the count only
	// grows within an epoch, so the larger one is the newer.
	t.total = max(t.total, res.Total)
	t.messages = t.total - t.covered
	t.turns += turns
	t.tokens += tokens
	st.bl = t
	return e.bp.due(t.backlog)
}

// trackedDue reports whether the session's backlog is tracked (ok) and,
// if so, whether it fires a trigger.
func (e *engine) trackedDue(sessionID string) (due, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.trackedDueLocked(e.sessions[sessionID])
}

// trackedDueLocked is trackedDue on the session's record (nil: none).
// A partial record, which may undercount turns and tokens, is not ok.
// Callers hold e.mu.
func (e *engine) trackedDueLocked(st *slot) (due, ok bool) {
	if e.bp == nil || st == nil || !st.tracking || st.bl.partial || st.bl.countOnly {
		return false, false
	}
	return e.bp.due(st.bl.backlog), true
}

// folded updates a session's tracked backlog after a fold that planned
// from covered messages covered and stored sum: the folded messages (the
// first of unfolded, up to sum's cursor) leave the backlog and the summary
// replaces the old one (existing) in its tokens, so the session's next
// saves need not plan again to learn that the fold happened. A record that
// does not descend from the fold's plan (re-created session, or tracked
// anew since) is left alone.
func (e *engine) folded(sessionID string, epoch int64, covered int, existing, sum *summary.Summary, unfolded []store.Message) {
	n := 0
	for n < len(unfolded) && unfolded[n].Seq <= sum.UpToSeq {
		n++
	}
	before := e.bp.backlogOf(view{}, existing, unfolded[:n])
	after := e.bp.backlogOf(view{}, sum, nil)
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.sessions[sessionID]
	if st == nil || !st.tracking {
		return
	}
	t := st.bl
	if t.epoch != epoch || t.countOnly || t.covered != covered {
		return
	}
	t.covered += n
	t.messages = max(t.total-t.covered, 0)
	t.turns = max(t.turns-before.turns, 0)
	t.tokens = max(t.tokens-before.tokens+after.tokens, 0)
	st.bl = t
}

// forgetBacklog stops tracking the session's backlog (deleted, replaced
// or rewritten): its next save plans a fold again.
func (e *engine) forgetBacklog(sessionID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if st := e.sessions[sessionID]; st != nil && st.tracking {
		st.bl, st.tracking, st.saves = tracked{}, false, nil
		st.refs++ // released at once: drops the record when nothing else keeps it
		e.releaseLocked(sessionID, st)
	}
}
