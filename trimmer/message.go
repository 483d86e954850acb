package trimmer

import (
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/chatmsg"
)

// role is the part of a message's type that trimming and validation care
// about.
type role uint8

const (
	roleNone      role = iota // a nil message (or nil pointer): dropped by repair
	roleOther                 // function results, unknown roles
	roleSystem                // system instructions, facts, narrative
	roleUser                  // the human side
	roleAssistant             // model output, possibly with tool calls
	roleTool                  // one tool result
)

// item is one message as the trimmer sees it.
type item struct {
	msg    llms.ChatMessage
	role   role
	calls  []llms.ToolCall // assistant tool calls; non-empty marks a group head
	toolID string          // for roleTool: the id of the call it answers
	cost   int             // tokens including MessageOverheadTokens; 0 when not priced
}

func (it item) isGroupHead() bool { return it.role == roleAssistant && len(it.calls) > 0 }

// describe classifies m and, when est is non-nil, prices it. It accepts the
// value and pointer forms of every langchaingo message type and never calls
// a method on a nil pointer.
func describe(m llms.ChatMessage, est Estimator) item {
	it := classify(m)
	it.msg = m
	if est != nil {
		it.cost = price(m, est) + MessageOverheadTokens
	}
	return it
}

func classify(m llms.ChatMessage) item {
	switch v := chatmsg.Value(m).(type) {
	case nil:
		return item{role: roleNone}
	case llms.HumanChatMessage:
		return item{role: roleUser}
	case llms.SystemChatMessage:
		return item{role: roleSystem}
	case llms.AIChatMessage:
		return item{role: roleAssistant, calls: v.ToolCalls}
	case llms.ToolChatMessage:
		return item{role: roleTool, toolID: v.ID}
	case llms.GenericChatMessage:
		return item{role: genericRole(v.Role)}
	case llms.FunctionChatMessage:
		// Legacy function results pair with AIChatMessage.FunctionCall, which
		// providers do not validate the way they validate tool calls.
		return item{role: roleOther}
	default:
		return classifyOther(m)
	}
}

// genericRole maps a GenericChatMessage role the way provider adapters read
// it. A generic "tool" message has no call id, so it stays roleOther.
func genericRole(r string) role {
	switch strings.ToLower(strings.TrimSpace(r)) {
	case "system":
		return roleSystem
	case "user", "human":
		return roleUser
	case "assistant", "ai":
		return roleAssistant
	default:
		return roleOther
	}
}

// classifyOther handles message types defined outside langchaingo by their
// GetType, after ruling out nil (an interface holding a nil pointer would
// panic on a value-receiver method).
func classifyOther(m llms.ChatMessage) item {
	switch m.GetType() {
	case llms.ChatMessageTypeSystem:
		return item{role: roleSystem}
	case llms.ChatMessageTypeHuman:
		return item{role: roleUser}
	case llms.ChatMessageTypeAI:
		return item{role: roleAssistant}
	case llms.ChatMessageTypeTool:
		if withID, ok := m.(interface{ GetID() string }); ok {
			return item{role: roleTool, toolID: withID.GetID()}
		}
		return item{role: roleTool}
	default:
		return item{role: roleOther}
	}
}

// price returns the content tokens of m, as arc-reactor prices them: the text,
// plus E(name+arguments) for each tool call of an assistant message.
func price(m llms.ChatMessage, est Estimator) int {
	switch v := chatmsg.Value(m).(type) {
	case llms.AIChatMessage:
		return priceAI(v, est)
	default:
		return est.Estimate(content(m))
	}
}

func priceAI(m llms.AIChatMessage, est Estimator) int {
	n := est.Estimate(m.Content)
	for _, tc := range m.ToolCalls {
		n += est.Estimate(callText(tc.FunctionCall))
	}
	if m.FunctionCall != nil {
		n += est.Estimate(callText(m.FunctionCall))
	}
	return n
}

// callText is name and arguments without a separator, as in arc-reactor.
func callText(fc *llms.FunctionCall) string {
	if fc == nil {
		return ""
	}
	return fc.Name + fc.Arguments
}

// content returns m's text, or "" for nil messages of any type.
func content(m llms.ChatMessage) string {
	if m = chatmsg.Value(m); m == nil {
		return ""
	}
	return m.GetContent()
}
