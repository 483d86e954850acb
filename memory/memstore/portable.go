package memstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/record"
)

var _ store.Store = (*Store)(nil)

// Import implements store.Store in one critical section: the session
// is created with every message (each keeping its CreatedAt, now when
// zero) or not at all. sum is called with the new epoch and sequence
// numbers; its result, when not nil, is stored as the session's summary
// (Summaries).
func (s *Store) Import(ctx context.Context, sessionID, userID string, msgs []store.Message,
	sum func(epoch int64, seqs []int64) *record.Summary) (store.AppendResult, error) {
	stored, err := prepared(ctx, msgs)
	if err != nil {
		return store.AppendResult{}, err
	}
	s.mu.Lock()
	var evicted []*memSession
	res, err := func() (store.AppendResult, error) {
		if s.sessions[sessionID] != nil {
			return store.AppendResult{}, store.ErrSessionExists
		}
		now := now()
		created := now
		if len(stored) > 0 && !stored[0].CreatedAt.IsZero() && stored[0].CreatedAt.Before(now) {
			created, _ = store.NormalTime(stored[0].CreatedAt)
		}
		sess, ev, err := s.create(sessionID, userID, created)
		evicted = ev
		if err != nil {
			return store.AppendResult{}, err
		}
		seqs := make([]int64, len(stored))
		last := created
		for i := range stored {
			var at time.Time
			if stored[i].CreatedAt.IsZero() {
				at = now
			} else {
				// Validated: within the years every store keeps.
				stored[i].CreatedAt, _ = store.NormalTime(stored[i].CreatedAt)
			}
			s.write(sess, &stored[i], at)
			last = stored[i].CreatedAt
			seqs[i] = sess.lastSeq
		}
		sess.msgs = stored
		sess.lastActivity = last
		if sum != nil {
			if sm := sum(sess.epoch, seqs); sm != nil {
				if err := sess.store(*sm, now); err != nil {
					s.remove(sess)
					return store.AppendResult{}, err
				}
			}
		}
		return store.AppendResult{Total: len(stored), LastSeq: sess.lastSeq, Epoch: sess.epoch}, nil
	}()
	s.mu.Unlock()
	s.evicted(evicted)
	return res, err
}

// Forget implements store.Store in one critical section: every
// message named by seqs is removed, with the tool results answering an
// erased call (store.ToolResultsOf), or, when one of them is not the
// session's, none is (store.ErrUnknownMessage); the session's summary
// (Summaries) is replaced by what clean returns for it.
func (s *Store) Forget(ctx context.Context, sessionID, userID string, seqs []int64,
	clean func(sum *record.Summary, epoch int64, erased []store.Message) *record.Summary) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, err := s.owned(sessionID, userID)
	if err != nil {
		return err
	}
	var erased []store.Message
	for _, q := range seqs {
		i, ok := slices.BinarySearchFunc(sess.msgs, q, func(m store.Message, q int64) int { return cmpSeq(m.Seq, q) })
		if !ok {
			return fmt.Errorf("seq %d: %w", q, store.ErrUnknownMessage)
		}
		if !slices.ContainsFunc(erased, func(m store.Message) bool { return m.Seq == q }) {
			erased = append(erased, sess.msgs[i].Clone())
		}
		for _, r := range store.ToolResultsOf(sess.msgs[i], sess.msgs[i+1:]) {
			if !slices.ContainsFunc(erased, func(m store.Message) bool { return m.Seq == r.Seq }) {
				erased = append(erased, r.Clone())
			}
		}
	}
	if clean != nil {
		var cur *record.Summary
		if sess.sum != nil {
			c := sess.sum.Clone()
			cur = &c
		}
		if next := clean(cur, sess.epoch, erased); next != nil && cur != nil {
			if err := sess.store(*next, time.Now()); err != nil {
				return err
			}
		}
	}
	editJournal(ctx, sess)
	sess.msgs = slices.DeleteFunc(sess.msgs, func(m store.Message) bool {
		return slices.ContainsFunc(erased, func(e store.Message) bool { return e.Seq == m.Seq })
	})
	sess.firstUser, sess.hasUser = "", false
	for _, m := range sess.msgs {
		if m.Role == store.RoleUser {
			sess.firstUser, sess.hasUser = m.Content, true
			break
		}
	}
	return nil
}

func cmpSeq(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
