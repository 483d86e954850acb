package server

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory/store"
)

// The wire format is public (server/openapi.json): these golden tests pin
// it byte for byte, as the server writes it and as clients send it.

// wireGoldenTime is the created_at of the golden messages.
var wireGoldenTime = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

// encodeWire writes v exactly as a response body.
func encodeWire(t *testing.T, v any) string {
	t.Helper()
	rec := httptest.NewRecorder()
	(&Server{}).writeJSON(rec, http.StatusOK, v)
	return rec.Body.String()
}

func TestWireGoldenStoredMessages(t *testing.T) {
	t.Parallel()
	msgs := []store.Message{
		{Seq: 7, Role: store.RoleAssistant, Content: "a<b & c>", CreatedAt: wireGoldenTime,
			ToolCalls: []llms.ToolCall{
				{ID: "call_1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "lookup", Arguments: `{"q":"<x>"}`}},
				{ID: "call_2"}, // no type, no function: written as a function call
			},
			Metadata: map[string]string{"z": "1", store.MetadataModelVariant: "v1", "strata.title": "hidden"}},
		{Seq: 8, Role: store.RoleTool, Content: "ok", ToolCallID: "call_1", Name: "lookup", CreatedAt: wireGoldenTime},
		{Seq: 9, Role: store.RoleUser, Content: "", CreatedAt: wireGoldenTime,
			Metadata: map[string]string{"strata.title": "only reserved keys: no metadata"}},
		{Seq: 10, Role: store.RoleTool, Content: "r", Name: "legacy_function", CreatedAt: wireGoldenTime},
	}
	var out []storedMessage
	for _, m := range msgs {
		out = append(out, storedMessage{Seq: m.Seq, wireMessage: fromMemory(m), CreatedAt: m.CreatedAt})
	}
	const want = `[{"seq":7,"role":"assistant","content":"a<b & c>","tool_calls":[` +
		`{"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"q\":\"<x>\"}"}},` +
		`{"id":"call_2","type":"function","function":{"name":"","arguments":""}}],` +
		`"metadata":{"model_variant":"v1","z":"1"},"created_at":"2026-01-02T03:04:05.000000006Z"},` +
		`{"seq":8,"role":"tool","content":"ok","tool_call_id":"call_1","name":"lookup","created_at":"2026-01-02T03:04:05.000000006Z"},` +
		`{"seq":9,"role":"user","content":"","created_at":"2026-01-02T03:04:05.000000006Z"},` +
		`{"seq":10,"role":"tool","content":"r","name":"legacy_function","created_at":"2026-01-02T03:04:05.000000006Z"}]` + "\n"
	if got := encodeWire(t, out); got != want {
		t.Errorf("wire JSON:\n got %s\nwant %s", got, want)
	}
}

// customMessage is a chat message type of no langchaingo kind.
type customMessage struct{}

func (customMessage) GetType() llms.ChatMessageType { return llms.ChatMessageTypeAI }
func (customMessage) GetContent() string            { return "custom" }

func TestWireGoldenContextMessages(t *testing.T) {
	t.Parallel()
	ctx := []llms.ChatMessage{
		llms.SystemChatMessage{Content: "Conversation Facts:\n- a: b"},
		llms.HumanChatMessage{Content: "hi"},
		&llms.AIChatMessage{Content: "", ToolCalls: []llms.ToolCall{
			{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: "{}"}}}},
		llms.ToolChatMessage{ID: "c1", Content: "done"},
		llms.FunctionChatMessage{Name: "old", Content: "result"},
		llms.GenericChatMessage{Role: "critic", Name: "bob", Content: "meh"},
		llms.AIChatMessage{Content: "reasoned", ReasoningContent: "because"},
		customMessage{},
	}
	var out []wireMessage
	for _, cm := range ctx {
		out = append(out, fromChat(cm))
	}
	const want = `[{"role":"system","content":"Conversation Facts:\n- a: b"},` +
		`{"role":"user","content":"hi"},` +
		`{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
		`{"role":"tool","content":"done","tool_call_id":"c1"},` +
		`{"role":"tool","content":"result","name":"old"},` +
		`{"role":"user","content":"meh","name":"bob"},` +
		`{"role":"assistant","content":"reasoned"},` +
		`{"role":"assistant","content":"custom"}]` + "\n"
	if got := encodeWire(t, out); got != want {
		t.Errorf("context JSON:\n got %s\nwant %s", got, want)
	}
}

// decodeMessages decodes a request body of messages as the append and
// create handlers do.
func decodeMessages(t *testing.T, body string, maxBytes int64) ([]wireMessage, *apiError) {
	t.Helper()
	var req struct {
		Messages []wireMessage `json:"messages"`
	}
	r := httptest.NewRequest(http.MethodPost, "/v1/sessions", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	e := decodeJSON(httptest.NewRecorder(), r, maxBytes, &req, false)
	return req.Messages, e
}

func TestWireGoldenRequest(t *testing.T) {
	t.Parallel()
	const body = `{"messages": [
	  {"role": "user", "content": "Where is my order?", "name": "priya", "metadata": {"channel": "web"}},
	  {"role": "assistant", "content": null, "tool_calls": [
	    {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"id\":\"A-1\"}"}},
	    {"id": "call_2", "function": {"name": "weather"}}
	  ]},
	  {"role": "tool", "tool_call_id": "call_1", "name": "lookup", "content": "shipped"},
	  {"role": "tool", "tool_call_id": "call_2", "content": "sunny"},
	  {"role": "assistant", "content": "It shipped.", "metadata": {"model_variant": "deep"}, "tool_calls": []},
	  {"role": "system", "content": "s", "metadata": {}}
	]}`
	in, e := decodeMessages(t, body, 1<<20)
	if e != nil {
		t.Fatalf("decode: %v", e)
	}
	want := []store.Message{
		{Role: store.RoleUser, Content: "Where is my order?", Name: "priya", Metadata: map[string]string{"channel": "web"}},
		{Role: store.RoleAssistant, ToolCalls: []llms.ToolCall{
			{ID: "call_1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "lookup", Arguments: `{"id":"A-1"}`}},
			{ID: "call_2", Type: "function", FunctionCall: &llms.FunctionCall{Name: "weather"}},
		}},
		{Role: store.RoleTool, Content: "shipped", ToolCallID: "call_1", Name: "lookup"},
		{Role: store.RoleTool, Content: "sunny", ToolCallID: "call_2"},
		{Role: store.RoleAssistant, Content: "It shipped.", Metadata: map[string]string{store.MetadataModelVariant: "deep"}},
		{Role: store.RoleSystem, Content: "s"},
	}
	if len(in) != len(want) {
		t.Fatalf("%d messages, want %d", len(in), len(want))
	}
	for i, w := range in {
		got, err := w.toMemory(i)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("message %d:\n got %#v\nwant %#v", i, got, want[i])
		}
	}
}

func TestWireInvalidMessages(t *testing.T) {
	t.Parallel()
	call := `{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}`
	for _, c := range []struct{ msg, want string }{
		{`{"content":"x"}`, "messages[0].role is missing (want user, assistant, system or tool)"},
		{`{"role":"bot","content":"x"}`, `messages[0].role = "bot": want user, assistant, system or tool`},
		{`{"role":"User","content":"x"}`, `messages[0].role = "User": want user, assistant, system or tool`},
		{`{"role":"user","content":"x","tool_calls":[` + call + `]}`, "messages[0].tool_calls: only assistant messages make tool calls"},
		{`{"role":"tool","content":"x"}`, "messages[0].tool_call_id is missing: a tool message answers one tool call"},
		{`{"role":"user","content":"x","tool_call_id":"c"}`, "messages[0].tool_call_id: only tool messages answer tool calls"},
		{`{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f"}}]}`, "messages[0].tool_calls[0].id is missing"},
		{`{"role":"assistant","content":"","tool_calls":[` + call + `,` + call + `]}`, `messages[0].tool_calls[1].id "c" is repeated`},
		{`{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"code","function":{"name":"f"}}]}`, `messages[0].tool_calls[0].type = "code": want "function"`},
		{`{"role":"assistant","content":"","tool_calls":[{"id":"c"}]}`, "messages[0].tool_calls[0].function.name is missing"},
		{`{"role":"assistant","content":"","tool_calls":[{"id":"c","function":null}]}`, "messages[0].tool_calls[0].function.name is missing"},
		{`{"role":"user","content":"x","metadata":{"strata.title":"t"}}`, `messages[0].metadata: key "strata.title" is reserved (keys starting with "strata.")`},
		{`{"role":"user","content":"x","metadata":{"":"v"}}`, "messages[0].metadata: empty key"},
	} {
		in, e := decodeMessages(t, `{"messages":[`+c.msg+`]}`, 1<<20)
		if e != nil {
			t.Errorf("%s: decode: %v", c.msg, e)
			continue
		}
		_, err := in[0].toMemory(0)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", c.msg, err, c.want)
		}
	}
}

