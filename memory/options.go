package memory

import (
	"context"
	"log/slog"

	"github.com/strata-go/strata/internal/owner"
	"github.com/strata-go/strata/summary"
)

// Option configures a Manager.
type Option func(*Manager)

// WithSummaries sets where folded summaries are kept and what makes them.
// Both are required when Config.Enabled is true: NewManager refuses one
// without the other rather than silently running takeLast forever. When
// store is the message store's own summaries (the in-memory store's
// Summaries, db.NewSummaryStore on the message store's pool), the manager
// uses the message store alone, one store call per step; any other summary
// store is composed with the message store by store.Compose, whose
// documentation lists what that cannot make atomic.
func WithSummaries(store summary.Store, svc summary.Service) Option {
	return func(m *Manager) { m.sums, m.svc = store, svc }
}

// WithLogger sets the structured logger. The default discards everything:
// the manager is quiet unless asked. Normal operation logs at debug level
// only; warnings mean a real problem (a failed fold, a store error).
func WithLogger(l *slog.Logger) Option {
	return func(m *Manager) {
		if l != nil {
			m.log = l
		}
	}
}

// FoldEvent tells a fold observer about a summary that was stored.
type FoldEvent struct {
	SessionID string
	// UserID owns the session; reads for the event go through the manager
	// as this user.
	UserID  string
	Summary summary.Summary
	// Erased is true for the event of an erasure (Manager.Forget,
	// Manager.ForgetFact): Summary is the session's rewritten summary (the
	// zero value when it has none), and derived data must be rebuilt
	// without reusing what it derived before — a title or text made from
	// erased content. Such events are delivered on the erasing caller's
	// goroutine, before Forget or ForgetFact returns.
	Erased bool
}

// WithFoldObserver registers fn to be called after every summary a fold
// actually stored (never for one the store refused, e.g. because the session
// was deleted meanwhile), to refresh derived data such as titles and search
// embeddings. fn runs in the background with a context that Close cancels.
// fn is also called after an erasure (Forget, ForgetFact) with
// FoldEvent.Erased set — then on the erasing caller's goroutine, before the
// erasure returns, so that derived data is rebuilt without the erased
// content.
func WithFoldObserver(fn func(ctx context.Context, ev FoldEvent)) Option {
	return func(m *Manager) { m.obs.add(fn, nil) }
}

// WithDeleteObserver registers fn to be called, on the deleting caller's
// goroutine, after DeleteSession removed a session, so that derived data
// kept elsewhere can be dropped too.
func WithDeleteObserver(fn func(ctx context.Context, sessionID string)) Option {
	return func(m *Manager) { m.obs.add(nil, fn) }
}

// owner is the user a store operation on sessionID runs as: owner.Shared
// for a shared session (Config.SharedSessionPrefixes), whoever asks, else
// userID (store.AnonymousUser when empty). It is the manager's one mapping
// from callers to owners (package internal/owner, which the catalogue uses
// too); the store checks ownership in the same statement as the
// operation, as for any other owner.
func (m *Manager) owner(sessionID, userID string) string {
	return owner.Of(m.cfg.SharedSessionPrefixes, sessionID, userID)
}
