package memory

import (
	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/trimmer"
)

// Prompt is the one prompt builder: it returns the whole prompt — the system
// prompt (when not empty) followed by history fitted into the manager's
// budget (ContextWindowTokens − OutputReserveTokens − reserve, less the
// system prompt, priced by its estimator) as trimmer.Trimmer.TrimReport
// fits it. The last user message (the agent's current question) always
// stays. Older history between the leading system messages (facts and
// summary) and that question goes first, oldest first; then the facts and
// summary, one at a time, but only to keep the tool rounds that follow the
// question; then those tool rounds (and a trailing answer), oldest first. A
// tool call is kept or dropped together with its results. What is left and
// still does not fit is cut, each cut text ending with
// trimmer.TruncationMarker. reserve holds back tokens for what the caller
// sends beside the messages, such as tool definitions. When not even the
// question cut fits, the prompt holds the question alone, whole, over
// budget: an agent sends its question rather than an empty prompt (the
// report says so).
//
// The report tells how the history was fitted: the budget the system prompt
// and reserve leave it, its tokens before and after, how many of its
// messages were dropped (Removed) or cut (Truncated), and whether nothing
// could fit, not even cut (OverBudget). It counts the history only, never
// the system prompt's message.
//
// Prices follow the provider's own count once it is known (see ForModel
// and ObserveUsage): each text is priced by the model's exact tokenizer or
// at the rates learned for its character classes (or by a configured
// estimator scaled as learned), and the trimmer's per-message overhead
// (trimmer.MessageOverheadTokens) is then given back down to the
// provider's framing (4 tokens a message and 3 priming the reply, or as
// learned); the report's Budget includes what was given back.
func (m *Manager) Prompt(systemPrompt string, history []llms.ChatMessage, reserve int) ([]llms.ChatMessage, trimmer.Report) {
	var trimmed []llms.ChatMessage
	var rep trimmer.Report
	if est, f := m.priceFor(); f != nil {
		trimmed, rep = m.calibratedPrompt(est, *f, systemPrompt, history, reserve)
	} else {
		trimmed, rep = m.cost.TrimReport(history, systemPrompt, reserve)
	}
	if systemPrompt == "" {
		return trimmed, rep
	}
	return append([]llms.ChatMessage{llms.SystemChatMessage{Content: systemPrompt}}, trimmed...), rep
}
