package trimmer

import (
	"slices"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/chatmsg"
)

// cut returns g with its contents cut so that it costs at most budget
// tokens, and how many messages it cut (step 6 of TrimReport). The tokens
// left once every message's overhead and tool calls are paid are
// water-filled: the smallest texts first, each within an equal share of
// what is left, so a text needing less than its share stays whole and the
// others get equal shares, cut to a prefix ending with TruncationMarker. ok
// is false when the budget cannot hold the fixed part, or a share cannot
// even hold the marker; then no allocation could fit g. A g that fits
// whole comes back unchanged.
//
// A cut message costs its fixed part plus the estimate of its new text,
// which is at most its share, so a g returned fits its budget exactly as
// Cost prices it.
func (t *Trimmer) cut(g []item, budget int) (out []item, n int, ok bool) {
	need := make([]int, len(g)) // tokens of each message's cuttable text
	free := budget
	for i, it := range g {
		if _, cuttable := withContent(it.msg, ""); cuttable {
			need[i] = t.est.Estimate(it.text())
		}
		free -= it.cost - need[i]
	}
	if free < 0 {
		return nil, 0, false
	}
	order := make([]int, len(g))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return need[a] - need[b] })
	allow := make([]int, len(g))
	for k, i := range order {
		allow[i] = min(need[i], free/(len(order)-k))
		free -= allow[i]
	}
	marker := t.est.Estimate(TruncationMarker)
	out = make([]item, len(g))
	for i, it := range g {
		if allow[i] >= need[i] {
			out[i] = it
			continue
		}
		if allow[i] < marker {
			return nil, 0, false
		}
		m, _ := withContent(it.msg, cutText(t.est, it.text(), allow[i]))
		out[i] = describe(m, t.est)
		n++
	}
	return out, n, true
}

// text is the part of the message's content that cutting may shorten: its
// text, without an assistant's tool calls.
func (it item) text() string {
	if ai, ok := chatmsg.Value(it.msg).(llms.AIChatMessage); ok {
		return ai.Content
	}
	return content(it.msg)
}

// cutText returns the longest prefix of text (whole characters) that,
// followed by TruncationMarker, est prices at most tokens; just the marker
// when no prefix fits. The caller checks that the marker alone fits.
func cutText(est Estimator, text string, tokens int) string {
	starts := make([]int, 0, len(text)+1)
	for i := range text {
		starts = append(starts, i)
	}
	starts = append(starts, len(text))
	// Binary search for the largest character count whose prefix fits; lo
	// always names a prefix known to fit (0: the empty one).
	lo, hi := 0, len(starts)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if est.Estimate(text[:starts[mid]]+TruncationMarker) <= tokens {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return text[:starts[lo]] + TruncationMarker
}

// withContent returns m, in value form, with its text replaced, keeping its
// role, tool calls, tool call id and name; false (and m unchanged) for a
// message type whose text it cannot replace.
func withContent(m llms.ChatMessage, text string) (llms.ChatMessage, bool) {
	switch v := chatmsg.Value(m).(type) {
	case llms.HumanChatMessage:
		v.Content = text
		return v, true
	case llms.AIChatMessage:
		v.Content = text
		return v, true
	case llms.SystemChatMessage:
		v.Content = text
		return v, true
	case llms.ToolChatMessage:
		v.Content = text
		return v, true
	case llms.GenericChatMessage:
		v.Content = text
		return v, true
	case llms.FunctionChatMessage:
		v.Content = text
		return v, true
	default:
		return m, false
	}
}
