package record

import (
	"encoding/hex"
	"slices"
	"strings"
	"time"
	"unicode"
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
		if strings.EqualFold(strings.TrimSpace(s), string(c)) {
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
	// (the store's Tail.Epoch). A summary whose epoch differs from the session's
	// belongs to a deleted predecessor of the same id and is never shown.
	Epoch int64
	// Forgotten lists the values memory.Manager.ForgetFact erased, so that no
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
	return s == nil || (len(s.Facts) == 0 && strings.TrimFunc(s.Narrative, unicode.IsSpace) == "")
}

// Clone returns a deep copy of s: it shares no memory with s.
func (s Summary) Clone() Summary {
	s.Facts = cloneFacts(s.Facts)
	s.Forgotten = slices.Clone(s.Forgotten)
	s.SentenceSources = slices.Clone(s.SentenceSources)
	for i := range s.SentenceSources {
		s.SentenceSources[i].Seqs = slices.Clone(s.SentenceSources[i].Seqs)
	}
	s.ForgetKey = slices.Clone(s.ForgetKey)
	return s
}

// cloneFacts copies facts deeply (their Sources too); nil stays nil.
func cloneFacts(facts []Fact) []Fact {
	if facts == nil {
		return nil
	}
	out := slices.Clone(facts)
	for i := range out {
		out[i].Sources = slices.Clone(out[i].Sources)
	}
	return out
}

// SentenceSource is the provenance of one narrative sentence: the
// messages (by sequence number, ascending) that state it.
type SentenceSource struct {
	// Digest names the sentence: SentenceDigest of its text.
	Digest string `json:"digest"`
	// Seqs are the sequence numbers of the messages that state it.
	Seqs []int64 `json:"seqs"`
}

// The bounds of a Forgotten entry (see Forgotten.Valid): a keyed digest
// covers at most MaxForgottenWords words, and records the digits alone of a
// value with MinForgottenDigits to MaxForgottenDigits of them; a legacy
// entry's rolling hash keeps LegacyRollMask's 53 bits (exact in JSON
// numbers).
const (
	MaxForgottenWords  = 32
	MinForgottenDigits = 6
	MaxForgottenDigits = 32
	LegacyRollMask     = 1<<53 - 1
)

// Forgotten records a fact value that was erased from a summary on request
// (memory.Manager.ForgetFact), so that no later fold brings it back from
// the messages that stated it before the erasure. It keeps no trace of the
// value itself: keyed digests (HMAC-SHA-256 under the session's
// Summary.ForgetKey, a random per-session secret that stores keep beside
// the summary and that no export carries) of its normalised words
// (case-folded, white space and punctuation between words folded) and,
// for a value with six digits or more, of its digits alone. Without the
// key a digest cannot be tested against a guess, so an exported list
// cannot be reversed, however short the value. Entries made before keyed
// digests (Runes, Roll: an unkeyed SHA-256 and a rolling hash) are still
// honoured.
type Forgotten struct {
	// Key is the key of the erased fact, as it was stored.
	Key string `json:"key"`
	// Digest is the hex digest of the normalised value (keyed: 32 hex
	// digits; legacy: the unkeyed SHA-256).
	Digest string `json:"digest"`
	// Words is the number of normalised words Digest covers (keyed
	// entries).
	Words int `json:"words,omitempty"`
	// Prefix says the value was longer than Digest covers (cut by the
	// ledger, ending with "…", or over 32 words): a text matches when it
	// holds those first words.
	Prefix bool `json:"prefix,omitempty"`
	// Digits is the keyed hex digest of the value's digits alone, "" when
	// it has fewer than six; DigitCount is how many.
	Digits     string `json:"digits,omitempty"`
	DigitCount int    `json:"digit_count,omitempty"`
	// Runes and Roll belong to legacy entries: the value's length in runes
	// and a rolling hash of it.
	Runes int    `json:"runes,omitempty"`
	Roll  uint64 `json:"roll,omitempty"`
	// Seq is the sequence number of the session's newest message at the
	// erasure: a statement of the value in a later message sets it again.
	Seq int64 `json:"seq"`
}

// Valid reports whether f is well formed: a keyed entry (hex digests,
// 1 to 32 words, 6 to 32 digits) or a legacy one (a hex SHA-256 digest, a positive
// length, a 53-bit roll), with a non-negative Seq.
func (f Forgotten) Valid() bool {
	if f.Seq < 0 {
		return false
	}
	if f.Words > 0 {
		return isHex(f.Digest, 32) && f.Words <= MaxForgottenWords && f.Runes == 0 && f.Roll == 0 &&
			((f.Digits == "" && f.DigitCount == 0) || (isHex(f.Digits, 32) && f.DigitCount >= MinForgottenDigits && f.DigitCount <= MaxForgottenDigits))
	}
	return isHex(f.Digest, 64) && f.Runes > 0 && f.Roll <= LegacyRollMask && f.Digits == "" && !f.Prefix
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
