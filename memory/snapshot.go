package memory

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// SnapshotVersion is the version of the Snapshot format that Export
// writes and Import reads.
const SnapshotVersion = 1

// Snapshot is a whole session in a portable form: its id, its owner, every
// stored message losslessly (tool calls, tool call ids, names, metadata,
// timestamps) and its summary with the facts' provenance and the cursor.
// Export makes one and Import restores one, into the same store or
// another: a session moves between the in-memory store and PostgreSQL, or
// is backed up, inspected and diffed as JSON. Its JSON field names are
// snake_case and stable within a Version; the repository's
// memory/snapshot.schema.json is its JSON Schema.
//
// Sequence numbers (Messages[].Seq, the summary's cursor and provenance)
// are those of the store the snapshot came from; Import maps them onto
// the sequence numbers the new store assigns.
type Snapshot struct {
	// Version is SnapshotVersion.
	Version int `json:"version"`
	// SessionID is the session's id.
	SessionID string `json:"session_id"`
	// UserID is the session's owner ("anonymous" for a caller without a
	// user id, "shared" for shared sessions).
	UserID string `json:"user_id"`
	// ExportedAt is when the snapshot was made (informative).
	ExportedAt time.Time `json:"exported_at,omitzero"`
	// Messages are the stored messages, oldest first.
	Messages []SnapshotMessage `json:"messages"`
	// Summary is the session's summary, absent when it has none.
	Summary *SnapshotSummary `json:"summary,omitempty"`
}

// SnapshotMessage is one stored message of a Snapshot.
type SnapshotMessage struct {
	// Seq is the message's sequence number in the exporting store:
	// strictly increasing within the snapshot.
	Seq int64 `json:"seq"`
	// Role is "user", "assistant", "system" or "tool".
	Role       string             `json:"role"`
	Content    string             `json:"content"`
	ToolCalls  []SnapshotToolCall `json:"tool_calls,omitempty"`
	ToolCallID string             `json:"tool_call_id,omitempty"`
	Name       string             `json:"name,omitempty"`
	Metadata   map[string]string  `json:"metadata,omitempty"`
	// CreatedAt is when the message was first stored; Import keeps it, to
	// the store's precision (PostgreSQL: the microsecond).
	CreatedAt time.Time `json:"created_at"`
}

// SnapshotToolCall is a tool call of an assistant message, in the shape
// of OpenAI's chat API.
type SnapshotToolCall struct {
	ID       string                `json:"id"`
	Type     string                `json:"type,omitempty"`
	Function *SnapshotFunctionCall `json:"function,omitempty"`
}

// SnapshotFunctionCall is the function a SnapshotToolCall calls.
type SnapshotFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// SnapshotSummary is a session's summary in a Snapshot.
type SnapshotSummary struct {
	Narrative string         `json:"narrative"`
	Facts     []SnapshotFact `json:"facts"`
	// UpToSeq is the cursor: every message with Seq <= UpToSeq is folded
	// into the summary.
	UpToSeq int64 `json:"up_to_seq"`
	// Forgotten are the values erased by ForgetFact, which later folds
	// keep out (digests, never the values).
	Forgotten []summary.Forgotten `json:"forgotten,omitempty"`
	CreatedAt time.Time           `json:"created_at,omitzero"`
	UpdatedAt time.Time           `json:"updated_at,omitzero"`
}

// SnapshotFact is one fact of a SnapshotSummary, with its provenance.
type SnapshotFact struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	// Category is one of summary.Categories.
	Category    string    `json:"category"`
	ExtractedAt time.Time `json:"extracted_at,omitzero"`
	// FirstSeq and LastSeq are the sequence numbers where the value was
	// first and last seen (0: unknown); Mentions counts the folds that
	// reported it.
	FirstSeq      int64  `json:"first_seq,omitempty"`
	LastSeq       int64  `json:"last_seq,omitempty"`
	Mentions      int    `json:"mentions,omitempty"`
	Pinned        bool   `json:"pinned,omitempty"`
	PreviousValue string `json:"previous_value,omitempty"`
	Stated        bool   `json:"stated,omitempty"`
}

