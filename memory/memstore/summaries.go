package memstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/record"
)

// Summaries returns the summary store that keeps each session's summary
// in the session itself: it is bounded by the store's sessions and its
// users' bounds (WithMaxSessions, WithMaxSessionsPerUser), never by a
// count of its own, so no tenant's sessions evict another tenant's
// summaries — or with them the values ForgetFact keeps out
// (summary.Forgotten). A summary goes with its session: deleted, evicted
// or re-created. Its Get and Save are the store's Summary and SaveSummary
// (store.Store); its Delete removes the session's summary. Given to
// memory.WithSummaries with this store, it is recognised
// (KeepsSummaries): the manager then uses the store alone.
func (s *Store) Summaries() store.SummaryStore { return &summaryStore{s: s} }

// summaryStore is Store.Summaries.
type summaryStore struct{ s *Store }

// KeepsSummaries reports whether sums is this store's Summaries, so that
// store.Compose uses the store itself.
func (s *Store) KeepsSummaries(sums store.SummaryStore) bool {
	ss, ok := sums.(*summaryStore)
	return ok && ss.s == s
}

// Get implements summary.Store: the store's Summary.
func (ss *summaryStore) Get(ctx context.Context, sessionID string) (*record.Summary, error) {
	return ss.s.Summary(ctx, sessionID)
}

// Save implements summary.Store: the store's SaveSummary.
func (ss *summaryStore) Save(ctx context.Context, sum record.Summary) error {
	return ss.s.SaveSummary(ctx, sum)
}

// Summary implements store.Store: a deep copy of the session's summary,
// nil when it has none.
func (s *Store) Summary(ctx context.Context, sessionID string) (*record.Summary, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[sessionID]
	if sess == nil || sess.sum == nil {
		return nil, nil
	}
	c := sess.sum.Clone()
	return &c, nil
}

// SaveSummary implements store.Store: it refuses a summary for a session
// that is not live in this store, or of another incarnation, with
// store.ErrSessionGone; otherwise it follows the summary.Store contract
// (ErrStale for a lower cursor; CreatedAt kept, UpdatedAt now, Version +
// 1).
func (s *Store) SaveSummary(ctx context.Context, sum record.Summary) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if sum.SessionID == "" {
		return record.ErrNoSessionID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[sum.SessionID]
	if sess == nil || sess.epoch != sum.Epoch {
		return store.ErrSessionGone
	}
	if err := sess.store(sum, time.Now()); err != nil {
		return err
	}
	editJournal(ctx, sess) // a fold's journal record, in the same step
	return nil
}

// Snapshot implements store.Store: Tail's result and the session's
// summary, in one critical section.
func (s *Store) Snapshot(ctx context.Context, sessionID, userID string, n int) (store.Tail, *record.Summary, error) {
	return s.snapshot(ctx, sessionID, userID, n, false)
}

// SnapshotAfterSummary implements store.Store: Snapshot, whose messages
// are the newest n after the summary's cursor when the summary is of the
// session's epoch.
func (s *Store) SnapshotAfterSummary(ctx context.Context, sessionID, userID string, n int) (store.Tail, *record.Summary, error) {
	return s.snapshot(ctx, sessionID, userID, n, true)
}

func (s *Store) snapshot(ctx context.Context, sessionID, userID string, n int, after bool) (store.Tail, *record.Summary, error) {
	if err := ctx.Err(); err != nil {
		return store.Tail{}, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, err := s.owned(sessionID, userID)
	if err != nil {
		return store.Tail{}, nil, err
	}
	s.touch(sess)
	total := len(sess.msgs)
	t := store.Tail{Total: total, Epoch: sess.epoch}
	msgs := sess.msgs
	var sum *record.Summary
	if sess.sum != nil {
		c := sess.sum.Clone()
		sum = &c
		if after && c.Epoch == sess.epoch {
			msgs = msgs[sort.Search(len(msgs), func(i int) bool { return msgs[i].Seq > c.UpToSeq }):]
		}
	}
	if n = min(n, len(msgs)); n > 0 {
		t.Messages = cloneMessages(msgs[len(msgs)-n:])
	}
	return t, sum, nil
}

// TryLockFold implements store.Store with a lease kept in the store: ok is
// false while another caller holds a live one. The lease ends at release,
// at a save through save (which stores the summary as SaveSummary does
// and ends the lease in one critical section, refusing with
// store.ErrStale when the lease is no longer the caller's), or after ttl
// (defaultLeaseTTL when ttl <= 0). The store serves one process: the
// lease coordinates the managers sharing it there.
func (s *Store) TryLockFold(ctx context.Context, sessionID string, ttl time.Duration) (release func(), save func(context.Context, record.Summary) error, ok bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, false, err
	}
	if ttl <= 0 {
		ttl = defaultLeaseTTL
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, held := s.leases[sessionID]; held && now.Before(l.until) {
		return nil, nil, false, nil
	}
	if s.leases == nil {
		s.leases = map[string]lease{}
	}
	s.leaseSeq++
	mine := lease{id: s.leaseSeq, until: now.Add(ttl)}
	s.leases[sessionID] = mine
	end := func() bool { // s.mu held
		if l, held := s.leases[sessionID]; held && l.id == mine.id {
			delete(s.leases, sessionID)
			return true
		}
		return false
	}
	release = func() { s.mu.Lock(); end(); s.mu.Unlock() }
	save = func(ctx context.Context, sum record.Summary) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if sum.SessionID == "" {
			return record.ErrNoSessionID
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if l, held := s.leases[sessionID]; !held || l.id != mine.id || !time.Now().Before(l.until) {
			return fmt.Errorf("memstore: the fold lease of %q was lost: %w", sessionID, store.ErrStale)
		}
		sess := s.sessions[sum.SessionID]
		if sess == nil || sess.epoch != sum.Epoch {
			end()
			return store.ErrSessionGone
		}
		if err := sess.store(sum, time.Now()); err != nil {
			if errors.Is(err, store.ErrStale) {
				end()
			}
			return err
		}
		end()
		return nil
	}
	return release, save, true, nil
}

// defaultLeaseTTL is the longest a fold lease of the store lasts when
// TryLockFold is given no ttl.
const defaultLeaseTTL = 10 * time.Minute

// lease is one fold lease (Store.TryLockFold).
type lease struct {
	id    uint64
	until time.Time
}

// store keeps sum as sess's summary (see Summaries). s.mu must be held.
func (sess *memSession) store(sum record.Summary, now time.Time) error {
	sum = sum.Clone()
	if old := sess.sum; old != nil {
		if sum.UpToSeq < old.UpToSeq {
			return store.ErrStale
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

// Delete implements store.SummaryStore.
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
