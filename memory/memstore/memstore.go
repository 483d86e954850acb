// Package memstore is the in-memory session store: the store behind
// memory.NewInMemoryStore, for tests, demos and single-process tools. Use it
// directly to bound it (WithMaxSessions) or to see its evictions
// (WithLogger); use the PostgreSQL store of package db in production.
package memstore

import (
	"cmp"
	"container/list"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/memory/store"
)

// defaultMaxSessions is how many sessions an Store holds when
// WithMaxSessions is not given (or is given n <= 0). Past it, creating a
// session evicts the least recently used one.
const defaultMaxSessions = 10_000

// Option configures the store New returns.
type Option func(*Store)

// WithMaxSessions bounds the store to n sessions (n <= 0: 10 000, the
// default). When a new session would exceed the bound, the least recently
// used session (by create, append, tail or range of its owner) is evicted
// with all its messages, and a warning is logged.
func WithMaxSessions(n int) Option {
	return func(s *Store) {
		if n > 0 {
			s.maxSessions = n
		}
	}
}

// WithLogger sets the logger that reports evictions. By default the
// store logs nothing.
func WithLogger(l *slog.Logger) Option {
	return func(s *Store) {
		if l != nil {
			s.log = l
		}
	}
}

// Store keeps sessions in process memory (see New).
type Store struct {
	maxSessions int
	log         *slog.Logger

	mu       sync.Mutex
	sessions map[string]*memSession
	byUser   map[string]map[string]*memSession
	lru      list.List // of *memSession, most recently used first
	lastSeq  int64     // store-wide, so no Seq is ever reused
	epoch    int64     // store-wide, so no Epoch is ever reused
	activity int64     // store-wide tick ordering listings exactly
}

// memSession is one incarnation of a session. Its fields are guarded by
// Store.mu.
type memSession struct {
	id, owner    string
	epoch        int64
	created      time.Time
	lastActivity time.Time
	activity     int64           // tick of the creation or of the latest append
	firstUser    string          // content of the first user message
	hasUser      bool            // whether firstUser is set
	msgs         []store.Message // oldest first; msgs[i].Seq strictly increasing
	elem         *list.Element
}

var _ store.Store = (*Store)(nil)

