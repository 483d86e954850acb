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
	"github.com/strata-go/strata/record"
)

// DefaultMaxSessions is how many sessions a Store holds when
// WithMaxSessions is not given (or is given n <= 0).
const DefaultMaxSessions = 10_000

// DefaultMaxSessionsPerUser is how many sessions one user may hold when
// WithMaxSessionsPerUser is not given (or is given n <= 0), or the store's
// bound when that is lower.
const DefaultMaxSessionsPerUser = 1_000

// Option configures the store New returns.
type Option func(*Store)

// WithMaxSessions bounds the store to n sessions (n <= 0: 10 000, the
// default). When a new session would exceed the bound, the least recently
// used session of the same user (by create, append, tail or range of its
// owner) is evicted with all its messages, and a warning is logged; a user
// who holds no session gets store.ErrStoreFull instead. Another user's
// session is never evicted.
func WithMaxSessions(n int) Option {
	return func(s *Store) {
		if n > 0 {
			s.maxSessions = n
		}
	}
}

// WithMaxSessionsPerUser bounds the sessions of one user to n (n <= 0:
// DefaultMaxSessionsPerUser; never above the store's bound). A user at the
// bound who creates a session loses their own least recently used one, as
// with WithMaxSessions, so that no user can fill the store for the others.
func WithMaxSessionsPerUser(n int) Option {
	return func(s *Store) {
		if n > 0 {
			s.maxPerUser = n
		}
	}
}

// WithOnEvict sets a function called, after the store's lock is released,
// with each session the store evicted, e.g. to drop derived data such as a
// catalogue document. It must not block for long: it runs in the Create
// that evicted.
func WithOnEvict(fn func(sessionID, userID string)) Option {
	return func(s *Store) { s.onEvict = fn }
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
	maxPerUser  int
	log         *slog.Logger
	onEvict     func(sessionID, userID string)

	mu       sync.Mutex
	sessions map[string]*memSession
	byUser   map[string]*userSessions
	// retired holds the last seq of removed (deleted, replaced or
	// evicted) session ids, so that an id created again goes on from its
	// predecessor's numbers: no Seq is ever reused for an id. At most
	// maxSessions entries; an entry dropped to keep that bound raises
	// seqFloor, from which every later new session starts.
	retired  map[string]int64
	seqFloor int64
	epoch    int64 // store-wide, so no Epoch is ever reused
	// leases are the sessions' fold leases (TryLockFold), by session id;
	// leaseSeq numbers them.
	leases   map[string]lease
	leaseSeq uint64
	activity int64 // store-wide tick ordering listings exactly
}

// memSession is one incarnation of a session. Its fields are guarded by
// Store.mu.
type memSession struct {
	// sum is the session's summary (Store.Summaries), nil when none.
	sum *record.Summary
	// journal is the session's fold journal (store.Journaler).
	journal store.Journal

	id, owner    string
	epoch        int64
	lastSeq      int64 // the last seq drawn for the id: seqs are per session
	created      time.Time
	lastActivity time.Time
	activity     int64           // tick of the creation or of the latest append
	firstUser    string          // content of the first user message
	hasUser      bool            // whether firstUser is set
	msgs         []store.Message // oldest first; msgs[i].Seq strictly increasing
	elem         *list.Element   // in its owner's userSessions.lru
	// participants are the authors of its messages other than its owner,
	// first writers first, at most maxParticipants of them.
	participants []string
}

// maxParticipants bounds the participants recorded per session (see
// store.ParticipantLister): the first 64 authors other than its owner.
const maxParticipants = 64

// write stamps stored[i], a message the caller appends to sess, with its
// author (its UserID when set, else the owner), its sequence number and,
// when not zero, its creation time, and records the author as a
// participant. s.mu must be held.
func (s *Store) write(sess *memSession, m *store.Message, now time.Time) {
	sess.lastSeq++
	m.Seq = sess.lastSeq
	if m.UserID == "" {
		m.UserID = sess.owner
	}
	if !now.IsZero() {
		m.CreatedAt = now
	}
	if m.UserID != sess.owner && len(sess.participants) < maxParticipants && !slices.Contains(sess.participants, m.UserID) {
		sess.participants = append(sess.participants, m.UserID)
	}
	if !sess.hasUser && m.Role == store.RoleUser {
		sess.firstUser, sess.hasUser = m.Content, true
	}
}

// userSessions are one user's sessions. Guarded by Store.mu.
type userSessions struct {
	byID map[string]*memSession
	lru  list.List // of *memSession, most recently used first
}

