package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/chatmsg"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/trimmer"
)

// This file holds the two checks of message lists that are more than a
// field's validation: tool results must answer a call of their session,
// and a context must fit its token budget.

// --- tool results ---------------------------------------------------------

// toolLookupPage is how many stored messages one read of the tool-call
// lookup returns.
const toolLookupPage = 500

// firstUnanswered returns the index of the first tool result in msgs that
// answers neither a tool call made earlier in msgs nor one of stored, with
// its call id; -1 when every result answers a call.
func firstUnanswered(msgs []memory.Message, stored map[string]bool) (int, string) {
	made := map[string]bool{}
	for i, m := range msgs {
		for _, tc := range m.ToolCalls {
			made[tc.ID] = true
		}
		if m.Role == memory.RoleTool && !made[m.ToolCallID] && !stored[m.ToolCallID] {
			return i, m.ToolCallID
		}
	}
	return -1, ""
}

// unknownToolCall is the answer to a tool result whose call is not in the
// session.
func unknownToolCall(i int, call string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "invalid_message",
		msg: fmt.Sprintf("messages[%d].tool_call_id %q: no tool call with this id precedes it in the request or in the session", i, call)}
}

// checkToolResults returns an *apiError (400) when a tool result of msgs
// answers no tool call: neither one made earlier in msgs nor one the
// session already holds. The stored calls are looked up through the
// manager, as user, only when the request does not hold them all; a
// missing session or another user's gives ErrNotFound or ErrNotOwner.
//
// The lookup and the append that follows are two steps, and that is safe:
// only the session's owner can append to it (the append checks ownership
// in the same atomic step as the write) or delete it, so the one
// interleaving possible is the owner deleting the session in between, and
// then the append finds no session and stores nothing (404). Stored
// messages are never changed, so a call found stays in the session as long
// as the session does. (A session the owner deleted and re-created under
// the same id in between — possible only through the Go library, since
// this API names new sessions itself — would get the result beside no
// call; it is still the owner's own session.)
func (s *Server) checkToolResults(ctx context.Context, id, user string, msgs []memory.Message) error {
	i, _ := firstUnanswered(msgs, nil)
	if i < 0 {
		return nil
	}
	wanted := map[string]bool{}
	for _, m := range msgs[i:] {
		if m.Role == memory.RoleTool {
			wanted[m.ToolCallID] = true
		}
	}
	stored := map[string]bool{}
	for after := int64(0); len(wanted) > 0; {
		page, err := s.mgr.Messages(ctx, id, user, after, toolLookupPage)
		if err != nil {
			return err
		}
		for _, m := range page {
			for _, tc := range m.ToolCalls {
				if wanted[tc.ID] {
					stored[tc.ID] = true
					delete(wanted, tc.ID)
				}
			}
		}
		if len(page) < toolLookupPage {
			break
		}
		after = page[len(page)-1].Seq
	}
	if i, call := firstUnanswered(msgs, stored); i >= 0 {
		return unknownToolCall(i, call)
	}
	return nil
}

// --- context budget ---------------------------------------------------------

// truncationMarker ends the content of a message cut to fit a context
// budget.
const truncationMarker = "…[truncated]"

// fitted is a history fitted into a token budget.
type fitted struct {
	msgs      []llms.ChatMessage
	truncated int  // messages whose content was cut
	over      bool // not even the minimum fits: msgs is empty
}

// fitContext fits a history into budget tokens, as priced by s.meter: the
// leading system messages (the facts and summary blocks) first, then the
// newest messages, whole groups at a time (an assistant's tool calls with
// their results, or a single message), back to the first group that does
// not fit. Nothing newer is ever dropped to keep something older. When the
// newest group alone does not fit in what is left, its contents are cut to
// fit, each ending with truncationMarker (roles, tool calls and tool call
// ids are kept). The result is over — empty — only when even that is
// impossible: the leading system messages alone exceed the budget, or the
// newest group cannot shrink enough (its messages' overhead and markers do
// not fit).
//
// The history is first repaired the way the manager's prompt builder
// repairs it (orphan tool results and incomplete tool groups dropped); for
// a history whose newest group fits, the result is what the prompt builder
// returns whenever it has to drop only old messages.
func (s *Server) fitContext(history []llms.ChatMessage, budget int) fitted {
	// s.meter's window is unlimited: this trim only repairs.
	msgs := s.meter.Trim(history, "", 0)
	lead := 0
	for lead < len(msgs) && msgs[lead].GetType() == llms.ChatMessageTypeSystem {
		lead++
	}
	left := budget - s.meter.Cost(msgs[:lead])
	if left < 0 {
		return fitted{over: true}
	}
	groups := groupsOf(msgs[lead:])
	var kept [][]llms.ChatMessage // newest first
	truncated := 0
	for i := len(groups) - 1; i >= 0; i-- {
		g := groups[i]
		if c := s.meter.Cost(g); c <= left {
			kept, left = append(kept, g), left-c
			continue
		}
		if i == len(groups)-1 {
			cut, n, ok := s.cutGroup(g, left)
			if !ok {
				return fitted{over: true}
			}
			kept, truncated = append(kept, cut), n
		}
		break
	}
	out := slices.Clone(msgs[:lead])
	for i := len(kept) - 1; i >= 0; i-- {
		out = append(out, kept[i]...)
	}
	return fitted{msgs: out, truncated: truncated}
}

