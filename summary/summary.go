package summary

import (
	"context"
	"errors"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/record"
)

// The data of a summary lives in package record, the vocabulary every
// package shares; these are its names here.
type (
	// Category classifies a fact (record.Category).
	Category = record.Category
	// Fact is one structured piece of durable conversation state
	// (record.Fact).
	Fact = record.Fact
	// Summary is the folded part of a conversation (record.Summary).
	Summary = record.Summary
	// SentenceSource is the provenance of one narrative sentence
	// (record.SentenceSource).
	SentenceSource = record.SentenceSource
	// Forgotten records a fact value erased on request (record.Forgotten).
	Forgotten = record.Forgotten
)

// The fact categories, in arc-reactor's declaration order (record's).
const (
	Entity    = record.Entity
	Decision  = record.Decision
	Condition = record.Condition
	State     = record.State
	Numeric   = record.Numeric
	General   = record.General
)

// Categories lists every valid category in declaration order.
var Categories = record.Categories

// ParseCategory maps a category name, case-insensitively and ignoring
// surrounding white space, to a Category; unknown names yield General.
func ParseCategory(s string) Category { return record.ParseCategory(s) }

// Request is the input of one summarization.
type Request struct {
	SessionID string
	// Messages are the messages to fold, oldest first.
	Messages []llms.ChatMessage
	// Seqs, when set, are the messages' sequence numbers: Seqs[i] is the
	// stored message Messages[i]. A summarizer that reports provenance
	// (Fact.Sources, Result.SentenceSources) reports these.
	Seqs []int64
	// Existing is the summary stored so far (nil when there is none). Its
	// facts are offered to the summarizer for merging.
	Existing *Summary
	// Incremental is true when Messages continue Existing (they are only the
	// messages after Existing.UpToSeq): the summarizer must carry Existing's
	// narrative and facts forward. False means Messages are everything to
	// summarize from the originals (arc-reactor's way); Existing's facts
	// are then offered for merging only.
	Incremental bool
	// SentAt, when set, says when each message was written: SentAt[i]
	// belongs to Messages[i]; a missing or zero entry means unknown. The
	// extractive summarizer resolves relative dates ("tomorrow", "next
	// Friday") against it and keeps them as written when it is unknown.
	SentAt []time.Time
	// MaxNarrativeTokens is the cap the caller enforces on the narrative
	// (see MergeOptions.MaxNarrativeTokens), 0 when it does not say: a
	// summarizer writes within it, so the cap never cuts what it chose to
	// keep. Below its own default, the extractive summarizer picks fewer
	// sentences and the LLM summarizer's prompt asks for fewer tokens.
	MaxNarrativeTokens int
}

// Usage is the token accounting of one summarization, when the provider
// reports it.
type Usage struct {
	InputTokens  int
	OutputTokens int
}

// Result is the output of one summarization.
type Result struct {
	Narrative string
	Facts     []Fact
	// SentenceSources is the provenance of the narrative's sentences, when
	// the summarizer knows it (see Summary.SentenceSources).
	SentenceSources []SentenceSource
	// Usage is filled when the provider reports token counts.
	Usage Usage
}

// IsEmpty reports whether the result has no facts and a blank narrative.
func (r Result) IsEmpty() bool { return len(r.Facts) == 0 && isBlank(r.Narrative) }

// Service folds messages into facts and a narrative.
type Service interface {
	Summarize(ctx context.Context, req Request) (Result, error)
}

// ServiceFunc adapts a function to the Service interface.
type ServiceFunc func(ctx context.Context, req Request) (Result, error)

// Summarize calls f.
func (f ServiceFunc) Summarize(ctx context.Context, req Request) (Result, error) { return f(ctx, req) }

// Store persists one summary per session.
//
// Save is an upsert keyed by SessionID that never lowers the cursor of the
// same epoch: a save whose UpToSeq is below the stored one of the same
// Epoch writes nothing and returns ErrStale, so a slow, older summarization
// can never overwrite a newer summary. A save with a different Epoch
// replaces the stored summary (it belonged to a deleted predecessor). A
// store that knows the session was deleted or re-created since the summary
// was made refuses it with ErrSessionGone. Stores keep CreatedAt from the
// first save of an epoch, refresh UpdatedAt and increment Version. They
// keep every other field as given, provenance (Fact.Sources,
// SentenceSources), Forgotten and ForgetKey included: erasure depends on
// them.
type Store interface {
	Get(ctx context.Context, sessionID string) (*Summary, error) // nil, nil when absent
	Save(ctx context.Context, s Summary) error
	Delete(ctx context.Context, sessionID string) error
}

// ErrTimeout reports that the summarizer did not answer within its time
// limit. A timeout is an error, never an empty summary.
var ErrTimeout = errors.New("summary: summarizer timed out")

// ErrStale: Save wrote nothing because the store holds a summary of the
// same epoch with a higher cursor.
var ErrStale = record.ErrStale

// ErrSessionGone: Save wrote nothing because the session was deleted or
// re-created after the summary was made.
var ErrSessionGone = record.ErrSessionGone

// ErrEmptyReply reports a summarizer reply with neither facts nor narrative.
var ErrEmptyReply = errors.New("summary: summarizer returned an empty summary")
