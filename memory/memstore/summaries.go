package memstore

import (
	"context"
	"time"

	"github.com/strata-go/strata/summary"
)

// Summaries returns the summary store that keeps each session's summary
// in the session itself: it is bounded by the store's sessions and its
// users' bounds (WithMaxSessions, WithMaxSessionsPerUser), never by a
// count of its own, so no tenant's sessions evict another tenant's
// summaries — or with them the values ForgetFact keeps out
// (summary.Forgotten). A summary goes with its session: deleted, evicted
// or re-created. Save refuses a summary for a session that is not live
// in this store, or of another incarnation, with summary.ErrSessionGone;
// otherwise it follows the summary.Store contract (ErrStale for a lower
// cursor; CreatedAt kept, UpdatedAt now, Version + 1). Forget and Import
// change a session's messages and its summary in one critical section
// when the manager uses this store (ForgetsSummariesOf,
// ImportsSummariesOf). Get returns a deep copy. Like the store (no
// FoldLocker), it serves one Manager: folds and erasures are coordinated
// within a manager.
func (s *Store) Summaries() summary.Store { return &summaryStore{s: s} }

// summaryStore is Store.Summaries.
type summaryStore struct{ s *Store }

// own reports whether sums is this store's summary store.
func (s *Store) own(sums summary.Store) bool {
	ss, ok := sums.(*summaryStore)
	return ok && ss.s == s
}

// Get implements summary.Store.
func (ss *summaryStore) Get(ctx context.Context, sessionID string) (*summary.Summary, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ss.s.mu.Lock()
	defer ss.s.mu.Unlock()
	sess := ss.s.sessions[sessionID]
	if sess == nil || sess.sum == nil {
		return nil, nil
	}
	c := sess.sum.Clone()
	return &c, nil
}

// Save implements summary.Store.
func (ss *summaryStore) Save(ctx context.Context, sum summary.Summary) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if sum.SessionID == "" {
		return summary.ErrNoSessionID
	}
	ss.s.mu.Lock()
	defer ss.s.mu.Unlock()
	sess := ss.s.sessions[sum.SessionID]
	if sess == nil || sess.epoch != sum.Epoch {
		return summary.ErrSessionGone
	}
	if err := sess.store(sum, time.Now()); err != nil {
		return err
	}
	editJournal(ctx, sess) // a fold's journal record, in the same step
	return nil
}

// store keeps sum as sess's summary (see Summaries). s.mu must be held.
func (sess *memSession) store(sum summary.Summary, now time.Time) error {
	sum = sum.Clone()
	if old := sess.sum; old != nil {
		if sum.UpToSeq < old.UpToSeq {
			return summary.ErrStale
		}
		sum.CreatedAt, sum.Version = old.CreatedAt, old.Version+1
	} else {
		if sum.CreatedAt.IsZero() {
			sum.CreatedAt = now
		}
		sum.Version = 1
	}
	sum.UpdatedAt = now
	sess.sum = &sum
	return nil
}

// Delete implements summary.Store.
func (ss *summaryStore) Delete(ctx context.Context, sessionID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ss.s.mu.Lock()
	defer ss.s.mu.Unlock()
	if sess := ss.s.sessions[sessionID]; sess != nil {
		sess.sum = nil
	}
	return nil
}
