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
	// TruncationMarker ends the text of every message Trim cuts to fit the
	// budget (see TrimReport).
	TruncationMarker = "…[truncated]"
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
	Truncated     int  // messages kept with their content cut to fit, ending with TruncationMarker
	OverBudget    bool // TokensAfter > Budget: nothing fits, not even cut (see TrimReport)
}

// Trim returns msgs fitted into the budget (see TrimReport).
func (t *Trimmer) Trim(msgs []llms.ChatMessage, systemPrompt string, toolTokenReserve int) []llms.ChatMessage {
	out, _ := t.TrimReport(msgs, systemPrompt, toolTokenReserve)
	return out
}

// TrimReport returns a new slice holding msgs fitted into
// Budget(systemPrompt, toolTokenReserve), and a Report. It never modifies
// msgs or the messages in it. It is the one fitting algorithm of the
// module: the memory manager's prompt builder fits every prompt with it,
// for agents, for replays and for the server's context endpoint alike.
//
// The unit of removal is a group: an assistant message with tool calls plus
// all its tool results, or any other single message. Groups are never
// split. The anchor is the last user message (the agent's current
// question); without one it is the newest group after the leading system
// messages.
//
//  1. Repair: nil messages, orphan tool results and incomplete groups (a tool
//     call without its result) are dropped first, whatever the budget, so
//     that the result passes Validate and broken history does not use up the
//     budget.
//  2. A repaired list that fits is returned whole.
//  3. Phase 1, old history: the groups between the leading system messages
//     (the memory's facts and summary) and the anchor are dropped, oldest
//     first, until the list fits.
//  4. Phase 1.5, memory for fresh tool context: when messages follow the
//     last user message (the tool rounds of the turn in progress), the
//     leading system messages are dropped one at a time, oldest first,
//     until the list fits.
//  5. Phase 2, the turn in progress: the groups after the last user
//     message, a trailing plain assistant answer included, are dropped,
//     oldest first, until the list fits.
//  6. Cut: when what is left — the leading system messages still there and
//     the anchor; just the last user message once phases 1.5 and 2 have run
//     dry — still does not fit, its contents are cut to fit: the tokens left
//     once every message's overhead and tool calls are paid are shared
//     equally among its messages (one needing less than its share keeps its
//     whole text), and each cut text is a prefix ending with
//     TruncationMarker (Report.Truncated counts them). Roles, tool calls,
//     tool call ids and names are kept; a cut message is a new message of
//     the same type, in value form. When the leading system messages and
//     the anchor cannot all be cut to fit (each message needs its overhead
//     and room for a marker), the leading system messages give way to the
//     anchor one at a time, oldest first. An agent's question too large for
//     the budget is thus sent cut, never left out.
//  7. Over budget: when not even the anchor alone can be cut to fit (a
//     budget of zero or less never can), Report.OverBudget is set and the
//     result is the last user message alone, whole: the one message a
//     prompt cannot do without; without a user message, the leading system
//     messages and the newest group, whole. A caller that must never exceed
//     the budget sends nothing instead (the server's context endpoint
//     answers an empty context); an agent still sends its question rather
//     than an empty prompt, and the provider, whose own count may differ
//     from the estimate, decides.
//
// So the last user message always survives, possibly cut, and stays the
// last user message; a leading system message is dropped only to keep
// fresh tool context (phase 1.5) or to make room for the anchor; apart from
// the over-budget case the result never exceeds the budget; and trimming a
// result again with the same budget returns it unchanged.
//
// Trim never moves or drops system messages to satisfy ordering rules: a
// system message after a non-system one stays where it is (it is ordinary
// history, a group of its own, which the phases may drop) and Validate
// reports it. Putting such messages where a provider accepts them is the
// provider adapter's job. For any input without such a message,
// Validate(Trim(...)) is nil.
func (t *Trimmer) TrimReport(msgs []llms.ChatMessage, systemPrompt string, toolTokenReserve int) ([]llms.ChatMessage, Report) {
	items := make([]item, len(msgs))
	for i, m := range msgs {
		items[i] = describe(m, t.est)
	}
	rep := Report{Budget: t.Budget(systemPrompt, toolTokenReserve), TokensBefore: sumCost(items)}

	kept := repair(items)
	rep.Repaired = len(items) - len(kept)
	kept, rep.Truncated = t.fit(kept, rep.Budget)

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

// fit runs steps 2 to 7 of TrimReport on a repaired list and returns the
// result and how many of its messages were cut. Over budget is read from
// the result's cost: every other result fits.
func (t *Trimmer) fit(items []item, budget int) ([]item, int) {
	if sumCost(items) <= budget {
		return items, 0
	}
	lead := leadingSystems(items)
	anchor, anchorEnd := findAnchor(items, lead)
	kept := phases(items, budget, lead, anchor, anchorEnd)
	if sumCost(kept) <= budget {
		return kept, 0
	}
	// Every phase ran dry: kept is the leading system messages still there
	// followed by the anchor. The systems give way to the anchor only when
	// they cannot all be cut to fit beside it; without an anchor there is
	// nothing to give way to.
	systems := len(kept) - (anchorEnd - anchor)
	if anchor == anchorEnd {
		systems = 0
	}
	for s := 0; s <= systems; s++ {
		if out, n, ok := t.cut(kept[s:], budget); ok {
			return out, n
		}
	}
	if u := lastUser(items); u >= 0 {
		return items[u : u+1], 0
	}
	return kept, 0
}

// phases runs phases 1, 1.5 and 2 on a repaired list whose first lead
// messages are the leading system messages and whose anchor spans
// [anchor, anchorEnd). Each phase drops a run of whole groups moving
// forward from a start index, so removal is a mark and one final copy
// rather than repeated deletion.
func phases(items []item, budget, lead, anchor, anchorEnd int) []item {
	total := sumCost(items)
	drop := make([]bool, len(items))

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
	// answer included. Without a user message the anchor is the newest
	// group and nothing follows it.
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

// findAnchor returns the span of the message (group) the phases never drop:
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
