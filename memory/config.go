package memory

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/strata-go/strata/internal/nilcheck"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

// Config controls when and how a Manager folds old messages. Start from
// DefaultConfig and change what differs: there, setting a field to zero
// means what its documentation says (often "off" or "no limit"). A Config
// literal is held to a stricter rule, so that a field merely left out never
// switches a protection off: its zero timings and zero fact caps mean their
// defaults, and Validate refuses it when a field whose zero would switch
// something off (MaxMessageBytes, the failure cooldowns, the output
// reserve, the chunked policy's thresholds) is zero, saying to start from
// DefaultConfig().
type Config struct {
	// Enabled turns hierarchical memory on (summary.enabled). Off: loads
	// return the last 2 × MaxConversationTurns messages (takeLast).
	Enabled bool
	// TriggerMessageCount: hierarchical mode applies only when a session
	// stores strictly more messages than this (default 20). It may be below
	// RecentMessageCount, as arc-reactor allows: above the trigger a
	// session is shown hierarchically as soon as any message precedes the
	// verbatim window, and in full until then.
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
	// MaxFactsPerFamily is the share of one multi-valued kind of fact
	// (price, price_2, …; see summary.FamilyOf): when the ledger is over
	// MaxFacts or FactsTokenBudget, facts of a kind beyond this many are
	// dropped before any other, so that one kind of chatter cannot flush
	// the rest (default 5; 0 means the default). Single-valued kinds (name,
	// phone, email, addresses, statuses) hold one current value anyway.
	MaxFactsPerFamily int
	// FactsTokenBudget caps the facts block, in tokens of the estimator:
	// beyond it the least important facts are dropped (default 1500; 0
	// means the default). Pinned and identity facts are never dropped.
	FactsTokenBudget int
	// PinnedFactKeys are patterns (path.Match syntax, matched against
	// normalised keys, e.g. "order_id" or "case_*") of facts that are
	// never evicted and never removed by a summarizer (default none).
	PinnedFactKeys []string
	// MaxNarrativeTokens caps the stored narrative of any summarizer, cut
	// at a sentence boundary (default 500; 0 means the default).
	MaxNarrativeTokens int
	// ShowPreviousValues renders a superseded fact value on its fact's line,
	// "- phone: 555-2222 (previously 555-1111)", and counts it in
	// FactsTokenBudget. Off by default, as in arc-reactor, which shows
	// only the current value; a superseded value is never shown as a fact
	// of its own either way.
	ShowPreviousValues bool

	// SharedSessionPrefixes are id prefixes (e.g. "slack-") of sessions
	// shared by all their participants: every user may read, append to and
	// delete them, as arc-reactor lets every participant of a Slack thread
	// share its conversation. The manager stores them under one owner,
	// "shared", whoever calls, so the store's ownership check still runs
	// with every operation; Sessions therefore lists them for no user but
	// "shared". Each message keeps its author, and stores that record
	// participants (store.ParticipantLister) list a shared session to the
	// users who wrote in it (SharedSessions; the catalogue, package
	// catalog, lists and finds them so, with one title for all its
	// participants), never to every user. Empty by default, unlike arc-reactor, which shares slack-
	// sessions implicitly: a session belongs to the user who created it
	// unless its id is explicitly declared shared. A blank prefix, which
	// would share every session, is refused.
	SharedSessionPrefixes []string
	// SharedSessionViewers are users (say, administrators) to whom
	// listings and searches show every shared session; every other user
	// sees only those they wrote in. Keep it small. Reading a shared
	// session by its id is open to every user either way. Empty by
	// default; ids must be non-blank, without control characters.
	SharedSessionViewers []string

	// Policy chooses when to fold: PolicyParity (default) folds everything
	// before the verbatim window after every save above the trigger, as
	// arc-reactor does; PolicyChunked folds in chunks (the knobs below).
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
	// ContextWindowTokens is the model's context window (default 128000)
	// and OutputReserveTokens the part of it kept for the model's answer
	// (default 4096). Together with Estimator they are the one token
	// budget: Manager.Prompt fits every prompt into it, the chunked policy
	// folds before unfolded messages would not fit it, and
	// FoldTokenFraction is a fraction of it.
	ContextWindowTokens int
	OutputReserveTokens int
	// Estimator counts the tokens of that budget, and of the facts and
	// narrative caps (nil: trimmer.NewEstimator(), script-aware, and the
	// exact tokenizer of a model trimmer.TiktokenEncodingForModel knows in
	// that model's view, Manager.ForModel). Set it in code, e.g. to a
	// tokenizer that matches the model; it has no configuration key.
	// Either way a model view's prompts are priced as calibrated from the
	// usage its replies report (Manager.ObserveUsage). Manager.Config
	// returns the estimator in use.
	Estimator trimmer.Estimator
	// SafetyTurns (chunked): fold once the messages no summary covers yet
	// (the verbatim window included) hold this many user turns, even
	// when small (default 15; 0 = off).
	SafetyTurns int
	// FoldMode (chunked) says what a fold sends to the summarizer:
	// "incremental" (default) the existing summary plus only the new
	// messages; "full" the original messages with the existing facts, like
	// arc-reactor.
	FoldMode string
	// MaxFoldInputTokens caps one summarizer call's input, under either
	// policy; a larger range is folded in successive chunks, each after the
	// first continuing the summary incrementally (default 8000; 0 = no
	// cap). A parity fold thus still starts from the original messages but
	// never sends more than this at once; it saves the chunks that move
	// the stored summary's cursor on, the earlier ones only in memory (a
	// load meanwhile shows the stored summary whole).
	MaxFoldInputTokens int
	// SessionDailyTokenBudget caps the summarizer tokens (input and
	// output, as reported or estimated) one session may spend per day
	// (UTC): past it, the session's folds use the offline extractive
	// summarizer until the day ends, and their journal records and the
	// metrics say so (fallback "budget"). It is counted from the session's
	// journal, so replicas share it. 0 (the default) = no budget.
	SessionDailyTokenBudget int
	// PromptMemoryBudget (chunked) caps the tokens of summary + verbatim
	// tail in what the model sees (0 = the token trigger's threshold, and
	// never more than ContextWindowTokens − OutputReserveTokens): when the
	// tail does not fit, its oldest messages are folded first — down to
	// MinTailMessages — and only then is the narrative truncated for the
	// view. Every message after the summary's cursor is always shown.
	PromptMemoryBudget int
	MinTailMessages    int

	// MaxConcurrentFolds bounds the background folds of a Manager that
	// run at once, across all its sessions (0, the default: half the CPUs
	// the Go runtime may use, GOMAXPROCS/2, at least 1). A fold due while
	// all run waits its turn, first come first served, and its session's
	// saves go on meanwhile; when it runs it folds every message due by
	// then, so under a burst of writes folds become fewer and larger
	// rather than more concurrent. A fold never queues when a load found
	// it due (the session is being talked to: its prompts keep their
	// usual size and a reply never waits behind other sessions' folds),
	// nor while Flush or Close waits, and a queued one starts once more
	// messages than three times the verbatim window plus buffer (or three
	// times the trigger's count, when larger) were saved to its session
	// meanwhile. Raise it for a summarizer whose calls mostly wait on a
	// remote model.
	MaxConcurrentFolds int

	// LoadGrace is how long a load waits for the regeneration of a stale
	// summary (default 300ms). A fast summarizer, such as the offline one,
	// finishes within it, so the load shows the fresh summary as
	// arc-reactor does; a slower fold goes on in the background while the load
	// shows the stale summary plus every message after its cursor verbatim.
	LoadGrace time.Duration
	// FoldWait bounds how long a load waits for a session's first summary
	// (none usable yet) before it degrades — parity: takeLast; chunked: the
	// whole unfolded tail — and how long a fold waits for another process's
	// fold of the same session (default 10s). A load never waits past its
	// context's deadline either: it returns the degraded view in time.
	FoldWait time.Duration
	// FoldLockTTL is how long a cross-process fold lock (FoldLocker) is held
	// at most before another replica may take it over (default 2m; keep it
	// above the summarizer's timeout).
	FoldLockTTL time.Duration
	// SupersedeDelay: saves that arrive while a session's fold runs ask it
	// to run once more when it finishes; it first waits this long (default
	// 100ms) so that a burst of saves settles into one more fold (a fold
	// that found nothing to fold runs again at once; a failed one waits
	// too) — unless Manager.Flush waits, a load finds that fold due, or
	// more messages were saved meanwhile than a fold queued for a slot
	// waits for (MaxConcurrentFolds), which end the wait. A running fold
	// is never cancelled by a save: with a slow summarizer, cancelling
	// would keep the summary from ever advancing.
	SupersedeDelay time.Duration
	// SummarizeTimeout is the deadline of each summarizer call (default
	// 60s): past it the call's context is cancelled and the fold fails (a
	// failed fold: the session cools down, the summary is unchanged), even
	// when the summarizer ignores its context — the fold stops waiting for
	// it, releases its cross-process lock, and the late result is
	// discarded. Keep FoldLockTTL above it.
	SummarizeTimeout time.Duration
	// CloseTimeout bounds Manager.Close (default 5s): Close lets the
	// background folds in flight or queued finish for four fifths of it,
	// then cancels what still runs and waits for it until the end of it; a
	// summarizer that ignores cancellation is abandoned, and its result is
	// never saved.
	CloseTimeout time.Duration

	// fromDefaults is set by DefaultConfig (and kept by copies): the zero
	// fields of such a Config were chosen, not left out of a literal.
	fromDefaults bool
}

