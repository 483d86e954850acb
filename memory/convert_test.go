package memory_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory/store"
)

func TestFromChatMessageRoundTripsEveryType(t *testing.T) {
	for _, cm := range everyType {
		sm, err := store.FromChatMessage(cm)
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
	sm, err := store.FromChatMessage(&llms.GenericChatMessage{Role: "critic", Name: "n", Content: "c"})
	if err != nil || !reflect.DeepEqual(sm.ChatMessage(), llms.GenericChatMessage{Role: "critic", Name: "n", Content: "c"}) {
		t.Fatalf("pointer generic: %#v, %v", sm, err)
	}
}

func TestFromChatMessageStoredForm(t *testing.T) {
	fc := &llms.FunctionCall{Name: "track", Arguments: `{"id":"A-1"}`}
	sm, err := store.FromChatMessage(llms.AIChatMessage{FunctionCall: fc})
	if err != nil {
		t.Fatal(err)
	}
	// Providers that only read tool calls still see the deprecated call.
	if len(sm.ToolCalls) != 1 || *sm.ToolCalls[0].FunctionCall != *fc || sm.Role != store.RoleAssistant {
		t.Fatalf("stored = %#v", sm)
	}
	sm, _ = store.FromChatMessage(llms.GenericChatMessage{Role: "critic", Name: "rev", Content: "x"})
	if sm.Role != store.RoleUser || sm.Name != "rev" || sm.Metadata["langchaingo.generic_role"] != "critic" {
		t.Fatalf("generic stored as %#v", sm)
	}
	sm, _ = store.FromChatMessage(llms.FunctionChatMessage{Name: "track", Content: "r"})
	if sm.Role != store.RoleTool || sm.Name != "track" || sm.ToolCallID != "" {
		t.Fatalf("function result stored as %#v", sm)
	}
	// A tool result stored with a call id and a name stays a tool result.
	if got := (store.Message{Role: store.RoleTool, ToolCallID: "c1", Name: "lookup", Content: "r"}).ChatMessage(); !reflect.DeepEqual(got, llms.ToolChatMessage{ID: "c1", Content: "r"}) {
		t.Fatalf("tool result read as %#v", got)
	}
	for _, bad := range []llms.ChatMessage{nil, (*llms.HumanChatMessage)(nil), llms.ToolChatMessage{Content: "no id"}, llms.FunctionChatMessage{Content: "no name"}} {
		if _, err := store.FromChatMessage(bad); !errors.Is(err, store.ErrInvalidMessage) {
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
	// hands all of them to agent.MessageContents.
	if got, _ := mgr.Prompt("", got, 0); !reflect.DeepEqual(got, everyType) {
		t.Fatalf("Prompt = %#v", got)
	}
}
