package memory

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// InMemoryOption configures the in-memory message store.
type InMemoryOption func(*InMemoryStore)

// WithRetention keeps at most n messages per session, dropping the oldest
// ones on append (n <= 0: keep everything, the default). Dropped messages are
// gone: only use it when summaries cover them, or when forgetting is wanted.
func WithRetention(n int) InMemoryOption { return func(s *InMemoryStore) { s.retain = n } }

// WithStoreClock sets the store's clock (tests).
func WithStoreClock(now func() time.Time) InMemoryOption {
	return func(s *InMemoryStore) { s.now = now }
}

// InMemoryStore is a goroutine-safe MessageStore that keeps sessions in
// process memory. It keeps every message unless WithRetention says
// otherwise (no silent FIFO eviction), stores tool calls and results
// losslessly, and answers Tail and Range without copying the whole history.
type InMemoryStore struct {
	mu       sync.RWMutex
	sessions map[string]*memSession
	lastSeq  int64 // store-wide, so a re-created session never reuses a Seq
	retain   int
	now      func() time.Time
}

type memSession struct {
	owner    string
	created  time.Time
	msgs     []Message // oldest first; msgs[i].Seq strictly increasing
	dropped  int       // messages removed by retention
	lastUsed time.Time
}

// NewInMemoryStore returns an empty in-memory message store that keeps every
// message.
func NewInMemoryStore() MessageStore { return NewInMemoryStoreWith() }

// NewInMemoryStoreWith returns an in-memory store with options.
func NewInMemoryStoreWith(opts ...InMemoryOption) *InMemoryStore {
	s := &InMemoryStore{sessions: map[string]*memSession{}, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Append implements MessageStore.
func (s *InMemoryStore) Append(ctx context.Context, sessionID, userID string, msgs ...Message) (AppendResult, error) {
	if err := ctx.Err(); err != nil {
		return AppendResult{}, err
	}
	for i := range msgs {
		if err := msgs[i].Validate(0); err != nil {
			return AppendResult{}, fmt.Errorf("message %d: %w", i, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	sess := s.sessions[sessionID]
	if sess == nil {
		sess = &memSession{owner: userID, created: now}
		s.sessions[sessionID] = sess
	} else if sess.owner != userID {
		return AppendResult{}, ErrNotOwner
	}
	for _, m := range msgs {
		s.lastSeq++
		m = cloneMessage(m)
		m.Seq, m.UserID, m.CreatedAt = s.lastSeq, userID, now
		sess.msgs = append(sess.msgs, m)
	}
	sess.lastUsed = now
	if s.retain > 0 && len(sess.msgs) > s.retain {
		drop := len(sess.msgs) - s.retain
		sess.dropped += drop
		// Copy so the dropped prefix can be collected.
		sess.msgs = append([]Message(nil), sess.msgs[drop:]...)
	}
	return AppendResult{Total: len(sess.msgs), LastSeq: s.lastSeq}, nil
}

// Owner implements MessageStore.
func (s *InMemoryStore) Owner(ctx context.Context, sessionID string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sess := s.sessions[sessionID]; sess != nil {
		return sess.owner, nil
	}
	return "", nil
}

// Tail implements MessageStore.
func (s *InMemoryStore) Tail(ctx context.Context, sessionID string, n int) (Tail, error) {
	if err := ctx.Err(); err != nil {
		return Tail{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	sess := s.sessions[sessionID]
	if sess == nil {
		return Tail{}, nil
	}
	total := len(sess.msgs)
	n = min(max(n, 0), total)
	return Tail{Total: total, Messages: cloneMessages(sess.msgs[total-n:])}, nil
}

// Range implements MessageStore.
func (s *InMemoryStore) Range(ctx context.Context, sessionID string, afterSeq, throughSeq int64, limit int) ([]Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	sess := s.sessions[sessionID]
	if sess == nil || throughSeq <= afterSeq {
		return nil, nil
	}
	lo := sort.Search(len(sess.msgs), func(i int) bool { return sess.msgs[i].Seq > afterSeq })
	hi := sort.Search(len(sess.msgs), func(i int) bool { return sess.msgs[i].Seq > throughSeq })
	if limit > 0 && hi-lo > limit {
		hi = lo + limit
	}
	return cloneMessages(sess.msgs[lo:hi]), nil
}

// Delete implements MessageStore.
func (s *InMemoryStore) Delete(ctx context.Context, sessionID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, sessionID)
	return nil
}

// SessionInfo describes one session of a user, for listings.
type SessionInfo struct {
	SessionID    string
	UserID       string
	MessageCount int
	CreatedAt    time.Time
	LastActivity time.Time
	// Preview is the first user message, cut to 50 characters plus "..."
	// ("Empty conversation" when there is none), as the reference shows it.
	Preview string
}

var _ SessionLister = (*InMemoryStore)(nil)

// Sessions implements SessionLister.
func (s *InMemoryStore) Sessions(ctx context.Context, userID string, limit, offset int) ([]SessionInfo, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	s.mu.RLock()
	var all []SessionInfo
	for id, sess := range s.sessions {
		if sess.owner != userID {
			continue
		}
		info := SessionInfo{SessionID: id, UserID: sess.owner, MessageCount: len(sess.msgs), CreatedAt: sess.created, LastActivity: sess.lastUsed, Preview: "Empty conversation"}
		for _, m := range sess.msgs {
			if m.Role == RoleUser {
				info.Preview = Preview(m.Content)
				break
			}
		}
		all = append(all, info)
	}
	s.mu.RUnlock()
	sort.Slice(all, func(i, j int) bool {
		if !all[i].LastActivity.Equal(all[j].LastActivity) {
			return all[i].LastActivity.After(all[j].LastActivity)
		}
		return all[i].SessionID < all[j].SessionID
	})
	return page(all, limit, offset), len(all), nil
}

// Preview cuts text to 50 characters plus "..." when longer, as the
// reference's session listing does.
func Preview(text string) string {
	r := []rune(text)
	if len(r) <= 50 {
		return text
	}
	return string(r[:50]) + "..."
}

func page[T any](all []T, limit, offset int) []T {
	offset = max(offset, 0)
	if offset >= len(all) {
		return nil
	}
	all = all[offset:]
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	return all
}

func cloneMessages(in []Message) []Message {
	out := make([]Message, len(in))
	for i, m := range in {
		out[i] = cloneMessage(m)
	}
	return out
}
