package memory

import (
	"sync"

	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// backlogPolicy is a policy that shows every message its summary does not
// cover (chunked). Its plans and views need those messages; it folds them
// incrementally (unless Config.FoldMode is "full"); and it tracks each
// session's backlog between folds, kept up to date by this process's
// saves and folds, so that most saves need not read the session to know
// that no fold is due. The engine tells it what it reads, saves and folds.
type backlogPolicy interface {
	policy
	// incremental reports whether a fold sends only the messages after the
	// summary's cursor (with the summary) rather than all of them.
	incremental() bool
	// seed tracks a session from a load's read, unless already tracked.
	seed(sessionID string, v view, s *summary.Summary, unfolded []store.Message)
	// measured tracks a session from a fold plan's read.
	measured(sessionID string, v view, s *summary.Summary, unfolded []store.Message)
	// saved adds a save to the session's backlog and reports whether a
	// fold may be due.
	saved(sessionID string, res store.AppendResult, msgs []store.Message) bool
	// folded takes a stored fold's messages out of the session's backlog.
	folded(sessionID string, epoch int64, covered int, existing, sum *summary.Summary, unfolded []store.Message)
	// trackedDue reports whether the session is tracked and its backlog
	// fires a trigger.
	trackedDue(sessionID string) (due, ok bool)
	// forget stops tracking the session (deleted, replaced, rewritten).
	forget(sessionID string)
}

// backlogs are the tracked backlogs of a chunked policy's sessions.
type backlogs struct {
	mu sync.Mutex
	m  map[string]tracked // by session
}

func newBacklogs() *backlogs { return &backlogs{m: map[string]tracked{}} }

// forget stops tracking the session.
func (c chunked) forget(sessionID string) {
	c.bl.mu.Lock()
	defer c.bl.mu.Unlock()
	delete(c.bl.m, sessionID)
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

// newTracked is the record of a read: v, the usable summary s and the
// messages after its cursor.
func (c chunked) newTracked(v view, s *summary.Summary, unfolded []store.Message) tracked {
	return tracked{epoch: v.epoch, covered: v.total - len(unfolded), total: v.total, backlog: c.backlogOf(v, s, unfolded)}
}

// maxTracked bounds the backlogs kept; past it they are all forgotten
// (each session's next save plans a fold again, and tracks anew).
const maxTracked = 10_000

// measured records a session's backlog as a fold plan measured it: v, the
// usable summary s and the messages after its cursor. Saves that reported
// a larger count meanwhile appended after the plan's read: their messages
// still count, and the record is marked partial (their turns and tokens
// are not in it).
func (c chunked) measured(sessionID string, v view, s *summary.Summary, unfolded []store.Message) {
	t := c.newTracked(v, s, unfolded)
	c.bl.mu.Lock()
	defer c.bl.mu.Unlock()
	c.bl.remeasureLocked(sessionID, t)
}

// remeasureLocked replaces a session's record by t, measured by a read,
// keeping the larger count of saves reported since. Callers hold b.mu.
func (b *backlogs) remeasureLocked(sessionID string, t tracked) {
	if old, ok := b.m[sessionID]; ok && old.epoch == t.epoch && old.total > t.total {
		t.total, t.partial = old.total, true
		t.messages = t.total - t.covered
	}
	b.trackLocked(sessionID, t)
}

func (b *backlogs) trackLocked(sessionID string, t tracked) {
	if len(b.m) >= maxTracked {
		clear(b.m)
	}
	b.m[sessionID] = t
}

// seed starts tracking a session's backlog from what a load read (v, its
// usable summary s and the messages after its cursor) when this process
// does not track it yet, so the session's next saves need not plan a fold
// to learn it. A tracked session is left alone: its record is at least as
// new as the load's read.
func (c chunked) seed(sessionID string, v view, s *summary.Summary, unfolded []store.Message) {
	known := func() bool {
		t, ok := c.bl.m[sessionID]
		return ok && t.epoch == v.epoch && !t.countOnly
	}
	c.bl.mu.Lock()
	k := known()
	c.bl.mu.Unlock()
	if k {
		return
	}
	fresh := c.newTracked(v, s, unfolded)
	c.bl.mu.Lock()
	defer c.bl.mu.Unlock()
	if known() {
		return // a plan or another load was first
	}
	c.bl.remeasureLocked(sessionID, fresh)
}

// trackedDue reports whether the session is tracked (ok) and, if
// so, whether its backlog fires a trigger. A partial record, which may
// undercount turns and tokens, is not ok.
func (c chunked) trackedDue(sessionID string) (due, ok bool) {
	c.bl.mu.Lock()
	defer c.bl.mu.Unlock()
	t, ok := c.bl.m[sessionID]
	if !ok || t.partial || t.countOnly {
		return false, false
	}
	return c.due(t.backlog), true
}

// folded updates a session's tracked backlog after a fold that planned
// from covered messages covered and stored sum: the folded messages (the
// first of unfolded, up to sum's cursor) leave the backlog and the summary
// replaces the old one (existing) in its tokens, so the session's next
// saves need not plan again to learn that the fold happened. A record that
// does not descend from the fold's plan (re-created session, or tracked
// anew since) is left alone.
func (c chunked) folded(sessionID string, epoch int64, covered int, existing, sum *summary.Summary, unfolded []store.Message) {
	n := 0
	for n < len(unfolded) && unfolded[n].Seq <= sum.UpToSeq {
		n++
	}
	before := c.backlogOf(view{}, existing, unfolded[:n])
	after := c.backlogOf(view{}, sum, nil)
	c.bl.mu.Lock()
	defer c.bl.mu.Unlock()
	t, ok := c.bl.m[sessionID]
	if !ok || t.epoch != epoch || t.countOnly || t.covered != covered {
		return
	}
	t.covered += n
	t.messages = max(t.total-t.covered, 0)
	t.turns = max(t.turns-before.turns, 0)
	t.tokens = max(t.tokens-before.tokens+after.tokens, 0)
	c.bl.m[sessionID] = t
}

// saved reports whether a save that appended msgs (res) may need a fold.
// With the session's backlog tracked since its last plan it adds the save
// to it and asks the policy; a chunked session then reads nothing until its
// backlog fires a trigger. Untracked (or re-created) sessions are due: the
// fold plans and tracks them. The count of unfolded messages comes from the
// store, so appends by other processes count too; their tokens and turns do
// not, which can only delay a token or safety fold until this process plans
// again (a load whose view is over its budget asks for one anyway).
func (c chunked) saved(sessionID string, res store.AppendResult, msgs []store.Message) bool {
	tokens := c.cost.Cost(chatMessages(msgs)) // priced outside the lock
	c.bl.mu.Lock()
	defer c.bl.mu.Unlock()
	t, ok := c.bl.m[sessionID]
	if !ok || t.epoch != res.Epoch || t.countOnly {
		// Due: the fold plans and measures the backlog. Keep the count, so
		// that the plan knows of messages appended after its read.
		if !ok || t.epoch != res.Epoch {
			t = tracked{epoch: res.Epoch, countOnly: true}
		}
		t.total = max(t.total, res.Total)
		c.bl.trackLocked(sessionID, t)
		return true
	}
	// Saves of one session may report here out of order: the count only
	// grows within an epoch, so the larger one is the newer.
	t.total = max(t.total, res.Total)
	t.messages = t.total - t.covered
	t.turns += userTurns(msgs)
	t.tokens += tokens
	c.bl.trackLocked(sessionID, t)
	return c.due(t.backlog)
}
