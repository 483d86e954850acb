package memory

import (
	"context"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory/langchain"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// Session is one session as one user acts on it: Manager.Session names
// the session and the user once, and its methods are the Manager's session
// methods without them, with the same contracts (ownership checked on
// every call; ErrNotOwner, store.ErrNotFound). A Session holds no state of
// its own beyond the two ids: it is cheap to make, safe for concurrent use,
// and stays valid across deletes and re-creations of its id.
type Session struct {
	m        *Manager
	id, user string
}

// Session returns the handle on sessionID as userID acts on it.
func (m *Manager) Session(sessionID, userID string) *Session {
	return &Session{m: m, id: sessionID, user: userID}
}

// Load assembles what the model sees of the session (Manager.Load).
func (s *Session) Load(ctx context.Context) (History, error) { return s.m.Load(ctx, s.id, s.user) }

// SaveTurn saves one turn (Manager.SaveTurn).
func (s *Session) SaveTurn(ctx context.Context, userText, assistantText string) error {
	return s.m.SaveTurn(ctx, s.id, s.user, userText, assistantText)
}

// SaveMessages saves langchaingo messages losslessly (Manager.SaveMessages).
func (s *Session) SaveMessages(ctx context.Context, msgs ...llms.ChatMessage) error {
	return s.m.SaveMessages(ctx, s.id, s.user, msgs...)
}

// Messages returns stored messages after afterSeq (Manager.Messages).
func (s *Session) Messages(ctx context.Context, afterSeq int64, limit int) ([]store.Message, error) {
	return s.m.Messages(ctx, s.id, s.user, afterSeq, limit)
}

// Summary returns the session's current summary (Manager.Summary).
func (s *Session) Summary(ctx context.Context) (*summary.Summary, error) {
	return s.m.Summary(ctx, s.id, s.user)
}

// Delete removes the session (Manager.DeleteSession).
func (s *Session) Delete(ctx context.Context) error { return s.m.DeleteSession(ctx, s.id, s.user) }

// Forget erases messages and what was derived from them (Manager.Forget).
func (s *Session) Forget(ctx context.Context, seqs ...int64) error {
	return s.m.Forget(ctx, s.id, s.user, seqs...)
}

// ForgetFact erases a fact of the summary (Manager.ForgetFact).
func (s *Session) ForgetFact(ctx context.Context, key string) error {
	return s.m.ForgetFact(ctx, s.id, s.user, key)
}

// Export returns the whole session as a Snapshot (Manager.Export).
func (s *Session) Export(ctx context.Context) (*Snapshot, error) {
	return s.m.Export(ctx, s.id, s.user)
}

// langchain is the handle the langchaingo adapters work through.
func (s *Session) langchain() langchain.Session {
	return langchain.Session{
		ID: s.id,
		Load: func(ctx context.Context) ([]llms.ChatMessage, error) {
			h, err := s.Load(ctx)
			return h.Messages, err
		},
		Save:   s.SaveMessages,
		Delete: s.Delete,
		Stored: func(ctx context.Context) ([]store.Message, error) { return s.Messages(ctx, 0, 0) },
		Replace: func(ctx context.Context, msgs []store.Message) error {
			return s.m.replace(ctx, s.id, s.user, msgs)
		},
	}
}
