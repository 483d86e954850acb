package memory

import (
	"errors"
	"fmt"
	"time"
)

// Config controls when and how a Manager folds old messages. Start from
// DefaultConfig; in a literal, the fields after MaxConversationTurns may be
// left zero (zero means the documented default or "off").
type Config struct {
	// Enabled turns hierarchical memory on (summary.enabled). Off: loads
	// return the last 2 × MaxConversationTurns messages (takeLast).
	Enabled bool
	// TriggerMessageCount: hierarchical mode applies only when a session
	// stores strictly more messages than this (default 20).
	TriggerMessageCount int
	// RecentMessageCount is the verbatim window (default 10).
	RecentMessageCount int
	// MaxConversationTurns: the takeLast window is 2 × this (default 10).
	MaxConversationTurns int

	// MaxMessageBytes rejects larger messages with ErrMessageTooLarge
	// (default 1 MiB; 0 = no limit).
	MaxMessageBytes int
	// FailureCooldown is the pause after a failed summarization before the
	// same session is summarized again; it doubles with each consecutive
	// failure up to MaxFailureCooldown (defaults 2s and 5m; 0 = retry at
	// once).
	FailureCooldown    time.Duration
	MaxFailureCooldown time.Duration
	// MaxFacts and MaxFactValueLen cap the fact ledger (defaults 100 and
	// 500 characters; 0 means the default).
	MaxFacts        int
	MaxFactValueLen int

	// Policy chooses when to fold: PolicyParity (default) folds everything
	// before the verbatim window after every save above the trigger, as the
	// reference does; PolicyChunked folds in chunks (the knobs below).
	Policy Policy
	// BufferMessageCount (B, chunked): the verbatim window may grow from
	// RecentMessageCount (K) to K+B messages; only beyond K+B are the oldest
	// messages folded, down to K, in one go (default 20; 0 = fold at K).
	BufferMessageCount int
	// FoldTokenThreshold (chunked): fold when summary + unfolded messages
	// exceed this many tokens (0 = off). FoldTokenFraction does the same as
	// a fraction of ContextWindowTokens (default 0.7; 0 = off). The smaller
	// active threshold applies.
	FoldTokenThreshold int
	FoldTokenFraction  float64
	// ContextWindowTokens is the model's context window, for
	// FoldTokenFraction (default 128000).
	ContextWindowTokens int
	// SafetyTurns (chunked): fold at least every this many user turns, even
	// when small (default 15; 0 = off).
	SafetyTurns int
	// FoldMode (chunked): FoldIncremental (default) sends the existing
	// summary plus only the new messages; FoldFull re-summarizes from the
	// original messages with the existing facts, like the reference.
	FoldMode FoldMode
	// MaxFoldInputTokens (chunked) caps one summarizer call's input; a larger
	// range is folded in successive chunks (default 8000; 0 = no cap).
	MaxFoldInputTokens int
	// PromptMemoryBudget (chunked) caps the tokens of summary + verbatim
	// window in what the model sees: the oldest verbatim turns are dropped
	// first, down to MinTailMessages, then the narrative is truncated (0 =
	// off). Dropped verbatim messages are always already folded.
	PromptMemoryBudget int
	MinTailMessages    int
}

// Policy names a folding policy.
type Policy string

// The folding policies.
const (
	PolicyParity  Policy = "parity"
	PolicyChunked Policy = "chunked"
)

// FoldMode says what a chunked fold sends to the summarizer.
type FoldMode string

// The fold modes.
const (
	FoldIncremental FoldMode = "incremental"
	FoldFull        FoldMode = "full"
)

