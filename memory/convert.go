package memory

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/chatmsg"
)

// FromChatMessage converts a langchaingo chat message into a storable
// Message. Human, AI (with tool calls), system and tool messages round-trip
// losslessly; a generic message keeps its role in Name and is stored as a
// user message; a deprecated function message is stored as a tool message
// named after the function.
func FromChatMessage(cm llms.ChatMessage) (Message, error) {
	switch m := chatmsg.Value(cm).(type) {
	case nil:
		return Message{}, fmt.Errorf("%w: nil message", ErrInvalidMessage)
	case llms.HumanChatMessage:
		return Message{Role: RoleUser, Content: m.Content}, nil
	case llms.AIChatMessage:
		msg := Message{Role: RoleAssistant, Content: m.Content, ToolCalls: cloneToolCalls(m.ToolCalls)}
		if m.FunctionCall != nil && len(m.ToolCalls) == 0 {
			fc := *m.FunctionCall
			msg.ToolCalls = []llms.ToolCall{{Type: "function", FunctionCall: &fc}}
		}
		return msg, nil
	case llms.SystemChatMessage:
		return Message{Role: RoleSystem, Content: m.Content}, nil
	case llms.ToolChatMessage:
		return Message{Role: RoleTool, Content: m.Content, ToolCallID: m.ID}, nil
	case llms.FunctionChatMessage:
		return Message{Role: RoleTool, Content: m.Content, Name: m.Name}, nil
	case llms.GenericChatMessage:
		return Message{Role: RoleUser, Content: m.Content, Name: m.Role}, nil
	}
	return Message{}, fmt.Errorf("%w: unsupported message type %T", ErrInvalidMessage, cm)
}

// ChatMessage converts a stored message back into a langchaingo chat
// message (a value, not a pointer).
func (m Message) ChatMessage() llms.ChatMessage {
	switch m.Role {
	case RoleAssistant:
		return llms.AIChatMessage{Content: m.Content, ToolCalls: cloneToolCalls(m.ToolCalls)}
	case RoleSystem:
		return llms.SystemChatMessage{Content: m.Content}
	case RoleTool:
		return llms.ToolChatMessage{ID: m.ToolCallID, Content: m.Content}
	default:
		return llms.HumanChatMessage{Content: m.Content}
	}
}

// ChatMessages converts stored messages to langchaingo chat messages.
func ChatMessages(msgs []Message) []llms.ChatMessage {
	out := make([]llms.ChatMessage, len(msgs))
	for i, m := range msgs {
		out[i] = m.ChatMessage()
	}
	return out
}

// Validate checks that a message can be stored by every store: valid UTF-8,
// no NUL bytes (PostgreSQL TEXT rejects them), a known role, tool results
// with a call id, and a size within maxBytes (0 = unlimited).
func (m Message) Validate(maxBytes int) error {
	size := len(m.Content)
	for _, tc := range m.ToolCalls {
		if tc.FunctionCall != nil {
			size += len(tc.FunctionCall.Name) + len(tc.FunctionCall.Arguments)
		}
	}
	if maxBytes > 0 && size > maxBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrMessageTooLarge, size, maxBytes)
	}
	switch m.Role {
	case RoleUser, RoleAssistant, RoleSystem:
	case RoleTool:
		if m.ToolCallID == "" && m.Name == "" {
			return fmt.Errorf("%w: tool result without a tool call id", ErrInvalidMessage)
		}
	default:
		return fmt.Errorf("%w: unknown role %q", ErrInvalidMessage, m.Role)
	}
	texts := []string{m.Content, m.ToolCallID, m.Name}
	for _, tc := range m.ToolCalls {
		texts = append(texts, tc.ID, tc.Type)
		if tc.FunctionCall != nil {
			texts = append(texts, tc.FunctionCall.Name, tc.FunctionCall.Arguments)
		}
	}
	for k, v := range m.Metadata {
		texts = append(texts, k, v)
	}
	for _, s := range texts {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%w: text is not valid UTF-8", ErrInvalidMessage)
		}
		if strings.IndexByte(s, 0) >= 0 {
			return fmt.Errorf("%w: text contains a NUL byte", ErrInvalidMessage)
		}
	}
	return nil
}

func cloneToolCalls(in []llms.ToolCall) []llms.ToolCall {
	if len(in) == 0 {
		return nil
	}
	out := make([]llms.ToolCall, len(in))
	for i, tc := range in {
		out[i] = tc
		if tc.FunctionCall != nil {
			fc := *tc.FunctionCall
			out[i].FunctionCall = &fc
		}
	}
	return out
}

// cloneMessage returns a deep copy so stores never share mutable state with
// callers.
func cloneMessage(m Message) Message {
	m.ToolCalls = cloneToolCalls(m.ToolCalls)
	if m.Metadata != nil {
		md := make(map[string]string, len(m.Metadata))
		for k, v := range m.Metadata {
			md[k] = v
		}
		m.Metadata = md
	}
	return m
}
