package msgjson

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/chatmsg"
	"github.com/strata-go/strata/record"
)

// roles lists the roles a message may have, for errors.
const roles = "user, assistant, system or tool"

// invalid is a broken rule of field.
func invalid(field, problem string) *FieldError {
	return &FieldError{Field: field, Problem: problem, Err: record.ErrInvalidMessage}
}

// ToMemory checks m against the rules of its format and converts it: a
// role among user, assistant, system and tool; tool calls on assistant
// messages only, each naming its function; a tool_call_id on tool messages,
// and (strict formats) only there; and, unless o.Lenient, tool calls with
// distinct ids and of type "function", and non-empty metadata keys; no
// metadata key starting with o.ReservedPrefix. A call's empty type becomes
// "function"; empty tool calls and metadata become nil. Every error is a
// *FieldError wrapping record.ErrInvalidMessage. Storage limits (size,
// UTF-8, NUL bytes) are record.Message.Validate's to check.
func ToMemory(m Message, o Options) (record.Message, error) {
	out := record.Message{Content: m.Content, Name: m.Name}
	switch role := record.Role(m.Role); role {
	case record.RoleUser, record.RoleAssistant, record.RoleSystem, record.RoleTool:
		out.Role = role
	case "":
		return record.Message{}, invalid("role", " is missing (want "+roles+")")
	default:
		return record.Message{}, invalid("role", fmt.Sprintf(" = %q: want %s", m.Role, roles))
	}
	if len(m.ToolCalls) > 0 && out.Role != record.RoleAssistant {
		return record.Message{}, invalid("tool_calls", ": only assistant messages make tool calls")
	}
	switch {
	case out.Role == record.RoleTool && m.ToolCallID == "":
		return record.Message{}, invalid("tool_call_id", " is missing: a tool message answers one tool call")
	case out.Role == record.RoleTool:
		out.ToolCallID = m.ToolCallID
	case m.ToolCallID != "" && !o.Lenient:
		return record.Message{}, invalid("tool_call_id", ": only tool messages answer tool calls")
	}
	seen := map[string]bool{}
	for j, tc := range m.ToolCalls {
		at := fmt.Sprintf("tool_calls[%d]", j)
		typ := tc.Type
		if typ == "" {
			typ = "function"
		}
		if !o.Lenient {
			switch {
			case tc.ID == "":
				return record.Message{}, invalid(at+".id", " is missing")
			case seen[tc.ID]:
				return record.Message{}, invalid(at+".id", fmt.Sprintf(" %q is repeated", tc.ID))
			case typ != "function":
				return record.Message{}, invalid(at+".type", fmt.Sprintf(` = %q: want "function"`, tc.Type))
			}
			seen[tc.ID] = true
		}
		if tc.Function == nil || tc.Function.Name == "" {
			return record.Message{}, invalid(at+".function.name", " is missing")
		}
		out.ToolCalls = append(out.ToolCalls, llms.ToolCall{ID: tc.ID, Type: typ,
			FunctionCall: &llms.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
	}
	for _, k := range slices.Sorted(maps.Keys(m.Metadata)) {
		switch {
		case o.ReservedPrefix != "" && strings.HasPrefix(k, o.ReservedPrefix):
			return record.Message{}, invalid("metadata", fmt.Sprintf(": key %q is reserved (keys starting with %q)", k, o.ReservedPrefix))
		case k == "" && !o.Lenient:
			return record.Message{}, invalid("metadata", ": empty key")
		}
	}
	if len(m.Metadata) > 0 {
		out.Metadata = maps.Clone(m.Metadata)
	}
	return out, nil
}

// FromMemory converts a stored message for clients: a call's empty type
// reads "function" and a call without a function names the empty one (so
// that every call has the shape clients are promised), and the metadata
// keys starting with o.ReservedPrefix are left out.
func FromMemory(m record.Message, o Options) Message {
	out := Message{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name,
		ToolCalls: toolCalls(m.ToolCalls, true)}
	for k, v := range m.Metadata {
		if o.ReservedPrefix != "" && strings.HasPrefix(k, o.ReservedPrefix) {
			continue
		}
		if out.Metadata == nil {
			out.Metadata = map[string]string{}
		}
		out.Metadata[k] = v
	}
	return out
}

// FromChat converts a chat message of an assembled context (what a model
// receives) as FromMemory converts the message record.FromChatMessage
// stores for it, without metadata. A message of a type memory does not
// store keeps its role (by its type) and its content; a nil one reads as
// an empty user message.
func FromChat(cm llms.ChatMessage) Message {
	if m, err := record.FromChatMessage(cm); err == nil {
		out := FromMemory(m, Options{})
		out.Metadata = nil
		return out
	}
	v := chatmsg.Value(cm)
	if v == nil {
		return Message{Role: string(record.RoleUser)}
	}
	role := record.RoleUser
	switch v.GetType() {
	case llms.ChatMessageTypeAI:
		role = record.RoleAssistant
	case llms.ChatMessageTypeSystem:
		role = record.RoleSystem
	case llms.ChatMessageTypeTool, llms.ChatMessageTypeFunction:
		role = record.RoleTool
	}
	return Message{Role: string(role), Content: v.GetContent()}
}

// StoredToolCalls is calls in their JSON shape, losslessly: each as it is
// (its type as given, no function for a call without one), as the
// PostgreSQL store's tool_calls column and an export (memory/snapshot)
// keep them. No calls give nil.
func StoredToolCalls(calls []llms.ToolCall) []ToolCall { return toolCalls(calls, false) }

// LLMToolCalls is StoredToolCalls' inverse: the calls of the JSON shape as
// langchaingo's, each as it is. No calls give nil.
func LLMToolCalls(calls []ToolCall) []llms.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]llms.ToolCall, len(calls))
	for i, tc := range calls {
		out[i] = llms.ToolCall{ID: tc.ID, Type: tc.Type}
		if tc.Function != nil {
			out[i].FunctionCall = &llms.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}
		}
	}
	return out
}

// toolCalls converts calls to their JSON shape: as they are (the store's
// lossless form) or, with forClients, with an empty type read as
// "function" and an absent function as the empty one. No calls give nil.
func toolCalls(tcs []llms.ToolCall, forClients bool) []ToolCall {
	if len(tcs) == 0 {
		return nil
	}
	out := make([]ToolCall, len(tcs))
	for i, tc := range tcs {
		out[i] = ToolCall{ID: tc.ID, Type: tc.Type}
		if tc.FunctionCall != nil {
			out[i].Function = &Function{Name: tc.FunctionCall.Name, Arguments: tc.FunctionCall.Arguments}
		}
		if forClients {
			if out[i].Type == "" {
				out[i].Type = "function"
			}
			if out[i].Function == nil {
				out[i].Function = &Function{}
			}
		}
	}
	return out
}