// groupsOf splits a repaired message list into the units a context keeps
// or drops whole: an assistant message with tool calls and the tool results
// after it, or a single message.
func groupsOf(msgs []llms.ChatMessage) [][]llms.ChatMessage {
	var out [][]llms.ChatMessage
	for i := 0; i < len(msgs); {
		end := i + 1
		if ai, ok := chatmsg.Value(msgs[i]).(llms.AIChatMessage); ok && len(ai.ToolCalls) > 0 {
			for end < len(msgs) && msgs[end].GetType() == llms.ChatMessageTypeTool {
				end++
			}
		}
		out = append(out, msgs[i:end])
		i = end
	}
	return out
}

// cutGroup cuts the contents of g so that it costs at most budget tokens,
// and reports how many messages it cut. The tokens left once every
// message's overhead (and tool calls) is paid are shared fairly: a message
// needing less than an equal share keeps its content whole, the others get
// equal shares, cut with truncationMarker at the end. ok is false when a
// share cannot even hold the marker.
func (s *Server) cutGroup(g []llms.ChatMessage, budget int) (cut []llms.ChatMessage, n int, ok bool) {
	est := s.mgr.Estimator()
	bare := make([]llms.ChatMessage, len(g))
	need := make([]int, len(g))
	for i, m := range g {
		bare[i] = withContent(m, "")
		need[i] = est.Estimate(m.GetContent())
	}
	free := budget - s.meter.Cost(bare)
	if free < 0 {
		return nil, 0, false
	}
	// Water-fill: the smallest needs first, each within an equal share of
	// what is left.
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
	marker := est.Estimate(truncationMarker)
	cut = make([]llms.ChatMessage, len(g))
	for i, m := range g {
		if allow[i] >= need[i] {
			cut[i] = m
			continue
		}
		if allow[i] < marker {
			return nil, 0, false
		}
		cut[i] = withContent(m, cutText(est, m.GetContent(), allow[i]))
		n++
	}
	// The estimate of a text need not add up exactly over its parts; the
	// group is only returned when it really fits.
	if s.meter.Cost(cut) > budget {
		return nil, 0, false
	}
	return cut, n, true
}

// cutText returns the longest prefix of text (whole characters) that,
// followed by truncationMarker, est prices at most tokens; just the marker
// when no prefix fits. The caller checks that the marker alone fits.
func cutText(est trimmer.Estimator, text string, tokens int) string {
	starts := make([]int, 0, len(text)+1)
	for i := range text {
		starts = append(starts, i)
	}
	starts = append(starts, len(text))
	// Binary search for the largest rune count whose prefix fits; lo always
	// names a prefix known to fit (0: the empty one).
	lo, hi := 0, len(starts)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if est.Estimate(text[:starts[mid]]+truncationMarker) <= tokens {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return text[:starts[lo]] + truncationMarker
}

// withContent returns m with its content replaced, keeping its role, tool
// calls, tool call id and name. Message types without a content field are
// returned as they are.
func withContent(m llms.ChatMessage, content string) llms.ChatMessage {
	switch v := chatmsg.Value(m).(type) {
	case llms.HumanChatMessage:
		v.Content = content
		return v
	case llms.AIChatMessage:
		v.Content = content
		return v
	case llms.SystemChatMessage:
		v.Content = content
		return v
	case llms.ToolChatMessage:
		v.Content = content
		return v
	case llms.GenericChatMessage:
		v.Content = content
		return v
	default:
		return m
	}
}