// touch marks sess as its owner's most recently used session. s.mu must be
// held.
func (s *Store) touch(sess *memSession) {
	s.byUser[sess.owner].lru.MoveToFront(sess.elem)
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Replacer = (*Store)(nil)

	_ store.ParticipantLister = (*Store)(nil)
)

// New returns an empty store that keeps sessions in process memory. It is a
// development store, for tests, demos and single-process tools: nothing
// survives a restart, folds are coordinated within the process only (it is
// no FoldLocker), and it is bounded by sessions (10 000 in all and 1 000
// per user unless WithMaxSessions and WithMaxSessionsPerUser say
// otherwise), never at another user's cost: a Create past a bound evicts
// the least recently used session of the creating user, and when that user
// holds none it fails with store.ErrStoreFull. An evicted session is gone
// like a deleted one: its id is free, and a session re-created under it
// gets a new Epoch. Use the PostgreSQL store of package db in production.
//
// Seqs are counted per session, so a user's seqs never show another's
// writes, and are never reused for an id: the store remembers the last seq
// of as many removed (deleted, replaced or evicted) ids as it holds
// sessions at most, so that an id created again goes on from its
// predecessor's numbers; an id forgotten past that bound raises the number
// every later new session starts from.
//
// Within a session it keeps every message, stores tool calls and results
// losslessly, and answers Tail and Range without copying the whole
// history. It is safe for concurrent use; each operation checks ownership
// and does its work in one critical section.
func New(opts ...Option) *Store {
	s := &Store{
		maxSessions: DefaultMaxSessions,
		maxPerUser:  DefaultMaxSessionsPerUser,
		log:         slog.New(slog.DiscardHandler),
		sessions:    map[string]*memSession{},
		byUser:      map[string]*userSessions{},
		retired:     map[string]int64{},
	}
	for _, o := range opts {
		o(s)
	}
	s.maxPerUser = min(s.maxPerUser, s.maxSessions)
	return s
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, sessionID, userID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.sessions[sessionID] != nil {
		s.mu.Unlock()
		return store.ErrSessionExists
	}
	_, evicted, err := s.create(sessionID, userID, now())
	s.mu.Unlock()
	s.evicted(evicted)
	return err
}

// prepared checks that ctx is live and every message can be stored, and
// returns the store's own copies of msgs: the work an append, replace or
// import does before it takes the lock.
func prepared(ctx context.Context, msgs []store.Message) ([]store.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	stored := make([]store.Message, len(msgs))
	for i, m := range msgs {
		if err := m.Validate(0); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		stored[i] = m.Clone()
	}
	return stored, nil
}

