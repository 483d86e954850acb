package agent_test

import (
	"reflect"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/agent"
)

func TestMessageContents(t *testing.T) {
	call := llms.ToolCall{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "lookup", Arguments: `{"id":"A-1"}`}}
	msgs := []llms.ChatMessage{
		llms.SystemChatMessage{Content: "sys"},
		&llms.HumanChatMessage{Content: "where?"},
		llms.AIChatMessage{ToolCalls: []llms.ToolCall{call}},
		llms.ToolChatMessage{ID: "c1", Content: "shipped"},
		llms.AIChatMessage{Content: "calling", ToolCalls: []llms.ToolCall{call}},
		llms.ToolChatMessage{ID: "c1", Content: "again"},
		llms.HumanChatMessage{Content: "and?"},
		llms.ToolChatMessage{ID: "c1", Content: "orphan"},
		llms.AIChatMessage{FunctionCall: &llms.FunctionCall{Name: "track", Arguments: "{}"}},
		llms.FunctionChatMessage{Name: "track", Content: "in transit"},
		llms.GenericChatMessage{Role: "critic", Content: "terse"},
		llms.AIChatMessage{},
		nil,
	}
	want := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "sys"),
		llms.TextParts(llms.ChatMessageTypeHuman, "where?"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Name: "lookup", Content: "shipped"}}},
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.TextContent{Text: "calling"}, call}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Name: "lookup", Content: "again"}}},
		llms.TextParts(llms.ChatMessageTypeHuman, "and?"),
		// A result whose call is not right before it gets no name.
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Content: "orphan"}}},
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{Type: "function", FunctionCall: &llms.FunctionCall{Name: "track", Arguments: "{}"}}}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{Name: "track", Content: "in transit"}}},
		llms.TextParts(llms.ChatMessageTypeGeneric, "terse"),
		llms.TextParts(llms.ChatMessageTypeAI, ""),
	}
	got := agent.MessageContents(msgs)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("MessageContents\n got %#v\nwant %#v", got, want)
	}
	// The parts do not share the caller's function calls.
	got[2].Parts[0].(llms.ToolCall).FunctionCall.Name = "changed"
	if call.FunctionCall.Name != "lookup" {
		t.Fatal("MessageContents shares the caller's FunctionCall")
	}
}