// withDefaults fills the fields whose zero means their default (timings,
// fact caps, policy, fold mode and estimator).
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	for _, f := range []struct{ v, def *time.Duration }{
		{&c.LoadGrace, &d.LoadGrace}, {&c.FoldWait, &d.FoldWait}, {&c.FoldLockTTL, &d.FoldLockTTL},
		{&c.SupersedeDelay, &d.SupersedeDelay}, {&c.CloseTimeout, &d.CloseTimeout},
		{&c.SummarizeTimeout, &d.SummarizeTimeout},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	for _, f := range []struct{ v, def *int }{
		{&c.MaxFacts, &d.MaxFacts}, {&c.MaxFactValueLen, &d.MaxFactValueLen},
		{&c.MaxFactsPerFamily, &d.MaxFactsPerFamily}, {&c.FactsTokenBudget, &d.FactsTokenBudget},
		{&c.MaxNarrativeTokens, &d.MaxNarrativeTokens},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	if c.Policy == "" {
		c.Policy = d.Policy
	}
	if c.FoldMode == "" {
		c.FoldMode = d.FoldMode
	}
	if nilcheck.IsNil(c.Estimator) {
		c.Estimator = trimmer.NewEstimator()
	}
	// The manager keeps its own copies: a caller's later change to its
	// slices must not race with the manager's reads.
	c.PinnedFactKeys = slices.Clone(c.PinnedFactKeys)
	c.SharedSessionPrefixes = slices.Clone(c.SharedSessionPrefixes)
	c.SharedSessionViewers = slices.Clone(c.SharedSessionViewers)
	// Validated and complete: a starting point like DefaultConfig.
	c.fromDefaults = true
	return c
}

// Policy names a folding policy.
type Policy string

// The folding policies.
const (
	PolicyParity  Policy = "parity"
	PolicyChunked Policy = "chunked"
)

// The values of Config.FoldMode.
const (
	foldIncremental = "incremental"
	foldFull        = "full"
)

// DefaultConfig returns arc-reactor's defaults: summaries off, trigger 20,
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
		MaxFactsPerFamily:    5,
		FactsTokenBudget:     1500,
		MaxNarrativeTokens:   500,
		Policy:               PolicyParity,
		BufferMessageCount:   20,
		FoldTokenFraction:    0.7,
		ContextWindowTokens:  128_000,
		OutputReserveTokens:  4096,
		SafetyTurns:          15,
		FoldMode:             foldIncremental,
		MaxFoldInputTokens:   8_000,
		MinTailMessages:      4,
		LoadGrace:            300 * time.Millisecond,
		FoldWait:             10 * time.Second,
		FoldLockTTL:          2 * time.Minute,
		SupersedeDelay:       100 * time.Millisecond,
		CloseTimeout:         5 * time.Second,
		SummarizeTimeout:     60 * time.Second,
		fromDefaults:         true,
	}
}

