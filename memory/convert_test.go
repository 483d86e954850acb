package memory_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory"
)

func TestFromChatMessageRoundTripsEveryType(t *testing.T) {
	for _, cm := range everyType {
		sm, err := memory.FromChatMessage(cm)
		if err != nil {
			t.Fatalf("%#v: %v", cm, err)
		}
		if err := sm.Validate(0); err != nil {
			t.Fatalf("%#v stored as an invalid message: %v", cm, err)
		}
		if got := sm.ChatMessage(); !reflect.DeepEqual(got, cm) {
			t.Fatalf("round trip\n got %#v\nwant %#v", got, cm)
		}
	}
	// Pointer forms read as their values.
	sm, err := memory.FromChatMessage(&llms.GenericChatMessage{Role: "critic", Name: "n", Content: "c"})
	if err != nil || !reflect.DeepEqual(sm.ChatMessage(), llms.GenericChatMessage{Role: "critic", Name: "n", Content: "c"}) {
		t.Fatalf("pointer generic: %#v, %v", sm, err)
	}
}

func TestFromChatMessageStoredForm(t *testing.T) {
	fc := &llms.FunctionCall{Name: "track", Arguments: `{"id":"A-1"}`}
	sm, err := memory.FromChatMessage(llms.AIChatMessage{FunctionCall: fc})
	if err != nil {
		t.Fatal(err)
	}
	// Providers that only read tool calls still see the deprecated call.
	if len(sm.ToolCalls) != 1 || *sm.ToolCalls[0].FunctionCall != *fc || sm.Role != memory.RoleAssistant {
		t.Fatalf("stored = %#v", sm)
	}
	sm, _ = memory.FromChatMessage(llms.GenericChatMessage{Role: "critic", Name: "rev", Content: "x"})
	if sm.Role != memory.RoleUser || sm.Name != "rev" || sm.Metadata["langchaingo.generic_role"] != "critic" {
		t.Fatalf("generic stored as %#v", sm)
	}
	sm, _ = memory.FromChatMessage(llms.FunctionChatMessage{Name: "track", Content: "r"})
	if sm.Role != memory.RoleTool || sm.Name != "track" || sm.ToolCallID != "" {
		t.Fatalf("function result stored as %#v", sm)
	}
	// A tool result stored with a call id and a name stays a tool result.
	if got := (memory.Message{Role: memory.RoleTool, ToolCallID: "c1", Name: "lookup", Content: "r"}).ChatMessage(); !reflect.DeepEqual(got, llms.ToolChatMessage{ID: "c1", Content: "r"}) {
		t.Fatalf("tool result read as %#v", got)
	}
	for _, bad := range []llms.ChatMessage{nil, (*llms.HumanChatMessage)(nil), llms.ToolChatMessage{Content: "no id"}, llms.FunctionChatMessage{Content: "no name"}} {
		if _, err := memory.FromChatMessage(bad); !errors.Is(err, memory.ErrInvalidMessage) {
			t.Fatalf("%#v: err = %v", bad, err)
		}
	}
}

func TestChatHistoryPersistsEveryTypeThroughTheManager(t *testing.T) {
	ctx := context.Background()
	mgr := strataManager(t, 1000)
	if err := mgr.SaveMessages(ctx, "s", "alice", everyType...); err != nil {
		t.Fatal(err)
	}
	got, err := mgr.LoadHistory(ctx, "s", "alice")
	if err != nil || !reflect.DeepEqual(got, everyType) {
		t.Fatalf("LoadHistory = %#v, %v", got, err)
	}
	// The prompt builder keeps every type too, so the memory-alone path
	// hands all of them to MessageContents.
	if got := mgr.Prompt("", got, 0); !reflect.DeepEqual(got, everyType) {
		t.Fatalf("Prompt = %#v", got)
	}
}

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
	got := memory.MessageContents(msgs)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("MessageContents\n got %#v\nwant %#v", got, want)
	}
	// The parts do not share the caller's function calls.
	got[2].Parts[0].(llms.ToolCall).FunctionCall.Name = "changed"
	if call.FunctionCall.Name != "lookup" {
		t.Fatal("MessageContents shares the caller's FunctionCall")
	}
}