func TestWireStrictDecoding(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		body   string
		max    int64
		status int
		want   string
	}{
		{`{"messages":[{"role":"user","content":"x","seq":1}]}`, 1 << 20, 400, `unknown field "seq"`},
		{`{"messages":[{"role":"assistant","content":"","tool_calls":[{"id":"c","function":{"name":"f","extra":1}}]}]}`, 1 << 20, 400, `unknown field "extra"`},
		{`{"messages":[{"role":"user","content":5}]}`, 1 << 20, 400, `field "messages.content": want a string, got JSON number`},
		{`{"messages":[{"role":"user","content":"x","metadata":{"k":1}}]}`, 1 << 20, 400, `field "messages.metadata": want a string, got JSON number`},
		{`{"messages":[{"role":"assistant","content":"","tool_calls":{}}]}`, 1 << 20, 400, `field "messages.tool_calls": want an array, got JSON object`},
		{`{"messages":[]} {}`, 1 << 20, 400, "malformed JSON: unexpected data after the JSON object"},
		{`{"messages":[]} x`, 1 << 20, 400, "malformed JSON: unexpected data after the JSON object"},
		{`{"messages":[]} {`, 1 << 20, 400, "malformed JSON: unexpected data after the JSON object"},
		{`{"messages":[]}` + strings.Repeat(" ", 64), 32, 413, "request body larger than 32 bytes"},
		{`{"messages":[{"role":"user","content":"` + strings.Repeat("x", 64) + `"}]}`, 32, 413, "request body larger than 32 bytes"},
		{`{"messages":[`, 1 << 20, 400, "malformed JSON: unexpected end of body"},
		{`{"messages":[}`, 1 << 20, 400, "malformed JSON at byte 14: invalid character '}' looking for beginning of value"},
		{``, 1 << 20, 400, "empty body: want a JSON object"},
		{`[]`, 1 << 20, 400, "malformed request: want a JSON object, got JSON array"},
	} {
		_, e := decodeMessages(t, c.body, c.max)
		if e == nil || e.status != c.status || e.msg != c.want {
			t.Errorf("%.60q: got %+v, want %d %q", c.body, e, c.status, c.want)
		}
	}
}