// New returns an empty store that keeps sessions in process memory. It is a development store, for tests, demos and single-process tools:
// nothing survives a restart, folds are coordinated within the process only
// (it is no FoldLocker), and it is bounded (10 000 sessions unless
// WithMaxSessions says otherwise), evicting the least recently used session
// when full. An evicted session is gone like a deleted one: its id is free,
// and a session re-created under it gets a new Epoch. Use the PostgreSQL
// store of package db in production.
//
// Within a session it keeps every message, stores tool calls and results
// losslessly, and answers Tail and Range without copying the whole
// history. It is safe for concurrent use; each operation checks ownership
// and does its work in one critical section.
func New(opts ...Option) *Store {
	s := &Store{
		maxSessions: defaultMaxSessions,
		log:         slog.New(slog.DiscardHandler),
		sessions:    map[string]*memSession{},
		byUser:      map[string]map[string]*memSession{},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, sessionID, userID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[sessionID] != nil {
		return store.ErrSessionExists
	}
	s.create(sessionID, userID, time.Now())
	return nil
}

// Append implements store.Store.
func (s *Store) Append(ctx context.Context, sessionID, userID string, msgs ...store.Message) (store.AppendResult, error) {
	if err := ctx.Err(); err != nil {
		return store.AppendResult{}, err
	}
	stored := make([]store.Message, len(msgs))
	for i, m := range msgs {
		if err := m.Validate(0); err != nil {
			return store.AppendResult{}, fmt.Errorf("message %d: %w", i, err)
		}
		stored[i] = m.Clone()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Sessions are made by Create only: the ownership check and the write
	// below happen in this one critical section.
	sess, err := s.owned(sessionID, userID)
	if err != nil {
		return store.AppendResult{}, err
	}
	now := time.Now()
	s.lru.MoveToFront(sess.elem)
	if len(stored) == 0 {
		return store.AppendResult{Total: len(sess.msgs), Epoch: sess.epoch}, nil
	}
	for i := range stored {
		s.lastSeq++
		stored[i].Seq, stored[i].UserID, stored[i].CreatedAt = s.lastSeq, userID, now
		if !sess.hasUser && stored[i].Role == store.RoleUser {
			sess.firstUser, sess.hasUser = stored[i].Content, true
		}
	}
	sess.msgs = append(sess.msgs, stored...)
	s.activity++
	sess.lastActivity, sess.activity = now, s.activity
	return store.AppendResult{Total: len(sess.msgs), LastSeq: s.lastSeq, Epoch: sess.epoch}, nil
}

// Tail implements store.Store.
func (s *Store) Tail(ctx context.Context, sessionID, userID string, n int) (store.Tail, error) {
	if err := ctx.Err(); err != nil {
		return store.Tail{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, err := s.owned(sessionID, userID)
	if err != nil {
		return store.Tail{}, err
	}
	s.lru.MoveToFront(sess.elem)
	total := len(sess.msgs)
	t := store.Tail{Total: total, Epoch: sess.epoch}
	if n = min(n, total); n > 0 {
		t.Messages = cloneMessages(sess.msgs[total-n:])
	}
	return t, nil
}

// Range implements store.Store.
func (s *Store) Range(ctx context.Context, sessionID, userID string, afterSeq, throughSeq int64, limit int) ([]store.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, err := s.owned(sessionID, userID)
	if err != nil {
		return nil, err
	}
	s.lru.MoveToFront(sess.elem)
	if throughSeq <= afterSeq {
		return nil, nil
	}
	lo := sort.Search(len(sess.msgs), func(i int) bool { return sess.msgs[i].Seq > afterSeq })
	hi := sort.Search(len(sess.msgs), func(i int) bool { return sess.msgs[i].Seq > throughSeq })
	if limit > 0 && hi-lo > limit {
		hi = lo + limit
	}
	if lo == hi {
		return nil, nil
	}
	return cloneMessages(sess.msgs[lo:hi]), nil
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, sessionID, userID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, err := s.owned(sessionID, userID)
	if err != nil {
		return err
	}
	s.remove(sess)
	return nil
}

// Sessions implements store.Store. Sessions whose latest activity is the
// same instant are listed in the order their activity happened, newest
// first.
func (s *Store) Sessions(ctx context.Context, userID string, limit, offset int) ([]store.SessionInfo, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	type entry struct {
		info     store.SessionInfo
		activity int64
	}
	s.mu.Lock()
	all := make([]entry, 0, len(s.byUser[userID]))
	for _, sess := range s.byUser[userID] {
		info := store.SessionInfo{SessionID: sess.id, UserID: sess.owner, MessageCount: len(sess.msgs),
			CreatedAt: sess.created, LastActivity: sess.lastActivity, Preview: text.Preview(sess.firstUser, sess.hasUser)}
		all = append(all, entry{info, sess.activity})
	}
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b entry) int {
		if c := b.info.LastActivity.Compare(a.info.LastActivity); c != 0 {
			return c
		}
		return cmp.Compare(b.activity, a.activity)
	})
	total := len(all)
	offset = max(offset, 0)
	if offset >= total {
		return nil, total, nil
	}
	all = all[offset:]
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	page := make([]store.SessionInfo, len(all))
	for i, e := range all {
		page[i] = e.info
	}
	return page, total, nil
}

// owned returns the session if userID owns it, ErrNotFound when there is
// none and store.ErrNotOwner when another user owns it. s.mu must be held.
func (s *Store) owned(sessionID, userID string) (*memSession, error) {
	sess := s.sessions[sessionID]
	switch {
	case sess == nil:
		return nil, store.ErrNotFound
	case sess.owner != userID:
		return nil, store.ErrNotOwner
	}
	return sess, nil
}

// create makes a new, empty incarnation of sessionID owned by userID,
// evicting the least recently used sessions past the bound. The id must be
// free. s.mu must be held.
func (s *Store) create(sessionID, userID string, now time.Time) *memSession {
	for len(s.sessions) >= s.maxSessions {
		old := s.lru.Back().Value.(*memSession)
		s.remove(old)
		s.log.Warn("strata: in-memory store full, evicted the least recently used session",
			"session_id", old.id, "user_id", old.owner, "messages", len(old.msgs),
			"max_sessions", s.maxSessions)
	}
	s.epoch++
	s.activity++
	sess := &memSession{id: sessionID, owner: userID, epoch: s.epoch, created: now,
		lastActivity: now, activity: s.activity}
	sess.elem = s.lru.PushFront(sess)
	s.sessions[sessionID] = sess
	mine := s.byUser[userID]
	if mine == nil {
		mine = map[string]*memSession{}
		s.byUser[userID] = mine
	}
	mine[sessionID] = sess
	return sess
}

// remove forgets a session and its messages. s.mu must be held.
func (s *Store) remove(sess *memSession) {
	delete(s.sessions, sess.id)
	s.lru.Remove(sess.elem)
	if mine := s.byUser[sess.owner]; mine != nil {
		delete(mine, sess.id)
		if len(mine) == 0 {
			delete(s.byUser, sess.owner)
		}
	}
}

func cloneMessages(in []store.Message) []store.Message {
	out := make([]store.Message, len(in))
	for i, m := range in {
		out[i] = m.Clone()
	}
	return out
}
