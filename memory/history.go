package memory

import (
	"sync/atomic"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// Mode says how a History was assembled. Its values are the strings of
// the HTTP API's /context responses, the CLI's reports and the metrics
// attributes.
type Mode string

// The values of History.Mode.
const (
	// ModeEmpty: no session, or no messages.
	ModeEmpty Mode = "empty"
	// ModeTakeLast: summaries off or the session below the trigger: the
	// last 2 × MaxConversationTurns messages.
	ModeTakeLast Mode = "take-last"
	// ModeHierarchical: facts + narrative + the verbatim window.
	ModeHierarchical Mode = "hierarchical"
	// ModeAll: nothing is folded yet, every message is shown.
	ModeAll Mode = "all"
	// ModeStale: the summary lags behind (its fold is still running);
	// every message after its cursor is shown verbatim.
	ModeStale Mode = "stale"
	// ModeFallback: no summary could be had in time, or the summarizer
	// failed: parity shows takeLast, chunked the whole unfolded tail.
	ModeFallback Mode = "fallback"
)

// History is an assembled view of a session.
type History struct {
	// Messages is what the model receives (LoadHistory's result).
	Messages []llms.ChatMessage
	// Mode says how the view was assembled (ModeEmpty, ModeTakeLast,
	// ModeHierarchical, ModeAll, ModeStale or ModeFallback).
	Mode Mode
	// Summary is the summary shown, nil when none.
	Summary *summary.Summary
	// Recent are the stored messages shown verbatim.
	Recent []store.Message
	// Total is the number of stored messages.
	Total int
}

// Stats are the manager's counters since it was created.
type Stats struct {
	Loads           int64 // Load/LoadHistory calls with a session id
	LoadErrors      int64 // loads that returned a store error
	OwnerDenied     int64 // loads refused because another user owns the session
	Fallbacks       int64 // loads that showed a stale summary or degraded
	Saves           int64 // successful appends
	SaveErrors      int64 // failed appends
	LazyFolds       int64 // folds started for a load
	BackgroundFolds int64 // folds started by saves
	SummarizerCalls int64 // calls to the summary service
	Folds           int64 // folds that stored their summary
	FoldFailures    int64 // summarizer errors and empty replies
	// Summarizer tokens: as the summarizer reported them, and estimated
	// (input and output together) for the calls that reported none. A
	// session's totals are in its journal (Manager.Journal).
	SummarizerInputTokens     int64
	SummarizerOutputTokens    int64
	SummarizerEstimatedTokens int64
	// BudgetFallbacks counts the summarizer calls made by the offline
	// summarizer because a session's daily token budget was spent
	// (Config.SessionDailyTokenBudget).
	BudgetFallbacks int64
}

type counters struct {
	loads, loadErrors, ownerDenied, fallbacks, saves, saveErrors     atomic.Int64
	lazyFolds, backgroundFolds, summarizerCalls, folds, foldFailures atomic.Int64

	summarizerInputTokens, summarizerOutputTokens, summarizerEstimatedTokens, budgetFallbacks atomic.Int64
}

// Stats returns a snapshot of the counters.
func (m *Manager) Stats() Stats {
	c := m.stats
	return Stats{
		Loads: c.loads.Load(), LoadErrors: c.loadErrors.Load(), OwnerDenied: c.ownerDenied.Load(),
		Fallbacks: c.fallbacks.Load(), Saves: c.saves.Load(), SaveErrors: c.saveErrors.Load(),
		LazyFolds: c.lazyFolds.Load(), BackgroundFolds: c.backgroundFolds.Load(),
		SummarizerCalls: c.summarizerCalls.Load(), Folds: c.folds.Load(), FoldFailures: c.foldFailures.Load(),
		SummarizerInputTokens: c.summarizerInputTokens.Load(), SummarizerOutputTokens: c.summarizerOutputTokens.Load(),
		SummarizerEstimatedTokens: c.summarizerEstimatedTokens.Load(), BudgetFallbacks: c.budgetFallbacks.Load(),
	}
}