// DefaultConfig returns the reference defaults: summaries off, trigger 20,
// recent 10, 10 conversation turns.
func DefaultConfig() Config {
	return Config{
		Enabled:              false,
		TriggerMessageCount:  20,
		RecentMessageCount:   10,
		MaxConversationTurns: 10,
		MaxMessageBytes:      1 << 20,
		FailureCooldown:      2 * time.Second,
		MaxFailureCooldown:   5 * time.Minute,
		MaxFacts:             100,
		MaxFactValueLen:      500,
		Policy:               PolicyParity,
		BufferMessageCount:   20,
		FoldTokenFraction:    0.7,
		ContextWindowTokens:  128_000,
		SafetyTurns:          15,
		FoldMode:             FoldIncremental,
		MaxFoldInputTokens:   8_000,
		MinTailMessages:      4,
	}
}

// ErrInvalidConfig is wrapped by every error Validate returns.
var ErrInvalidConfig = errors.New("memory: invalid config")

// Validate reports the first invalid setting, naming it and its allowed
// range. It rejects the values that make the reference misbehave silently
// (negative windows, a trigger below the verbatim window).
func (c Config) Validate() error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("%w: %s = %v, want %s", ErrInvalidConfig, field, v, want)
	}
	switch {
	case c.MaxConversationTurns < 1:
		return bad("MaxConversationTurns", c.MaxConversationTurns, ">= 1")
	case c.RecentMessageCount < 1:
		return bad("RecentMessageCount", c.RecentMessageCount, ">= 1")
	case c.TriggerMessageCount < c.RecentMessageCount:
		return bad("TriggerMessageCount", c.TriggerMessageCount, fmt.Sprintf(">= RecentMessageCount (%d)", c.RecentMessageCount))
	case c.MaxMessageBytes < 0:
		return bad("MaxMessageBytes", c.MaxMessageBytes, ">= 0 (0 = no limit)")
	case c.FailureCooldown < 0:
		return bad("FailureCooldown", c.FailureCooldown, ">= 0")
	case c.MaxFailureCooldown < c.FailureCooldown:
		return bad("MaxFailureCooldown", c.MaxFailureCooldown, fmt.Sprintf(">= FailureCooldown (%s)", c.FailureCooldown))
	case c.MaxFacts < 0:
		return bad("MaxFacts", c.MaxFacts, ">= 1 (0 = default 100)")
	case c.MaxFactValueLen < 0:
		return bad("MaxFactValueLen", c.MaxFactValueLen, ">= 1 (0 = default 500)")
	case c.Policy != "" && c.Policy != PolicyParity && c.Policy != PolicyChunked:
		return bad("Policy", c.Policy, `"parity" or "chunked"`)
	case c.BufferMessageCount < 0:
		return bad("BufferMessageCount", c.BufferMessageCount, ">= 0")
	case c.FoldTokenThreshold < 0:
		return bad("FoldTokenThreshold", c.FoldTokenThreshold, ">= 0 (0 = off)")
	case c.FoldTokenFraction < 0 || c.FoldTokenFraction > 1:
		return bad("FoldTokenFraction", c.FoldTokenFraction, "between 0 and 1 (0 = off)")
	case c.FoldTokenFraction > 0 && c.ContextWindowTokens < 1:
		return bad("ContextWindowTokens", c.ContextWindowTokens, ">= 1 when FoldTokenFraction is set")
	case c.SafetyTurns < 0:
		return bad("SafetyTurns", c.SafetyTurns, ">= 0 (0 = off)")
	case c.FoldMode != "" && c.FoldMode != FoldIncremental && c.FoldMode != FoldFull:
		return bad("FoldMode", c.FoldMode, `"incremental" or "full"`)
	case c.MaxFoldInputTokens < 0:
		return bad("MaxFoldInputTokens", c.MaxFoldInputTokens, ">= 0 (0 = no cap)")
	case c.PromptMemoryBudget < 0:
		return bad("PromptMemoryBudget", c.PromptMemoryBudget, ">= 0 (0 = off)")
	case c.MinTailMessages < 0:
		return bad("MinTailMessages", c.MinTailMessages, ">= 0")
	}
	return nil
}
