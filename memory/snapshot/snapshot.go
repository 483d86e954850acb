// Package snapshot is the portable form of a whole session that
// memory.Manager.Export writes and memory.Manager.Import reads: its
// messages, losslessly, and its summary with the facts' provenance and the
// cursor, as versioned JSON with snake_case names. The repository's
// memory/snapshot.schema.json is its JSON Schema.
package snapshot

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/strata-go/strata/internal/msgjson"
	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// maxSnapshotJournal bounds the journal records a snapshot may carry
// (a manager keeps 200 per session).
const maxSnapshotJournal = 10_000

// Version is the version of the Snapshot format that Export
// writes and Import reads.
const Version = 1

// Snapshot is a whole session in a portable form: its id, its owner, every
// stored message losslessly (tool calls, tool call ids, names, metadata,
// timestamps) and its summary with the facts' provenance and the cursor.
// memory.Manager.Export makes one and memory.Manager.Import restores one, into the same store or
// another: a session moves between the in-memory store and PostgreSQL, or
// is backed up, inspected and diffed as JSON. Its JSON field names are
// snake_case and stable within a Version; the repository's
// memory/snapshot.schema.json is its JSON Schema.
//
// Sequence numbers (Messages[].Seq, the summary's cursor and provenance)
// are those of the store the snapshot came from; Import maps them onto
// the sequence numbers the new store assigns.
type Snapshot struct {
	// Version is the format version, Version.
	Version int `json:"version"`
	// SessionID is the session's id.
	SessionID string `json:"session_id"`
	// UserID is the session's owner ("anonymous" for a caller without a
	// user id, "shared" for shared sessions).
	UserID string `json:"user_id"`
	// ExportedAt is when the snapshot was made (informative).
	ExportedAt time.Time `json:"exported_at,omitzero"`
	// Messages are the stored messages, oldest first.
	Messages []Message `json:"messages"`
	// Summary is the session's summary, absent when it has none.
	Summary *Summary `json:"summary,omitempty"`
	// Journal is the session's fold journal (memory.Manager.Journal),
	// absent when the exporting store keeps none; snapshots made before
	// it existed import without one. Its sequence numbers are the
	// exporting store's; Import maps them.
	Journal *store.Journal `json:"journal,omitempty"`
}

// Message is one stored message of a Snapshot: its sequence number, the
// JSON shape of a message (the HTTP API's, internal/msgjson.Message: the
// same names, the same tool calls) and when it was stored.
type Message struct {
	// Seq is the message's sequence number in the exporting store:
	// strictly increasing within the snapshot.
	Seq int64 `json:"seq"`
	// Role is "user", "assistant", "system" or "tool".
	Role       string            `json:"role"`
	Content    string            `json:"content"`
	ToolCalls  []ToolCall        `json:"tool_calls,omitempty"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
	Name       string            `json:"name,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	// CreatedAt is when the message was first stored; Import keeps it, to
	// the store's precision (PostgreSQL: the microsecond).
	CreatedAt time.Time `json:"created_at"`
}

// ToolCall is a tool call of an assistant message, in the shape of
// OpenAI's chat API: the one JSON shape of a tool call
// (internal/msgjson.ToolCall), as the HTTP API and the PostgreSQL store
// write it. A call stored without a type has "type": "".
type ToolCall = msgjson.ToolCall

// FunctionCall is the function a ToolCall calls.
type FunctionCall = msgjson.Function

// Summary is a session's summary in a Snapshot.
type Summary struct {
	Narrative string `json:"narrative"`
	Facts     []Fact `json:"facts"`
	// UpToSeq is the cursor: every message with Seq <= UpToSeq is folded
	// into the summary.
	UpToSeq int64 `json:"up_to_seq"`
	// Forgotten are the values erased by memory.Manager.ForgetFact, which later folds
	// keep out (digests, never the values).
	Forgotten []summary.Forgotten `json:"forgotten,omitempty"`
	CreatedAt time.Time           `json:"created_at,omitzero"`
	UpdatedAt time.Time           `json:"updated_at,omitzero"`
}