// maxSnapshotID bounds session and user ids in a snapshot, in bytes.
const maxSnapshotID = 1024

// Validate checks a snapshot before anything of it is written: the
// version, ids, messages (roles, valid text, strictly increasing sequence
// numbers, the size limit maxBytes when > 0) and summary (categories,
// non-negative cursor and provenance). Every problem found is reported.
func (s *Snapshot) Validate(maxBytes int) error {
	if s == nil {
		return fmt.Errorf("memory: snapshot: %w: nil snapshot", store.ErrInvalidMessage)
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(format, args...))
	}
	if s.Version != SnapshotVersion {
		bad("version %d is not %d", s.Version, SnapshotVersion)
	}
	for _, id := range [][2]string{{"session_id", s.SessionID}, {"user_id", s.UserID}} {
		if !utf8.ValidString(id[1]) || strings.IndexByte(id[1], 0) >= 0 || len(id[1]) > maxSnapshotID {
			bad("%s is not valid UTF-8 of at most %d bytes without NUL", id[0], maxSnapshotID)
		}
	}
	if s.SessionID == "" {
		bad("session_id is empty")
	}
	var prev int64
	for i, m := range s.Messages {
		if m.Seq <= prev {
			bad("messages[%d]: seq %d does not increase (previous %d)", i, m.Seq, prev)
		}
		prev = m.Seq
		if err := m.message().Validate(maxBytes); err != nil {
			bad("messages[%d]: %w", i, err)
		}
	}
	if sm := s.Summary; sm != nil {
		if sm.UpToSeq < 0 {
			bad("summary: up_to_seq %d is negative", sm.UpToSeq)
		}
		texts := []string{sm.Narrative}
		for i, f := range sm.Facts {
			if strings.TrimSpace(f.Key) == "" {
				bad("summary.facts[%d]: empty key", i)
			}
			if f.Category != "" && !summary.Category(f.Category).Valid() {
				bad("summary.facts[%d]: unknown category %q", i, f.Category)
			}
			if f.FirstSeq < 0 || f.LastSeq < 0 || f.Mentions < 0 {
				bad("summary.facts[%d]: negative provenance", i)
			}
			texts = append(texts, f.Key, f.Value, f.PreviousValue)
		}
		for i, f := range sm.Forgotten {
			if len(f.Digest) != 64 || f.Runes <= 0 || f.Seq < 0 || f.Roll > 1<<53-1 {
				bad("summary.forgotten[%d]: want a hex SHA-256 digest, a positive length, a 53-bit roll and a non-negative seq", i)
			}
		}
		for _, t := range texts {
			if !utf8.ValidString(t) || strings.IndexByte(t, 0) >= 0 {
				bad("summary: text is not valid UTF-8 or contains a NUL byte")
				break
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("memory: snapshot of %q: %w: %w", s.SessionID, store.ErrInvalidMessage, errors.Join(errs...))
	}
	return nil
}

// message is m in its stored form.
func (m SnapshotMessage) message() store.Message {
	out := store.Message{Seq: m.Seq, Role: store.Role(m.Role), Content: m.Content, ToolCallID: m.ToolCallID,
		Name: m.Name, CreatedAt: m.CreatedAt}
	if len(m.Metadata) > 0 {
		out.Metadata = make(map[string]string, len(m.Metadata))
		for k, v := range m.Metadata {
			out.Metadata[k] = v
		}
	}
	for _, tc := range m.ToolCalls {
		c := llms.ToolCall{ID: tc.ID, Type: tc.Type}
		if tc.Function != nil {
			c.FunctionCall = &llms.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}
		}
		out.ToolCalls = append(out.ToolCalls, c)
	}
	return out
}

