package trimmer

import (
	"github.com/tmc/langchaingo/llms"
)

const (
	// MessageOverheadTokens is added to every message's content tokens for
	// the role markers and separators providers wrap it in.
	MessageOverheadTokens = 20
	// ToolDefinitionTokens is the reserve per active tool definition;
	// callers pass numberOfTools × ToolDefinitionTokens as toolTokenReserve.
	ToolDefinitionTokens = 200
)

// Trimmer fits message lists into a context window. It is immutable and safe
// for concurrent use as long as its estimator is.
type Trimmer struct {
	window int
	output int
	est    Estimator
}

// New returns a Trimmer for a model with maxContextWindowTokens of context
// that must keep outputReserveTokens free for its answer. est counts tokens;
// nil means NewEstimator(). Every Trim prices every message, so est is
// memoised with NewCachedEstimator (unless it already is): repeated trims of
// a growing history only estimate the new texts. est must therefore be pure.
func New(maxContextWindowTokens, outputReserveTokens int, est Estimator) *Trimmer {
	if est == nil {
		est = NewEstimator()
	} else {
		est = NewCachedEstimator(est)
	}
	return &Trimmer{window: maxContextWindowTokens, output: outputReserveTokens, est: est}
}

// Estimator returns the (memoised) estimator the Trimmer prices messages
// with, so callers can count other texts against the same cache.
func (t *Trimmer) Estimator() Estimator { return t.est }

// Budget returns the tokens left for the message list: the context window
// minus the system prompt, the output reserve and toolTokenReserve (a
// negative reserve counts as 0). It may be zero or negative.
func (t *Trimmer) Budget(systemPrompt string, toolTokenReserve int) int {
	return t.window - t.est.Estimate(systemPrompt) - t.output - max(toolTokenReserve, 0)
}

// Cost returns the tokens msgs occupy: each message's content tokens plus
// MessageOverheadTokens. An assistant message's tool calls count
// E(name+arguments) each.
func (t *Trimmer) Cost(msgs []llms.ChatMessage) int {
	total := 0
	for _, m := range msgs {
		total += describe(m, t.est).cost
	}
	return total
}

// Report describes what one trim did, for logs and metrics.
type Report struct {
	Budget        int  // tokens available for the messages (see Budget)
	TokensBefore  int  // Cost of the input
	TokensAfter   int  // Cost of the result
	Removed       int  // messages dropped, all causes
	Repaired      int  // of Removed: nil messages, orphan tool results, incomplete tool groups
	SystemRemoved int  // of Removed: system messages
	OverBudget    bool // TokensAfter > Budget: nothing more could be dropped
}

// Trim returns the messages of msgs that fit the budget (see TrimReport).
func (t *Trimmer) Trim(msgs []llms.ChatMessage, systemPrompt string, toolTokenReserve int) []llms.ChatMessage {
	out, _ := t.TrimReport(msgs, systemPrompt, toolTokenReserve)
	return out
}

// TrimReport returns a new slice holding a subsequence of msgs that fits
// Budget(systemPrompt, toolTokenReserve) as well as the rules below allow,
// and a Report. It never modifies msgs or the messages in it.
//
// The unit of removal is a group: an assistant message with tool calls plus
// all its tool results, or any other single message. Groups are never
// split. The anchor is the last user message; without one it is the newest
// group.
//
//  1. Repair: nil messages, orphan tool results and incomplete groups (a tool
//     call without its result) are dropped first, whatever the budget, so
//     that the result passes Validate and broken history does not use up the
//     budget.
//  2. Budget ≤ 0: only the last user message is kept, if there is one and
//     the list has more than one message; otherwise the repaired list is
//     returned unchanged.
//  3. Phase 1: the oldest groups between the leading system messages and
//     the anchor are dropped until the list fits.
//  4. Phase 1.5: if messages follow the last user message (fresh tool
//     context), leading system messages are dropped one at a time, oldest
//     first, until the list fits.
//  5. Phase 2: the oldest groups after the last user message, including a
//     trailing plain assistant answer, are dropped until the list fits.
//
// The last user message always survives; leading system messages are only
// dropped in Phase 1.5 or with a non-positive budget. The result can still
// exceed the budget (a single oversized message, large leading system
// messages with nothing after the last user message): Report.OverBudget
// says so.
//
// Trim never moves or drops system messages to satisfy ordering rules: a
// system message after a non-system one stays where it is (Phase 1 may drop
// it as ordinary history) and Validate reports it. Putting such messages
// where a provider accepts them is the provider adapter's job. For any input
// without such a message, Validate(Trim(...)) is nil.
func (t *Trimmer) TrimReport(msgs []llms.ChatMessage, systemPrompt string, toolTokenReserve int) ([]llms.ChatMessage, Report) {
	items := make([]item, len(msgs))
	for i, m := range msgs {
		items[i] = describe(m, t.est)
	}
	rep := Report{Budget: t.Budget(systemPrompt, toolTokenReserve), TokensBefore: sumCost(items)}

	var kept []item
	if last := lastUser(items); rep.Budget <= 0 && last >= 0 && len(items) > 1 {
		kept = []item{items[last]}
	} else {
		kept = repair(items)
		rep.Repaired = len(items) - len(kept)
		if rep.Budget > 0 {
			kept = fit(kept, rep.Budget)
		}
	}

	out := make([]llms.ChatMessage, len(kept))
	for i, it := range kept {
		out[i] = it.msg
	}
	rep.TokensAfter = sumCost(kept)
	rep.Removed = len(items) - len(kept)
	rep.SystemRemoved = countRole(items, roleSystem) - countRole(kept, roleSystem)
	rep.OverBudget = rep.TokensAfter > rep.Budget
	return out, rep
}