// Append implements store.Store.
func (s *Store) Append(ctx context.Context, sessionID, userID string, msgs ...store.Message) (store.AppendResult, error) {
	stored, err := prepared(ctx, msgs)
	if err != nil {
		return store.AppendResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Sessions are made by Create only: the ownership check and the write
	// below happen in this one critical section.
	sess, err := s.owned(sessionID, userID)
	if err != nil {
		return store.AppendResult{}, err
	}
	now := now()
	s.touch(sess)
	if len(stored) == 0 {
		return store.AppendResult{Total: len(sess.msgs), Epoch: sess.epoch}, nil
	}
	for i := range stored {
		s.write(sess, &stored[i], now)
	}
	sess.msgs = append(sess.msgs, stored...)
	s.activity++
	sess.lastActivity, sess.activity = now, s.activity
	return store.AppendResult{Total: len(sess.msgs), LastSeq: sess.lastSeq, Epoch: sess.epoch}, nil
}

// Replace implements store.Replacer: every message is validated first,
// then, in one critical section, the ownership is checked and the session
// becomes a new incarnation holding exactly msgs. A missing session is
// created for userID (which may evict userID's least recently used session,
// or fail with store.ErrStoreFull, as Create does).
func (s *Store) Replace(ctx context.Context, sessionID, userID string, msgs ...store.Message) (store.AppendResult, error) {
	stored, err := prepared(ctx, msgs)
	if err != nil {
		return store.AppendResult{}, err
	}
	s.mu.Lock()
	var evicted []*memSession
	res, err := func() (store.AppendResult, error) {
		now := now()
		if old := s.sessions[sessionID]; old != nil {
			if old.owner != userID {
				return store.AppendResult{}, store.ErrNotOwner
			}
			// Freeing the old incarnation first makes room for the new one:
			// nothing is evicted.
			s.remove(old)
		}
		sess, ev, err := s.create(sessionID, userID, now)
		evicted = ev
		if err != nil {
			return store.AppendResult{}, err
		}
		var last int64
		for i := range stored {
			s.write(sess, &stored[i], now)
			last = sess.lastSeq
		}
		sess.msgs = stored
		return store.AppendResult{Total: len(stored), LastSeq: last, Epoch: sess.epoch}, nil
	}()
	s.mu.Unlock()
	s.evicted(evicted)
	return res, err
}

// evicted reports evictions to the WithOnEvict function. s.mu must not be
// held.
func (s *Store) evicted(sessions []*memSession) {
	if s.onEvict == nil {
		return
	}
	for _, e := range sessions {
		s.onEvict(e.id, e.owner)
	}
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
	s.touch(sess)
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
	s.touch(sess)
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
	return s.list(ctx, userID, "", limit, offset)
}

// ParticipantSessions implements store.ParticipantLister, in the order of
// Sessions. The store records at most 64 participants per session, the
// first to write.
func (s *Store) ParticipantSessions(ctx context.Context, ownerID, participant string, limit, offset int) ([]store.SessionInfo, int, error) {
	if participant == "" || participant == ownerID {
		return nil, 0, nil
	}
	return s.list(ctx, ownerID, participant, limit, offset)
}

// list lists userID's sessions, those participant wrote in when it is not
// "".
func (s *Store) list(ctx context.Context, userID, participant string, limit, offset int) ([]store.SessionInfo, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	type entry struct {
		info     store.SessionInfo
		activity int64
	}
	s.mu.Lock()
	var mine map[string]*memSession
	if u := s.byUser[userID]; u != nil {
		mine = u.byID
	}
	all := make([]entry, 0, len(mine))
	for _, sess := range mine {
		if participant != "" && !slices.Contains(sess.participants, participant) {
			continue
		}
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
// first evicting the least recently used sessions of userID past the
// bounds; when userID holds none and the store is full, it makes nothing
// and returns store.ErrStoreFull. The id must be free. s.mu must be held.
func (s *Store) create(sessionID, userID string, now time.Time) (*memSession, []*memSession, error) {
	var evicted []*memSession
	mine := s.byUser[userID]
	if mine == nil {
		mine = &userSessions{byID: map[string]*memSession{}}
		s.byUser[userID] = mine
	}
	for len(s.sessions) >= s.maxSessions || len(mine.byID) >= s.maxPerUser {
		if mine.lru.Len() == 0 {
			delete(s.byUser, userID)
			s.log.Warn("strata: in-memory store full, refused a new session",
				"session_id", sessionID, "user_id", userID, "max_sessions", s.maxSessions)
			return nil, evicted, fmt.Errorf("%w (%d sessions)", store.ErrStoreFull, s.maxSessions)
		}
		old := mine.lru.Back().Value.(*memSession)
		s.remove(old)
		evicted = append(evicted, old)
		s.log.Warn("strata: in-memory store full, evicted the user's least recently used session",
			"session_id", old.id, "user_id", old.owner, "messages", len(old.msgs),
			"max_sessions", s.maxSessions, "max_sessions_per_user", s.maxPerUser)
	}
	s.epoch++
	s.activity++
	sess := &memSession{id: sessionID, owner: userID, epoch: s.epoch, created: now,
		lastActivity: now, activity: s.activity, lastSeq: max(s.seqFloor, s.retired[sessionID])}
	delete(s.retired, sessionID)
	sess.elem = mine.lru.PushFront(sess)
	s.byUser[userID] = mine // remove drops an emptied set
	s.sessions[sessionID] = sess
	mine.byID[sessionID] = sess
	return sess, evicted, nil
}

// remove forgets a session and its messages. s.mu must be held.
func (s *Store) remove(sess *memSession) {
	delete(s.sessions, sess.id)
	if sess.lastSeq > s.seqFloor {
		if len(s.retired) >= s.maxSessions {
			for id, q := range s.retired {
				s.seqFloor = max(s.seqFloor, q)
				delete(s.retired, id)
				break
			}
		}
		s.retired[sess.id] = sess.lastSeq
	}
	if mine := s.byUser[sess.owner]; mine != nil {
		mine.lru.Remove(sess.elem)
		delete(mine.byID, sess.id)
		if len(mine.byID) == 0 {
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

// now is the current time as the stores keep times: in UTC, to the
// microsecond (store.NormalTime), so that both stores give back the same
// timestamps.
func now() time.Time {
	t, _ := store.NormalTime(time.Now())
	return t
}