// snapshotMessage is m in a snapshot's form.
func snapshotMessage(m store.Message) SnapshotMessage {
	out := SnapshotMessage{Seq: m.Seq, Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID,
		Name: m.Name, CreatedAt: m.CreatedAt.UTC()}
	if len(m.Metadata) > 0 {
		out.Metadata = make(map[string]string, len(m.Metadata))
		for k, v := range m.Metadata {
			out.Metadata[k] = v
		}
	}
	for _, tc := range m.ToolCalls {
		c := SnapshotToolCall{ID: tc.ID, Type: tc.Type}
		if tc.FunctionCall != nil {
			c.Function = &SnapshotFunctionCall{Name: tc.FunctionCall.Name, Arguments: tc.FunctionCall.Arguments}
		}
		out.ToolCalls = append(out.ToolCalls, c)
	}
	return out
}

// snapshotSummary is s in a snapshot's form.
func snapshotSummary(s *summary.Summary) *SnapshotSummary {
	if s == nil {
		return nil
	}
	out := &SnapshotSummary{Narrative: s.Narrative, Facts: []SnapshotFact{}, UpToSeq: s.UpToSeq,
		Forgotten: append([]summary.Forgotten(nil), s.Forgotten...), CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC()}
	for _, f := range s.Facts {
		sf := SnapshotFact{Key: f.Key, Value: f.Value, Category: string(f.Category), FirstSeq: f.FirstSeq,
			LastSeq: f.LastSeq, Mentions: f.Mentions, Pinned: f.Pinned, PreviousValue: f.Previous, Stated: f.Stated}
		if !f.ExtractedAt.IsZero() {
			sf.ExtractedAt = f.ExtractedAt.UTC()
		}
		out.Facts = append(out.Facts, sf)
	}
	return out
}

// seqMap maps sequence numbers of a snapshot onto those of the store it is
// imported into: a number maps to the new number of the newest snapshot
// message at or before it (0 when there is none), so a cursor keeps
// covering exactly the messages it covered.
type seqMap struct{ old, new []int64 }

func (m seqMap) at(seq int64) int64 {
	if seq <= 0 {
		return 0
	}
	k := sort.Search(len(m.old), func(i int) bool { return m.old[i] > seq })
	if k == 0 {
		return 0
	}
	return m.new[k-1]
}