// repair keeps only complete groups and single non-tool, non-nil messages.
func repair(items []item) []item {
	kept := make([]item, 0, len(items))
	for i := 0; i < len(items); {
		g := scanGroup(items, i)
		if g.complete() && items[i].role != roleNone {
			kept = append(kept, items[i:g.end]...)
		}
		i = g.end
	}
	return kept
}

// fit runs phases 1, 1.5 and 2 on a repaired list. Each phase drops a run of
// whole groups moving forward from a start index, so removal is a mark and
// one final copy rather than repeated deletion.
func fit(items []item, budget int) []item {
	total := sumCost(items)
	if total <= budget {
		return items
	}
	drop := make([]bool, len(items))
	lead := leadingSystems(items)
	anchor, anchorEnd := findAnchor(items, lead)

	// Phase 1: old history between the leading system block and the anchor.
	total = dropGroups(items, drop, lead, anchor, total, budget)

	// Phase 1.5: memory messages give way to fresh tool context, which only
	// exists when something follows the last user message.
	freshContext := anchor < len(items) && items[anchor].role == roleUser && anchorEnd < len(items)
	for i := 0; freshContext && i < lead && total > budget; i++ {
		drop[i] = true
		total -= items[i].cost
	}

	// Phase 2: groups after the last user message, oldest first, a trailing
	// answer included.
	dropGroups(items, drop, anchorEnd, len(items), total, budget)

	kept := make([]item, 0, len(items))
	for i, it := range items {
		if !drop[i] {
			kept = append(kept, it)
		}
	}
	return kept
}

// dropGroups marks whole groups in [from, to) for removal, oldest first,
// while the total exceeds the budget, and returns the new total. from and to
// are group boundaries: the anchor is a user message (never inside a group)
// or a group start found by the same walk from the leading system block.
func dropGroups(items []item, drop []bool, from, to, total, budget int) int {
	for i := from; i < to && total > budget; {
		end := scanGroup(items, i).end
		for ; i < end; i++ {
			drop[i] = true
			total -= items[i].cost
		}
	}
	return total
}

// findAnchor returns the span of the message (group) that is never dropped:
// the last user message, or else the newest group after the leading system
// messages. Without either, it returns an empty span at the end.
func findAnchor(items []item, lead int) (start, end int) {
	if p := lastUser(items); p >= 0 {
		return p, p + 1
	}
	start = len(items)
	for i := lead; i < len(items); i = scanGroup(items, i).end {
		start = i
	}
	return start, len(items)
}

func leadingSystems(items []item) int {
	for i, it := range items {
		if it.role != roleSystem {
			return i
		}
	}
	return len(items)
}

func lastUser(items []item) int {
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].role == roleUser {
			return i
		}
	}
	return -1
}

func sumCost(items []item) int {
	total := 0
	for _, it := range items {
		total += it.cost
	}
	return total
}

func countRole(items []item, r role) int {
	n := 0
	for _, it := range items {
		if it.role == r {
			n++
		}
	}
	return n
}
