package main

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory/store"
)

// The transcript files under testdata pin what replay reads from the
// OpenAI-style variants it accepts: every file must keep giving the same
// conversation.
func TestTranscriptGolden(t *testing.T) {
	t.Parallel()
	fn := func(name, args string) *llms.FunctionCall { return &llms.FunctionCall{Name: name, Arguments: args} }
	for _, c := range []struct {
		file, format string
		want         transcript
	}{
		{"testdata/openai-variants.jsonl", formatJSONL, transcript{
			Name: "openai-variants", System: "Be brief.\n\nUse the tools.",
			Msgs: []store.Message{
				{Role: store.RoleUser, Content: "Where is order #Z-42?"},
				{Role: store.RoleAssistant, ToolCalls: []llms.ToolCall{
					{ID: "c1", Type: "function", FunctionCall: fn("lookup", `{"id":"Z-42","fields":["status","eta"]}`)},
					{ID: "c2", Type: "function", FunctionCall: fn("weather", `{"city": "Oslo"}`)},
				}},
				{Role: store.RoleTool, Content: `{"status":"shipped"}`, ToolCallID: "c1", Name: "lookup"},
				{Role: store.RoleTool, Content: "sunny\n21°C", ToolCallID: "c2"},
				{Role: store.RoleAssistant, Content: "It shipped <today> & it is sunny.",
					Metadata: map[string]string{store.MetadataModelVariant: "deep-dive"}},
				{Role: store.RoleUser, Content: "Thanks! 🙏"},
				{Role: store.RoleAssistant, ToolCalls: []llms.ToolCall{
					{Type: "function", FunctionCall: fn("no_id", "")},
					{ID: "x", Type: "custom", FunctionCall: fn("c", "")},
				}},
			}}},
		{"testdata/chat-request.json", formatJSON, transcript{
			Name: "chat-request", System: "Be brief.",
			Msgs: []store.Message{
				{Role: store.RoleUser, Content: "Hello"},
				{Role: store.RoleAssistant, ToolCalls: []llms.ToolCall{{ID: "call_1", Type: "function", FunctionCall: fn("clock", "{}")}}},
				{Role: store.RoleTool, Content: "09:00", ToolCallID: "call_1"},
				{Role: store.RoleAssistant, Content: "Good morning!"},
				{Role: store.RoleUser, Content: "Bye"},
			}}},
		{"testdata/trajectories.json", formatTauBench, transcript{
			Name: "task-3-trial-1", System: "# Airline Agent Policy",
			Msgs: []store.Message{
				{Role: store.RoleUser, Content: "Cancel my flight."},
				{Role: store.RoleAssistant, ToolCalls: []llms.ToolCall{{ID: "call_a", Type: "function",
					FunctionCall: fn("get_reservation_details", `{"reservation_id": "ABC123"}`)}}},
				{Role: store.RoleTool, Content: `{"status": "active"}`, ToolCallID: "call_a", Name: "get_reservation_details"},
				{Role: store.RoleAssistant, Content: "Done."},
			}}},
	} {
		ts, format, err := loadTranscripts(c.file, formatAuto, "", 1<<20, nil)
		if err != nil {
			t.Errorf("%s: %v", c.file, err)
			continue
		}
		if format != c.format || len(ts) != 1 {
			t.Errorf("%s: format %s, %d transcripts; want %s, 1", c.file, format, len(ts), c.format)
			continue
		}
		if !reflect.DeepEqual(ts[0], c.want) {
			t.Errorf("%s:\n got %#v\nwant %#v", c.file, ts[0], c.want)
		}
	}
}

// TestReplayJSONContextGolden pins the shape of a --json context message.
func TestReplayJSONContextGolden(t *testing.T) {
	t.Parallel()
	ctx := []llms.ChatMessage{
		llms.SystemChatMessage{Content: "Be brief."},
		llms.HumanChatMessage{Content: "a<b"},
		&llms.AIChatMessage{ToolCalls: []llms.ToolCall{
			{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: `{"x":1}`}},
			{Type: "function", FunctionCall: &llms.FunctionCall{Name: "g"}},
		}},
		llms.ToolChatMessage{ID: "c1", Content: "r"},
		llms.AIChatMessage{Content: "done", ReasoningContent: "hidden"},
		llms.FunctionChatMessage{Name: "legacy", Content: "fr"},
	}
	raw, err := json.Marshal(toJSONMessages(ctx))
	if err != nil {
		t.Fatal(err)
	}
	const want = `[{"role":"system","content":"Be brief."},{"role":"user","content":"a\u003cb"},` +
		`{"role":"assistant","content":"","tool_calls":[{"id":"c1","name":"f","arguments":"{\"x\":1}"},{"name":"g","arguments":""}]},` +
		`{"role":"tool","content":"r","tool_call_id":"c1"},{"role":"assistant","content":"done"},{"role":"tool","content":"fr"}]`
	if string(raw) != want {
		t.Errorf("--json context:\n got %s\nwant %s", raw, want)
	}
}
