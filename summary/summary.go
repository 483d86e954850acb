package summary

import (
	"context"
	"errors"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// Category classifies a fact. The six values and their order match the
// reference implementation; anything else is normalised to General.
type Category string

// The fact categories, in arc-reactor's declaration order.
const (
	Entity    Category = "ENTITY"    // people, orders, products, identifiers
	Decision  Category = "DECISION"  // something agreed or chosen
	Condition Category = "CONDITION" // a constraint or requirement
	State     Category = "STATE"     // the current status of something
	Numeric   Category = "NUMERIC"   // amounts, quantities, prices
	General   Category = "GENERAL"   // everything else
)

// Categories lists every valid category in declaration order.
var Categories = []Category{Entity, Decision, Condition, State, Numeric, General}

// ParseCategory maps a category name, case-insensitively and ignoring
// surrounding white space, to a Category; unknown names yield General.
func ParseCategory(s string) Category {
	for _, c := range Categories {
		if equalFoldTrim(s, string(c)) {
			return c
		}
	}
	return General
}

// Valid reports whether c is one of the six known categories.
func (c Category) Valid() bool {
	for _, k := range Categories {
		if c == k {
			return true
		}
	}
	return false
}

// Fact is one structured piece of durable conversation state, such as
// order_id = #1234.
type Fact struct {
	Key      string   `json:"key"`
	Value    string   `json:"value"`
	Category Category `json:"category"`
	// ExtractedAt is when the fact was first extracted or last changed
	// value. Zero when unknown.
	ExtractedAt time.Time `json:"extractedAt,omitzero"`

	// Provenance, kept by MergeFacts: FirstSeq and LastSeq are the message
	// sequence numbers (the cursor of the fold, or the message's own seq
	// when the summarizer reports it) where the current value was first
	// and last seen, and Mentions counts the folds that reported it. A
	// mention refreshes LastSeq. Zero when unknown (facts stored before
	// provenance existed).
	FirstSeq int64 `json:"firstSeq,omitempty"`
	LastSeq  int64 `json:"lastSeq,omitempty"`
	Mentions int   `json:"mentions,omitempty"`
	// Pinned facts are never evicted by a cap or the facts block's token
	// budget, and never removed by a summarizer. A summarizer or a caller
	// sets it; once pinned, a fact stays pinned across merges.
	Pinned bool `json:"pinned,omitempty"`
	// Previous is the value this fact had before its current one ("" when
	// none): a superseded value lives only here and is never rendered as a
	// current fact (RenderOptions.ShowPrevious shows it on the same line).
	Previous string `json:"previousValue,omitempty"`
	// Stated marks a value that comes from the user: given in their own
	// words (a user message), or set for them on their word (the assistant
	// confirming "your number is now …"), as opposed to one the assistant,
	// a tool result or someone else gave. Under pressure on the ledger's caps, stated facts of a
	// known kind outrank every other fact, and a contact or identity value
	// the user stated is replaced only by one the user states (or by an
	// update naming it in Replaces): what the user says about themselves
	// outranks chatter. A summarizer sets it; a merge keeps it while the
	// value stays the same. False when unknown.
	Stated bool `json:"stated,omitempty"`

	// Remove and Replaces are merge instructions from a summarizer; the
	// merged ledger never carries them. Remove asks MergeFacts to delete
	// the fact with this key (honoured unless the fact is pinned or an
	// identity fact). Replaces names the previous value this fact updates:
	// the update lands on the fact that holds that value, whatever its key.
	Remove   bool   `json:"remove,omitempty"`
	Replaces string `json:"replaces,omitempty"`

	// Sources is the exact provenance of the current value: the sequence
	// numbers of the stored messages that state it, ascending. A
	// summarizer that knows them sets them (the extractive summarizer
	// does, from Request.Seqs); the merge keeps them, adds a mention's,
	// and forgets them (nil) when a value of unknown origin joins. nil
	// means unknown (an LLM's fact): Erase then cannot tell what a message
	// supports and empties the summary it touches instead (see Erase).
	Sources []int64 `json:"sources,omitempty"`
}

// Summary is the folded part of a conversation: a fact ledger plus a
// narrative, and the cursor saying which messages it covers.
type Summary struct {
	SessionID string
	Narrative string
	Facts     []Fact
	// UpToSeq is the sequence number of the last stored message the summary
	// covers: every message of the session with Seq <= UpToSeq is folded
	// into it. A cursor, not a count, so retention or re-creation of a
	// session never makes a stale summary look fresh.
	UpToSeq int64
	// Epoch is the incarnation of the session the summary was made for
	// (store.Tail.Epoch). A summary whose epoch differs from the session's
	// belongs to a deleted predecessor of the same id and is never shown.
	Epoch int64
	// Forgotten lists the values Manager.ForgetFact erased, so that no
	// later fold brings them back from messages stated before the erasure
	// (see Forgotten). Folds carry it forward.
	Forgotten []Forgotten
	// SentenceSources is the exact provenance of the narrative: for each
	// sentence (by SentenceDigest), the messages that state it. A sentence
	// without an entry is of unknown origin (see Erase).
	SentenceSources []SentenceSource
	// ForgetKey is the per-session secret that keys the Forgotten digests
	// (see Forgotten). Stores keep it with the summary; it is never
	// exported, so an export's digests cannot be reversed. Set on the
	// first ForgetFact. It is never encoded as JSON.
	ForgetKey []byte `json:"-"`
	// Version counts the saves of this session's summary; stores set it.
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// IsEmpty reports whether the summary carries no facts and a blank
// narrative. Empty summaries are never stored or shown.
func (s *Summary) IsEmpty() bool {
	return s == nil || (len(s.Facts) == 0 && isBlank(s.Narrative))
}

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
var ErrStale = errors.New("summary: a newer summary is already stored")

// ErrSessionGone: Save wrote nothing because the session was deleted or
// re-created after the summary was made.
var ErrSessionGone = errors.New("summary: session deleted or re-created; summary not saved")

// ErrEmptyReply reports a summarizer reply with neither facts nor narrative.
var ErrEmptyReply = errors.New("summary: summarizer returned an empty summary")
