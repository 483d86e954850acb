package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/strata-go/strata/memory/snapshot"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// Snapshot is a whole session in a portable form: its id, its owner, every
// stored message losslessly and its summary with the facts' provenance and
// the cursor, as versioned JSON with snake_case names (the repository's
// memory/snapshot.schema.json is its JSON Schema). Export makes one and
// Import restores one, into the same store or another. See
// snapshot.Snapshot.
type Snapshot = snapshot.Snapshot

// Export returns the whole session as a Snapshot: every stored message and
// the current summary. A missing session gives ErrNotFound, another
// user's ErrNotOwner. The summary is read before and after the messages
// and the read is retried when it changed in between (a fold or an
// erasure), so the snapshot's summary and messages belong together: its
// cursor never covers a message the snapshot lacks, and an erased
// message's content is in neither.
func (m *Manager) Export(ctx context.Context, sessionID, userID string) (*Snapshot, error) {
	owner := m.owner(sessionID, userID)
	fail := func(err error) (*Snapshot, error) { return nil, fmt.Errorf("memory: export %q: %w", sessionID, err) }
	for range exportAttempts {
		t, err := m.store.Tail(ctx, sessionID, owner, 0)
		if err != nil {
			return fail(err)
		}
		before, err := m.exportedSummary(ctx, sessionID, t.Epoch)
		if err != nil {
			return fail(err)
		}
		msgs, err := m.store.Range(ctx, sessionID, owner, 0, 1<<62, 0)
		if err != nil {
			return fail(err)
		}
		after, err := m.exportedSummary(ctx, sessionID, t.Epoch)
		if err != nil {
			return fail(err)
		}
		if (before == nil) != (after == nil) || before != nil && (before.Version != after.Version ||
			before.UpToSeq != after.UpToSeq || !before.UpdatedAt.Equal(after.UpdatedAt)) {
			continue // a fold or an erasure in between: read again
		}
		snap := &Snapshot{Version: snapshot.Version, SessionID: sessionID, UserID: owner, ExportedAt: time.Now().UTC(),
			Messages: make([]snapshot.Message, 0, len(msgs)), Summary: snapshot.FromSummary(before)}
		{
			j, err := m.store.ReadJournal(ctx, sessionID, t.Epoch)
			if err != nil {
				return fail(fmt.Errorf("journal: %w", err))
			}
			snap.Journal = &j
		}
		for _, msg := range msgs {
			snap.Messages = append(snap.Messages, snapshot.FromStored(msg))
		}
		return snap, nil
	}
	return fail(fmt.Errorf("%w: the summary changed during %d reads in a row", store.ErrUnavailable, exportAttempts))
}

// exportAttempts bounds the reads of an Export of a session whose summary
// keeps changing.
const exportAttempts = 5

// exportedSummary is the session's stored summary of epoch (nil when none),
// empty ones included when they carry forgotten values.
func (m *Manager) exportedSummary(ctx context.Context, sessionID string, epoch int64) (*summary.Summary, error) {
	if m.sums == nil {
		return nil, nil
	}
	s, err := m.store.Summary(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if s == nil || s.Epoch != epoch || (s.IsEmpty() && len(s.Forgotten) == 0) {
		return nil, nil
	}
	return s, nil
}

// Import creates the session of a Snapshot in this manager's stores, as
// the snapshot's owner: its messages in order, keeping their timestamps,
// and its summary with the cursor and provenance mapped onto the sequence
// numbers the store assigns, so the view the model receives is the one
// exported, without a summarizer call. It validates everything first and
// writes nothing for an invalid snapshot (store.ErrInvalidMessage); an id
// already in use gives ErrSessionExists and changes nothing. The
// snapshot's user is the author of its messages: for a shared session
// (Config.SharedSessionPrefixes) that user becomes its participant.
//
// No fold of the new session runs before its summary is stored: Import
// holds the session's fold lock (across processes when the stores have
// one) until it is done. The session, its messages and its summary are
// written in one store call (store.Importer): on PostgreSQL one
// transaction, in memory one critical section; over a summary store apart
// from the message store, the summary after the messages, the session
// deleted again if that fails (see store.Compose).
func (m *Manager) Import(ctx context.Context, s *Snapshot) error {
	if err := s.Validate(m.cfg.MaxMessageBytes); err != nil {
		return err
	}
	sessionID, owner := s.SessionID, m.owner(s.SessionID, s.UserID)
	msgs := make([]store.Message, len(s.Messages))
	old := make([]int64, len(s.Messages))
	for i, sm := range s.Messages {
		msgs[i], old[i] = sm.Stored(), sm.Seq
		if msgs[i].UserID == "" {
			msgs[i].UserID = s.UserID // the snapshot's user wrote them (the owner when empty)
		}
	}
	if s.Summary != nil && m.sums == nil && !s.Summary.IsBlank() {
		return fmt.Errorf("memory: import %q: the snapshot has a summary and the manager has no summary store", sessionID)
	}
	var sum *summary.Summary
	var epoch int64
	var seqs []int64
	build := func(e int64, nums []int64) *summary.Summary {
		epoch, seqs = e, nums
		sum = s.SummaryFor(e, old, nums)
		return sum
	}
	err := m.eng.exclusive(ctx, sessionID, func() error {
		_, err := m.store.Import(ctx, sessionID, owner, msgs, build)
		return err
	})
	if err != nil {
		return fmt.Errorf("memory: import %q: %w", sessionID, err)
	}
	// The journal is written after the import (a failure is logged: the
	// session is imported).
	_ = m.eng.editJournal(ctx, sessionID, epoch, importEdit(time.Now().UTC(), s.Journal, sum, old, seqs))
	return nil
}
