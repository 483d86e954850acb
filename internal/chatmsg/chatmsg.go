// Package chatmsg is the one normaliser of langchaingo chat messages:
// langchaingo accepts both the value and the pointer form of each message
// type, so every package that switches on message types first reduces a
// message to its value form here, and never calls a method on a nil pointer.
package chatmsg

import (
	"reflect"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/record"
)

// Value returns the value form of a langchaingo message: *T becomes T for
// every message type of package llms; a nil interface or a nil pointer of
// any type becomes nil; any other type is returned as it is.
func Value(m llms.ChatMessage) llms.ChatMessage {
	switch v := m.(type) {
	case *llms.HumanChatMessage:
		if v != nil {
			return *v
		}
	case *llms.AIChatMessage:
		if v != nil {
			return *v
		}
	case *llms.SystemChatMessage:
		if v != nil {
			return *v
		}
	case *llms.ToolChatMessage:
		if v != nil {
			return *v
		}
	case *llms.GenericChatMessage:
		if v != nil {
			return *v
		}
	case *llms.FunctionChatMessage:
		if v != nil {
			return *v
		}
	case nil:
	default:
		if rv := reflect.ValueOf(m); rv.Kind() == reflect.Pointer && rv.IsNil() {
			return nil
		}
		return m
	}
	return nil
}

// CloneToolCalls returns a deep copy of calls (nil when empty), so a copy
// handed on never shares a FunctionCall with the caller's: record.Message's
// Clone, the one copy of tool calls.
func CloneToolCalls(calls []llms.ToolCall) []llms.ToolCall {
	return record.Message{ToolCalls: calls}.Clone().ToolCalls
}

// ToolCalls lists the function calls an assistant message makes (its
// FunctionCall, then its ToolCalls' calls), in either message form; nil for
// any other message.
func ToolCalls(m llms.ChatMessage) []llms.FunctionCall {
	ai, ok := Value(m).(llms.AIChatMessage)
	if !ok {
		return nil
	}
	var calls []llms.FunctionCall
	if ai.FunctionCall != nil {
		calls = append(calls, *ai.FunctionCall)
	}
	for _, tc := range ai.ToolCalls {
		if tc.FunctionCall != nil {
			calls = append(calls, *tc.FunctionCall)
		}
	}
	return calls
}