// Fact is one fact of a Summary, with its provenance.
type Fact struct {
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
	if s.Version != Version {
		bad("version %d is not %d", s.Version, Version)
	}
	for _, id := range [][2]string{{"session_id", s.SessionID}, {"user_id", s.UserID}} {
		if !text.Storable(id[1]) || len(id[1]) > maxSnapshotID {
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
		if err := m.Stored().Validate(maxBytes); err != nil {
			bad("messages[%d]: %w", i, err)
		}
	}
	if j := s.Journal; j != nil && len(j.Records) > maxSnapshotJournal {
		bad("journal: %d records, more than %d", len(j.Records), maxSnapshotJournal)
	}
	if sm := s.Summary; sm != nil {
		if sm.UpToSeq < 0 {
			bad("summary: up_to_seq %d is negative", sm.UpToSeq)
		}
		texts := []string{sm.Narrative}
		times := []time.Time{sm.CreatedAt, sm.UpdatedAt}
		for _, f := range sm.Facts {
			times = append(times, f.ExtractedAt)
		}
		for _, t := range times {
			if _, ok := store.NormalTime(t); !ok {
				bad("summary: time %s is outside the years 1 to 9999 that every store keeps", t.Format(time.RFC3339Nano))
				break
			}
		}
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
		if len(sm.Forgotten) > summary.DefaultMaxForgotten {
			bad("summary.forgotten: %d entries, at most %d", len(sm.Forgotten), summary.DefaultMaxForgotten)
		} else {
			for i, f := range sm.Forgotten {
				if !f.Valid() {
					bad("summary.forgotten[%d]: want keyed hex digests with 1 to 32 words (or a legacy SHA-256 digest, length and 53-bit roll) and a non-negative seq", i)
				}
			}
		}
		for _, t := range texts {
			if !text.Storable(t) {
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

// Stored is m in its stored form.
func (m Message) Stored() store.Message {
	out := store.Message{Seq: m.Seq, Role: store.Role(m.Role), Content: m.Content, ToolCallID: m.ToolCallID,
		Name: m.Name, CreatedAt: m.CreatedAt}
	if len(m.Metadata) > 0 {
		out.Metadata = make(map[string]string, len(m.Metadata))
		for k, v := range m.Metadata {
			out.Metadata[k] = v
		}
	}
	out.ToolCalls = msgjson.LLMToolCalls(m.ToolCalls)
	return out
}

// FromStored is the stored message m in a snapshot's form.
func FromStored(m store.Message) Message {
	out := Message{Seq: m.Seq, Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID,
		Name: m.Name, CreatedAt: m.CreatedAt.UTC()}
	if len(m.Metadata) > 0 {
		out.Metadata = make(map[string]string, len(m.Metadata))
		for k, v := range m.Metadata {
			out.Metadata[k] = v
		}
	}
	out.ToolCalls = msgjson.StoredToolCalls(m.ToolCalls)
	return out
}

// FromSummary is s in a snapshot's form; nil for nil. Forgotten entries
// made before keyed digests (an unkeyed SHA-256 and a rolling hash, which
// a guess can be tested against) are left out: an export never lets
// anyone recover a forgotten value.
func FromSummary(s *summary.Summary) *Summary {
	if s == nil {
		return nil
	}
	out := &Summary{Narrative: s.Narrative, Facts: []Fact{}, UpToSeq: s.UpToSeq,
		CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC()}
	for _, f := range s.Forgotten {
		if f.Words > 0 { // keyed
			out.Forgotten = append(out.Forgotten, f)
		}
	}
	for _, f := range s.Facts {
		sf := Fact{Key: f.Key, Value: f.Value, Category: string(f.Category), FirstSeq: f.FirstSeq,
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

// SummaryFor is the snapshot's summary for the session's new incarnation
// epoch in a store that gave the snapshot's messages (sequence numbers
// old, ascending) the sequence numbers new: the cursor and provenance are
// mapped so that they cover exactly the messages they covered. Forgotten
// entries keyed with the exporting session's secret, which no snapshot
// carries, could never be matched here: they are left out (legacy,
// unkeyed entries are kept). It is nil when the snapshot has no summary
// or an empty one.
func (s *Snapshot) SummaryFor(epoch int64, old, new []int64) *summary.Summary {
	sm := seqMap{old: old, new: new}
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
		if f.Words > 0 { // keyed
			continue
		}
		f.Seq = sm.at(f.Seq)
		out.Forgotten = append(out.Forgotten, f)
	}
	if out.IsEmpty() && len(out.Forgotten) == 0 {
		return nil
	}
	return out
}

// IsBlank reports whether the summary carries nothing to import.
func (s *Summary) IsBlank() bool {
	return strings.TrimSpace(s.Narrative) == "" && len(s.Facts) == 0 && len(s.Forgotten) == 0
}