// FieldError is the error Validate returns: the Config field at fault, its
// value and what is allowed; check for it with errors.As. Configuration
// loaders map Field to their own key names rather than validating the same
// rules again.
type FieldError struct {
	Field string // the Config field, e.g. "RecentMessageCount"
	Value any    // the rejected value
	Want  string // what is allowed, e.g. ">= 1"
}

// Error implements error.
func (e *FieldError) Error() string {
	return fmt.Sprintf("memory: invalid config: %s = %v, want %s", e.Field, e.Value, e.Want)
}

// Validate reports the first invalid setting, naming it and its allowed
// range. It rejects the values that make arc-reactor misbehave silently
// (negative windows and triggers).
func (c Config) Validate() error {
	bad := func(field string, v any, want string) error {
		return &FieldError{Field: field, Value: v, Want: want}
	}
	switch {
	// 0 is a window arc-reactor accepts (no verbatim messages, or an empty
	// takeLast); only a Config made from DefaultConfig may ask for it, since
	// in a literal a zero usually means "not set".
	case c.MaxConversationTurns < 0:
		return bad("MaxConversationTurns", c.MaxConversationTurns, ">= 0")
	case c.MaxConversationTurns == 0 && !c.fromDefaults:
		return bad("MaxConversationTurns", c.MaxConversationTurns, ">= 1 in a literal (start from DefaultConfig() for an empty takeLast window)")
	case c.RecentMessageCount < 0:
		return bad("RecentMessageCount", c.RecentMessageCount, ">= 0")
	case c.RecentMessageCount == 0 && !c.fromDefaults:
		return bad("RecentMessageCount", c.RecentMessageCount, ">= 1 in a literal (start from DefaultConfig() for no verbatim window)")
	case c.TriggerMessageCount < 0:
		return bad("TriggerMessageCount", c.TriggerMessageCount, ">= 0 (0 = every non-empty session)")
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
	case c.MaxFactsPerFamily < 0:
		return bad("MaxFactsPerFamily", c.MaxFactsPerFamily, ">= 1 (0 = default 5)")
	case c.FactsTokenBudget < 0:
		return bad("FactsTokenBudget", c.FactsTokenBudget, ">= 1 (0 = default 1500)")
	case c.MaxNarrativeTokens < 0:
		return bad("MaxNarrativeTokens", c.MaxNarrativeTokens, ">= 1 (0 = default 500)")
	case c.Policy != "" && c.Policy != PolicyParity && c.Policy != PolicyChunked:
		return bad("Policy", c.Policy, `"parity" or "chunked"`)
	case c.BufferMessageCount < 0:
		return bad("BufferMessageCount", c.BufferMessageCount, ">= 0")
	case c.FoldTokenThreshold < 0:
		return bad("FoldTokenThreshold", c.FoldTokenThreshold, ">= 0 (0 = off)")
	case c.FoldTokenFraction < 0 || c.FoldTokenFraction > 1:
		return bad("FoldTokenFraction", c.FoldTokenFraction, "between 0 and 1 (0 = off)")
	case c.ContextWindowTokens < 1:
		return bad("ContextWindowTokens", c.ContextWindowTokens, ">= 1 (start from DefaultConfig())")
	case c.OutputReserveTokens < 0 || c.OutputReserveTokens >= c.ContextWindowTokens:
		return bad("OutputReserveTokens", c.OutputReserveTokens, fmt.Sprintf(">= 0 and < ContextWindowTokens (%d)", c.ContextWindowTokens))
	case c.SafetyTurns < 0:
		return bad("SafetyTurns", c.SafetyTurns, ">= 0 (0 = off)")
	case c.FoldMode != "" && c.FoldMode != foldIncremental && c.FoldMode != foldFull:
		return bad("FoldMode", c.FoldMode, `"incremental" or "full"`)
	case c.MaxFoldInputTokens < 0:
		return bad("MaxFoldInputTokens", c.MaxFoldInputTokens, ">= 0 (0 = no cap)")
	case c.MaxConcurrentFolds < 0:
		return bad("MaxConcurrentFolds", c.MaxConcurrentFolds, ">= 0 (0 = GOMAXPROCS/2, at least 1)")
	case c.SessionDailyTokenBudget < 0:
		return bad("SessionDailyTokenBudget", c.SessionDailyTokenBudget, ">= 0 (0 = no budget)")
	case c.PromptMemoryBudget < 0:
		return bad("PromptMemoryBudget", c.PromptMemoryBudget, ">= 0 (0 = off)")
	case c.MinTailMessages < 0:
		return bad("MinTailMessages", c.MinTailMessages, ">= 0")
	case c.LoadGrace < 0:
		return bad("LoadGrace", c.LoadGrace, ">= 0 (0 = default 300ms)")
	case c.SummarizeTimeout < 0:
		return bad("SummarizeTimeout", c.SummarizeTimeout, ">= 0 (0 = default 60s)")
	case c.FoldWait < 0:
		return bad("FoldWait", c.FoldWait, ">= 0 (0 = default 10s)")
	case c.FoldLockTTL < 0:
		return bad("FoldLockTTL", c.FoldLockTTL, ">= 0 (0 = default 2m)")
	case c.SupersedeDelay < 0:
		return bad("SupersedeDelay", c.SupersedeDelay, ">= 0 (0 = default 100ms)")
	case c.CloseTimeout < 0:
		return bad("CloseTimeout", c.CloseTimeout, ">= 0 (0 = default 5s)")
	}
	if !c.fromDefaults {
		// A literal: a zero here was most likely left out, not chosen.
		for _, f := range []struct {
			name string
			zero bool
			off  string
		}{
			{"MaxMessageBytes", c.MaxMessageBytes == 0, "no size limit"},
			{"FailureCooldown", c.FailureCooldown == 0, "retrying a failed summarizer at once"},
			{"MaxFailureCooldown", c.MaxFailureCooldown == 0, "retrying a failed summarizer at once"},
			{"OutputReserveTokens", c.OutputReserveTokens == 0, "no room kept for the answer"},
			{"BufferMessageCount", c.BufferMessageCount == 0, "folding at every message past the window"},
			{"FoldTokenFraction", c.FoldTokenFraction == 0, "no token trigger"},
			{"SafetyTurns", c.SafetyTurns == 0, "no turn trigger"},
			{"MaxFoldInputTokens", c.MaxFoldInputTokens == 0, "no cap on a summarizer call"},
			{"MinTailMessages", c.MinTailMessages == 0, "no verbatim messages kept when the budget is tight"},
		} {
			if f.zero {
				return bad(f.name, 0, fmt.Sprintf("a value in a Config literal (0 would mean %s): start from DefaultConfig() and change what differs", f.off))
			}
		}
	}
	for i, p := range c.SharedSessionPrefixes {
		if strings.TrimSpace(p) == "" {
			return bad(fmt.Sprintf("SharedSessionPrefixes[%d]", i), p, "a non-blank prefix (a blank one would share every session)")
		}
	}
	for i, u := range c.SharedSessionViewers {
		if strings.TrimSpace(u) == "" || strings.IndexFunc(u, unicode.IsControl) >= 0 {
			return bad(fmt.Sprintf("SharedSessionViewers[%d]", i), u, "a non-blank user id without control characters")
		}
	}
	for i, p := range c.PinnedFactKeys {
		if !summary.ValidPinPattern(p) {
			return bad(fmt.Sprintf("PinnedFactKeys[%d]", i), p, "a non-blank path.Match pattern")
		}
	}
	return nil
}

// foldSlots is MaxConcurrentFolds with its default filled in.
func (c Config) foldSlots() int {
	if c.MaxConcurrentFolds > 0 {
		return c.MaxConcurrentFolds
	}
	return max(1, runtime.GOMAXPROCS(0)/2)
}

// queueBound is how many messages may be saved to a session while its
// fold waits for a slot (MaxConcurrentFolds) before that fold starts
// without one: queueTails times the session's usual tail (the verbatim
// window plus chunked's buffer, or parity's trigger when larger).
func (c Config) queueBound() int {
	return queueTails * max(c.RecentMessageCount+c.BufferMessageCount, c.TriggerMessageCount)
}

// queueTails is queueBound in usual tails. Under a load the folds cannot
// keep up with, each fold that starts without a slot adds a fold to the
// ones the slots run, and each fold costs a summarizer call and a save
// besides its messages: a bound of three tails lets a queued fold cover
// about twice as many messages as a bound of one: fewer, larger folds,
// and so fewer summarizer calls and saves for the same messages (parity,
// which re-summarizes the whole session at every fold, gains the most).
// The tail of a session written to and not loaded meanwhile stays within
// about four times its usual size; a load that finds its fold due never
// queues (MaxConcurrentFolds).
const queueTails = 3
