package summary

import (
	"path"
	"strings"
	"time"

	"github.com/strata-go/strata/summary/internal/factkey"
	"github.com/strata-go/strata/trimmer"
)

// Default limits of the fact ledger, used when MergeOptions leaves a field
// zero.
const (
	DefaultMaxFacts    = 100
	DefaultMaxValueLen = 500 // runes
	// DefaultMaxPerFamily is the share of one multi-valued family (price,
	// price_2, …) that survives pressure on the ledger (MergeOptions).
	DefaultMaxPerFamily = 5
	// DefaultFactsTokenBudget caps the rendered facts block, in tokens.
	DefaultFactsTokenBudget = 1500
	// MaxKeyLen caps fact keys, in runes.
	MaxKeyLen = 100
)

// MergeOptions bounds a fact merge. Zero fields mean the defaults.
type MergeOptions struct {
	// MaxFacts is the most facts the merged ledger keeps, pinned and
	// identity facts aside (default DefaultMaxFacts).
	MaxFacts int
	// MaxValueLen is the longest value kept, in runes; longer values are
	// truncated and end with "…" (default DefaultMaxValueLen).
	MaxValueLen int
	// MaxPerFamily is the share of one multi-valued family (default
	// DefaultMaxPerFamily): when the ledger is over MaxFacts or its token
	// budget, a family's facts beyond this many are dropped before any
	// other fact, so one kind of chatter cannot flush the rest. Below the
	// caps a family may use free room.
	MaxPerFamily int
	// TokenBudget caps the facts block as FactsBlockWith renders it, in
	// tokens counted by Tokens (default DefaultFactsTokenBudget; negative:
	// no budget).
	TokenBudget int
	// Tokens counts the tokens of a text (default trimmer.EstimateScript).
	Tokens func(string) int
	// PinnedKeys are patterns (path.Match syntax, e.g. "order_id" or
	// "case_*") matched against normalised keys: matching facts are
	// treated as pinned (never evicted, never removed by a summarizer).
	// Invalid patterns match nothing; see ValidPinPattern.
	PinnedKeys []string
	// ShowPrevious says the facts block is rendered with superseded values
	// on their fact's line, "(previously …)", so the token budget counts
	// them.
	ShowPrevious bool
	// MaxNarrativeTokens caps the narrative Apply keeps, cut at a sentence
	// boundary (default DefaultMaxNarrativeTokens; negative: no cap).
	MaxNarrativeTokens int
	// Seq is the sequence number of the newest message the incoming facts
	// were read from; Apply sets it to the fold's cursor. It is the
	// provenance of facts that do not carry their own LastSeq, and orders
	// updates: an incoming value older than a slot's current one (a
	// re-summarization from the originals re-reads early messages) goes to
	// the history instead of superseding it. Zero: the incoming facts are
	// taken as the newest.
	Seq int64
	// Now stamps facts that are new or whose value changed (default
	// time.Now()).
	Now time.Time
}

func (o MergeOptions) withDefaults() MergeOptions {
	if o.MaxFacts <= 0 {
		o.MaxFacts = DefaultMaxFacts
	}
	if o.MaxValueLen <= 0 {
		o.MaxValueLen = DefaultMaxValueLen
	}
	if o.MaxPerFamily <= 0 {
		o.MaxPerFamily = DefaultMaxPerFamily
	}
	if o.TokenBudget == 0 {
		o.TokenBudget = DefaultFactsTokenBudget
	}
	if o.Tokens == nil {
		o.Tokens = trimmer.EstimateScript
	}
	if o.MaxNarrativeTokens == 0 {
		o.MaxNarrativeTokens = DefaultMaxNarrativeTokens
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	return o
}

// ValidPinPattern reports whether p is a well-formed pin pattern
// (path.Match syntax, non-blank).
func ValidPinPattern(p string) bool {
	if strings.TrimSpace(p) == "" {
		return false
	}
	_, err := path.Match(p, "")
	return err == nil
}

// NormalizeKey returns the form under which fact keys are matched: trimmed,
// lower-cased, with every run of white space, hyphens and underscores folded
// to a single underscore and none at either end. "Order ID", "order-id" and
// "order_id" all normalise to "order_id".
func NormalizeKey(key string) string { return factkey.Normalize(key) }