// summary is the snapshot's summary for the session's new incarnation
// epoch, its sequence numbers mapped by sm; nil when it has none or an
// empty one.
func (s *Snapshot) summary(epoch int64, sm seqMap) *summary.Summary {
	if s.Summary == nil {
		return nil
	}
	src := s.Summary
	out := &summary.Summary{SessionID: s.SessionID, Narrative: src.Narrative, UpToSeq: sm.at(src.UpToSeq), Epoch: epoch,
		CreatedAt: src.CreatedAt, UpdatedAt: src.UpdatedAt}
	for _, f := range src.Facts {
		out.Facts = append(out.Facts, summary.Fact{Key: f.Key, Value: f.Value, Category: summary.ParseCategory(f.Category),
			ExtractedAt: f.ExtractedAt, FirstSeq: sm.at(f.FirstSeq), LastSeq: sm.at(f.LastSeq), Mentions: f.Mentions,
			Pinned: f.Pinned, Previous: f.PreviousValue, Stated: f.Stated})
	}
	for _, f := range src.Forgotten {
		f.Seq = sm.at(f.Seq)
		out.Forgotten = append(out.Forgotten, f)
	}
	if out.IsEmpty() && len(out.Forgotten) == 0 {
		return nil
	}
	return out
}

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
		snap := &Snapshot{Version: SnapshotVersion, SessionID: sessionID, UserID: owner, ExportedAt: m.clk.Now().UTC(),
			Messages: make([]SnapshotMessage, 0, len(msgs)), Summary: snapshotSummary(before)}
		for _, msg := range msgs {
			snap.Messages = append(snap.Messages, snapshotMessage(msg))
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
	s, err := m.sums.Get(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("summary store: %w", err)
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
// already in use gives ErrSessionExists and changes nothing.
//
// No fold of the new session runs before its summary is stored: Import
// holds the session's fold lock (across processes when the stores have
// one) until it is done. With a store that is a store.Importer keeping
// the summaries too (PostgreSQL), the session, its messages and its
// summary are written in one transaction; otherwise the session and
// messages are written in one step and the summary after it, and the
// session is deleted again if that fails.
func (m *Manager) Import(ctx context.Context, s *Snapshot) error {
	if err := s.Validate(m.cfg.MaxMessageBytes); err != nil {
		return err
	}
	sessionID, owner := s.SessionID, m.owner(s.SessionID, s.UserID)
	msgs := make([]store.Message, len(s.Messages))
	old := make([]int64, len(s.Messages))
	for i, sm := range s.Messages {
		msgs[i], old[i] = sm.message(), sm.Seq
	}
	if s.Summary != nil && m.sums == nil && !s.Summary.isBlank() {
		return fmt.Errorf("memory: import %q: the snapshot has a summary and the manager has no summary store", sessionID)
	}
	var sum *summary.Summary
	build := func(epoch int64, seqs []int64) *summary.Summary {
		sum = s.summary(epoch, seqMap{old: old, new: seqs})
		return sum
	}
	err := m.eng.exclusive(ctx, sessionID, func() error {
		imp, ok := m.store.(store.Importer)
		if !ok {
			return m.importSteps(ctx, sessionID, owner, msgs, build)
		}
		inStore := m.sums != nil && imp.ImportsSummariesOf(m.sums)
		if _, err := imp.Import(ctx, sessionID, owner, msgs, build); err != nil {
			return err
		}
		if inStore || sum == nil {
			return nil
		}
		return m.saveImported(ctx, sessionID, owner, *sum)
	})
	if err != nil {
		return fmt.Errorf("memory: import %q: %w", sessionID, err)
	}
	return nil
}

// isBlank reports whether the summary carries nothing to import.
func (s *SnapshotSummary) isBlank() bool {
	return strings.TrimSpace(s.Narrative) == "" && len(s.Facts) == 0 && len(s.Forgotten) == 0
}

// importSteps imports into a store without the Importer capability:
// create, append, save the summary; the session is deleted again when a
// step after the create fails.
func (m *Manager) importSteps(ctx context.Context, sessionID, owner string, msgs []store.Message, build func(int64, []int64) *summary.Summary) error {
	if err := m.store.Create(ctx, sessionID, owner); err != nil {
		return err
	}
	res, err := m.store.Append(ctx, sessionID, owner, msgs...)
	if err != nil {
		return errors.Join(err, m.undoImport(sessionID, owner))
	}
	seqs, err := m.store.Range(ctx, sessionID, owner, 0, 1<<62, 0)
	if err == nil && len(seqs) != len(msgs) {
		err = fmt.Errorf("the new session holds %d messages, not %d", len(seqs), len(msgs))
	}
	if err != nil {
		return errors.Join(err, m.undoImport(sessionID, owner))
	}
	nums := make([]int64, len(seqs))
	for i, msg := range seqs {
		nums[i] = msg.Seq
	}
	if sum := build(res.Epoch, nums); sum != nil {
		return m.saveImported(ctx, sessionID, owner, *sum)
	}
	return nil
}

// saveImported saves an imported session's summary, deleting the session
// again when that fails.
func (m *Manager) saveImported(ctx context.Context, sessionID, owner string, sum summary.Summary) error {
	if err := m.sums.Save(ctx, sum); err != nil {
		return errors.Join(fmt.Errorf("save summary: %w", err), m.undoImport(sessionID, owner))
	}
	return nil
}

// undoImport deletes a half-imported session, within a bounded time even
// when the import's context is done.
func (m *Manager) undoImport(sessionID, owner string) error {
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.CloseTimeout)
	defer cancel()
	if err := m.store.Delete(ctx, sessionID, owner); err != nil {
		return fmt.Errorf("undo the partial import: %w", err)
	}
	return nil
}
