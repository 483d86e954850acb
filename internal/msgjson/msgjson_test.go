package msgjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory/store"
)

func fn(name, args string) *llms.FunctionCall { return &llms.FunctionCall{Name: name, Arguments: args} }

func TestFieldNamesAreTheTags(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeOf(Message{})
	var tags []string
	for i := 0; i < typ.NumField(); i++ {
		tags = append(tags, strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
	}
	if !reflect.DeepEqual(tags, fieldNames) {
		t.Fatalf("Message's JSON names %v, fieldNames %v", tags, fieldNames)
	}
}

// TestColumnsGolden pins the bytes the PostgreSQL store writes into its
// tool_calls and metadata columns: rows written by every version hold
// them, so they never change.
func TestColumnsGolden(t *testing.T) {
	t.Parallel()
	calls := []llms.ToolCall{
		{ID: "call_1", Type: "function", FunctionCall: fn("lookup", `{"q":"<a&b>"}`)},
		{ID: "call_2", Type: "custom"},
		{Type: "", FunctionCall: fn("no_id", "")},
	}
	const wantCalls = `[{"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"q\":\"\u003ca\u0026b\u003e\"}"}},` +
		`{"id":"call_2","type":"custom"},{"id":"","type":"","function":{"name":"no_id","arguments":""}}]`
	got, err := EncodeToolCalls(calls)
	if err != nil || got != wantCalls {
		t.Fatalf("EncodeToolCalls:\n got %s (%v)\nwant %s", got, err, wantCalls)
	}
	back, err := DecodeToolCalls([]byte(got))
	if err != nil || !reflect.DeepEqual(back, calls) {
		t.Fatalf("DecodeToolCalls = %#v, %v", back, err)
	}
	// As PostgreSQL returns the column.
	const jsonb = `[{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"<a&b>\"}"}}, {"id": "call_2", "type": "custom"}, {"id": "", "type": "", "function": {"name": "no_id", "arguments": ""}}]`
	if back, err := DecodeToolCalls([]byte(jsonb)); err != nil || !reflect.DeepEqual(back, calls) {
		t.Fatalf("DecodeToolCalls(jsonb) = %#v, %v", back, err)
	}

	md := map[string]string{"z": "1", store.MetadataModelVariant: "v<1>", "": "empty key", "é": "\"\n"}
	const wantMD = `{"":"empty key","model_variant":"v\u003c1\u003e","z":"1","é":"\"\n"}`
	if got, err := EncodeMetadata(md); err != nil || got != wantMD {
		t.Fatalf("EncodeMetadata:\n got %s (%v)\nwant %s", got, err, wantMD)
	}
	if back, err := DecodeMetadata([]byte(`{"": "empty key", "z": "1", "é": "\"\n", "model_variant": "v<1>"}`)); err != nil || !reflect.DeepEqual(back, md) {
		t.Fatalf("DecodeMetadata = %v, %v", back, err)
	}

	// Nothing is NULL; NULL, JSON null and empty values read as nothing.
	for _, empty := range [][]byte{nil, []byte(" "), []byte("null"), []byte("[]")} {
		if s, err := EncodeToolCalls(nil); s != "" || err != nil {
			t.Fatalf("EncodeToolCalls(nil) = %q, %v", s, err)
		}
		if tcs, err := DecodeToolCalls(empty); tcs != nil || err != nil {
			t.Errorf("DecodeToolCalls(%q) = %#v, %v", empty, tcs, err)
		}
	}
	for _, empty := range [][]byte{nil, []byte("null"), []byte("{}")} {
		if s, err := EncodeMetadata(map[string]string{}); s != "" || err != nil {
			t.Fatalf("EncodeMetadata({}) = %q, %v", s, err)
		}
		if m, err := DecodeMetadata(empty); m != nil || err != nil {
			t.Errorf("DecodeMetadata(%q) = %#v, %v", empty, m, err)
		}
	}
}

func TestColumnsStrict(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ raw, want string }{
		{`[{"id":"c","type":"function","extra":1}]`, `tool_calls: unknown field "extra"`},
		{`[{"id":"c","function":{"name":"f","arguments":{}}}]`, `tool_calls.function.arguments: want a string, got JSON object`},
		{`[{"id":5}]`, `tool_calls.id: want a string, got JSON number`},
		{`[null]`, `tool_calls[0]: want an object, got JSON null`},
		{`{"id":"c"}`, `tool_calls: want an array, got JSON object`},
		{`[] []`, `tool_calls: unexpected data after the JSON value`},
		{`[{"id":"c"`, `tool_calls: malformed JSON: unexpected end`},
		{`[x]`, `tool_calls: malformed JSON at byte 2: invalid character 'x' looking for beginning of value`},
	} {
		if _, err := DecodeToolCalls([]byte(c.raw)); err == nil || err.Error() != c.want {
			t.Errorf("DecodeToolCalls(%s) = %v, want %s", c.raw, err, c.want)
		}
	}
	for _, c := range []struct{ raw, want string }{
		{`{"k":1}`, `metadata: want a string, got JSON number`},
		{`["k"]`, `metadata: want an object, got JSON array`},
		{`{} x`, `metadata: unexpected data after the JSON value`},
	} {
		if _, err := DecodeMetadata([]byte(c.raw)); err == nil || err.Error() != c.want {
			t.Errorf("DecodeMetadata(%s) = %v, want %s", c.raw, err, c.want)
		}
	}
	_, err := DecodeToolCalls([]byte(`[{"id":5}]`))
	var ute *json.UnmarshalTypeError
	if !errors.As(err, &ute) {
		t.Errorf("the cause is not kept: %#v", err)
	}
}

// wireJSON encodes v as the HTTP server writes its bodies.
func wireJSON(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// TestWireGolden pins the wire shape of a message, both ways.
func TestWireGolden(t *testing.T) {
	t.Parallel()
	stored := store.Message{Role: store.RoleAssistant, Content: "a<b", ToolCalls: []llms.ToolCall{
		{ID: "c1", Type: "function", FunctionCall: fn("f", `{"x":1}`)},
		{ID: "c2"},
	}, Metadata: map[string]string{"model_variant": "v", "strata.title": "hidden"}, Seq: 3, UserID: "u"}
	const want = `{"role":"assistant","content":"a<b","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},` +
		`{"id":"c2","type":"function","function":{"name":"","arguments":""}}],"metadata":{"model_variant":"v"}}`
	if got := wireJSON(t, FromMemory(stored, Wire)); got != want {
		t.Errorf("FromMemory:\n got %s\nwant %s", got, want)
	}
	if got := wireJSON(t, FromMemory(store.Message{Role: store.RoleUser}, Wire)); got != `{"role":"user","content":""}` {
		t.Errorf("FromMemory(empty) = %s", got)
	}
	if got := wireJSON(t, FromMemory(store.Message{Role: store.RoleTool, Content: "r", ToolCallID: "c1", Name: "f"}, Wire)); got != `{"role":"tool","content":"r","tool_call_id":"c1","name":"f"}` {
		t.Errorf("FromMemory(tool) = %s", got)
	}

	m, err := Decode([]byte(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}],"metadata":{"k":"v"}}`), Wire)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ToMemory(m, Wire)
	wantMsg := store.Message{Role: store.RoleAssistant, ToolCalls: []llms.ToolCall{{ID: "c1", Type: "function", FunctionCall: fn("f", "{}")}},
		Metadata: map[string]string{"k": "v"}}
	if err != nil || !reflect.DeepEqual(got, wantMsg) {
		t.Fatalf("ToMemory = %#v, %v", got, err)
	}
}

func TestDecodeWireIsStrict(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{`{"role":"user","content":"x","seq":1}`, `unknown field "seq"`},
		{`{"role":"assistant","content":"","tool_calls":[{"id":"c","function":{"name":"f","x":1}}]}`, `unknown field "x"`},
		{`{"role":"user","content":"x"} {}`, "unexpected data after the JSON value"},
		{`{"role":"user","content":["x"]}`, `content: want a string, got JSON array`},
		{`{"role":"user","content":"x","metadata":{"k":true}}`, `metadata: want a string, got JSON bool`},
		{`{"role":"assistant","tool_calls":[{"id":7}]}`, `tool_calls.id: want a string, got JSON number`},
		{`{"role":"user"`, `malformed JSON: unexpected end`},
		{`[]`, `want an object, got JSON array`},
		{`null`, `want an object, got JSON null`},
		{``, `empty: want a JSON value`},
	} {
		if _, err := Decode([]byte(c.in), Wire); err == nil || err.Error() != c.want {
			t.Errorf("Decode(%s) = %v, want %s", c.in, err, c.want)
		}
	}
	var ufe *UnknownFieldError
	if _, err := Decode([]byte(`{"role":"user","content":"x","seq":1}`), Wire); !errors.As(err, &ufe) || ufe.Field != "seq" {
		t.Errorf("unknown field error = %#v", err)
	}
	o := Wire
	o.AllowUnknownFields = true
	if m, err := Decode([]byte(`{"role":"user","content":"x","seq":1}`), o); err != nil || m.Content != "x" {
		t.Errorf("AllowUnknownFields: %+v, %v", m, err)
	}
}

func TestToMemoryRules(t *testing.T) {
	t.Parallel()
	call := func(id, typ, name string) ToolCall {
		tc := ToolCall{ID: id, Type: typ}
		if name != "" {
			tc.Function = &Function{Name: name}
		}
		return tc
	}
	for _, c := range []struct {
		m          Message
		wire       string // "" when Wire accepts m
		transcript string // "" when Transcript accepts m
	}{
		{Message{Content: "x"}, "role is missing (want user, assistant, system or tool)", "role is missing (want user, assistant, system or tool)"},
		{Message{Role: "bot"}, `role = "bot": want user, assistant, system or tool`, `role = "bot": want user, assistant, system or tool`},
		{Message{Role: "user", ToolCalls: []ToolCall{call("c", "", "f")}}, "tool_calls: only assistant messages make tool calls", "tool_calls: only assistant messages make tool calls"},
		{Message{Role: "tool"}, "tool_call_id is missing: a tool message answers one tool call", "tool_call_id is missing: a tool message answers one tool call"},
		{Message{Role: "user", ToolCallID: "c"}, "tool_call_id: only tool messages answer tool calls", ""},
		{Message{Role: "assistant", ToolCalls: []ToolCall{call("", "function", "f")}}, "tool_calls[0].id is missing", ""},
		{Message{Role: "assistant", ToolCalls: []ToolCall{call("c", "", "f"), call("c", "", "g")}}, `tool_calls[1].id "c" is repeated`, ""},
		{Message{Role: "assistant", ToolCalls: []ToolCall{call("c", "custom", "f")}}, `tool_calls[0].type = "custom": want "function"`, ""},
		{Message{Role: "assistant", ToolCalls: []ToolCall{call("c", "", "")}}, "tool_calls[0].function.name is missing", "tool_calls[0].function.name is missing"},
		{Message{Role: "assistant", ToolCalls: []ToolCall{{ID: "c", Function: &Function{Arguments: "{}"}}}}, "tool_calls[0].function.name is missing", "tool_calls[0].function.name is missing"},
		{Message{Role: "user", Metadata: map[string]string{"strata.title": "t"}}, `metadata: key "strata.title" is reserved (keys starting with "strata.")`, ""},
		{Message{Role: "user", Metadata: map[string]string{"": "v"}}, "metadata: empty key", ""},
		{Message{Role: "user", Metadata: map[string]string{"": "v", "strata.x": ""}}, "metadata: empty key", ""},
	} {
		for _, f := range []struct {
			name string
			o    Options
			want string
		}{{"Wire", Wire, c.wire}, {"Transcript", Transcript, c.transcript}} {
			_, err := ToMemory(c.m, f.o)
			switch {
			case f.want == "" && err != nil:
				t.Errorf("%s: ToMemory(%+v): %v", f.name, c.m, err)
			case f.want != "" && (err == nil || err.Error() != f.want):
				t.Errorf("%s: ToMemory(%+v) = %v, want %s", f.name, c.m, err, f.want)
			case err != nil:
				var fe *FieldError
				if !errors.As(err, &fe) || !errors.Is(err, store.ErrInvalidMessage) || !strings.HasPrefix(f.want, fe.Field) {
					t.Errorf("%s: %v is not a FieldError wrapping store.ErrInvalidMessage", f.name, err)
				}
			}
		}
	}
	// The lenient format drops a call id off a message that is no tool
	// result and keeps a call's own type.
	got, err := ToMemory(Message{Role: "user", Content: "x", ToolCallID: "c", Name: "n"}, Transcript)
	if err != nil || !reflect.DeepEqual(got, store.Message{Role: store.RoleUser, Content: "x", Name: "n"}) {
		t.Errorf("Transcript user message = %#v, %v", got, err)
	}
	got, err = ToMemory(Message{Role: "assistant", ToolCalls: []ToolCall{call("", "custom", "f"), call("", "", "g")}}, Transcript)
	if err != nil || !reflect.DeepEqual(got.ToolCalls, []llms.ToolCall{{Type: "custom", FunctionCall: fn("f", "")}, {Type: "function", FunctionCall: fn("g", "")}}) {
		t.Errorf("Transcript calls = %#v, %v", got.ToolCalls, err)
	}
}

func TestDecodeTranscript(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want Message
	}{
		{`{"role":" Human ","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}},{"type":"text","text":"b"}]}`,
			Message{Role: "user", Content: "a\nb"}},
		{`{"role":"model","content":null,"refusal":null,"annotations":[],"audio":null,"tool_calls":[` +
			`{"id":"c1","name":"f","arguments":{"b": [1, 2],"a":"x"}},` +
			`{"id":"c2","type":"function","index":0,"function":{"name":"g","arguments":"{\"y\": 2}"},"name":"ignored"},` +
			`{"id":"c3","arguments":null},{"name":"h","arguments":"\u00e9"}]}`,
			Message{Role: "assistant", ToolCalls: []ToolCall{
				{ID: "c1", Function: &Function{Name: "f", Arguments: `{"b":[1,2],"a":"x"}`}},
				{ID: "c2", Type: "function", Function: &Function{Name: "g", Arguments: `{"y": 2}`}},
				{ID: "c3"},
				{Function: &Function{Name: "h", Arguments: "é"}},
			}}},
		{`{"role":"developer","content":"s","metadata":{}}`, Message{Role: "system", Content: "s"}},
		{`{"role":"function","tool_call_id":"c","name":"f","content":"r","tool_calls":[]}`, Message{Role: "tool", Content: "r", ToolCallID: "c", Name: "f"}},
		{`{"role":"Robot"}`, Message{Role: "Robot"}},
		{`{"role":"  ","content":"x"}`, Message{Content: "x"}},
		{`{"role":"ai","tool_calls":[{"name":"f","arguments":{"s":"` + "\xff" + `"}}]}`,
			Message{Role: "assistant", ToolCalls: []ToolCall{{Function: &Function{Name: "f", Arguments: `{"s":"` + "\uFFFD" + `"}`}}}}},
	} {
		got, err := Decode([]byte(c.in), Transcript)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Decode(%s):\n got %#v, %v\nwant %#v", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{`{"role":"user","text":"hi"}`, `unknown field "text" (did you mean "content"? a message has role, content, tool_calls, tool_call_id, name, metadata)`},
		{`{"role":"user","zzz":1,"colour":2}`, `unknown field "colour" (a message has role, content, tool_calls, tool_call_id, name, metadata)`},
		{`{"role":5}`, `role: want a string, got JSON number`},
		{`{"role":"user","content":5}`, `content: want a string, null or an array of text parts`},
		{`{"role":"user","content":[{"text":5}]}`, `content: want a string, null or an array of text parts`},
		{`{"role":"ai","tool_calls":{}}`, `tool_calls: want an array, got JSON object`},
		{`{"role":"ai","tool_calls":["f"]}`, `tool_calls[0]: want an object, got JSON string`},
		{`{"role":"ai","tool_calls":[{"function":{"name":5}}]}`, `tool_calls[0].function.name: want a string, got JSON number`},
		{`{"role":"ai","tool_calls":[{"id":[]}]}`, `tool_calls[0].id: want a string, got JSON array`},
		{`{"role":"tool","tool_call_id":1}`, `tool_call_id: want a string, got JSON number`},
		{`{"role":"user","metadata":{"k":{}}}`, `metadata: want a string, got JSON object`},
		{`{"role":"user"} x`, `malformed JSON at byte 17: invalid character 'x' after top-level value`},
		{`"user"`, `want an object, got JSON string`},
	} {
		if _, err := Decode([]byte(c.in), Transcript); err == nil || err.Error() != c.want {
			t.Errorf("Decode(%s) = %v\nwant %s", c.in, err, c.want)
		}
	}
	o := Transcript
	o.AllowUnknownFields = true
	if m, err := Decode([]byte(`{"role":"user","content":"x","function_call":null}`), o); err != nil || m.Content != "x" {
		t.Errorf("AllowUnknownFields: %+v, %v", m, err)
	}
}

func TestUnmarshalStrict(t *testing.T) {
	t.Parallel()
	var v struct{ A int }
	for _, c := range []struct {
		in   string
		want func(error) bool
	}{
		{`{"A":1}`, func(err error) bool { return err == nil }},
		{"  {\"A\":1}\n\t ", func(err error) bool { return err == nil }},
		{"  ", func(err error) bool { return errors.Is(err, io.EOF) }},
		{`{"A":1} 2`, func(err error) bool { return errors.Is(err, ErrTrailingData) }},
		{`{"A":1} {`, func(err error) bool { return errors.Is(err, ErrTrailingData) }},
		{`{"A":1} }`, func(err error) bool { return errors.Is(err, ErrTrailingData) }},
		{`{"A":1,"B":2}`, func(err error) bool {
			var ufe *UnknownFieldError
			return errors.As(err, &ufe) && ufe.Field == "B" && err.Error() == `unknown field "B"`
		}},
		{`{"A":"x"}`, func(err error) bool { var ute *json.UnmarshalTypeError; return errors.As(err, &ute) }},
		{`{"A":`, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
	} {
		if err := UnmarshalStrict(strings.NewReader(c.in), &v); !c.want(err) {
			t.Errorf("UnmarshalStrict(%q) = %v", c.in, err)
		}
	}
	// An error reading the input is returned as it is, also after the
	// value.
	body := http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(strings.NewReader(`{"A":1}`+strings.Repeat(" ", 100))), 20)
	var mbe *http.MaxBytesError
	if err := UnmarshalStrict(body, &v); !errors.As(err, &mbe) {
		t.Errorf("over the limit: %v", err)
	}
}

func TestFromChat(t *testing.T) {
	t.Parallel()
	var nilAI *llms.AIChatMessage
	for _, c := range []struct {
		cm   llms.ChatMessage
		want Message
	}{
		{nil, Message{Role: "user"}},
		{nilAI, Message{Role: "user"}},
		{&llms.AIChatMessage{Content: "x", ToolCalls: []llms.ToolCall{{ID: "c", FunctionCall: fn("f", "{}")}}},
			Message{Role: "assistant", Content: "x", ToolCalls: []ToolCall{{ID: "c", Type: "function", Function: &Function{Name: "f", Arguments: "{}"}}}}},
		{llms.AIChatMessage{FunctionCall: fn("legacy", "{}")},
			Message{Role: "assistant", ToolCalls: []ToolCall{{Type: "function", Function: &Function{Name: "legacy", Arguments: "{}"}}}}},
		{llms.ToolChatMessage{ID: "c", Content: "r"}, Message{Role: "tool", Content: "r", ToolCallID: "c"}},
		{llms.ToolChatMessage{Content: "no id"}, Message{Role: "tool", Content: "no id"}},
		{llms.FunctionChatMessage{Name: "f", Content: "r"}, Message{Role: "tool", Content: "r", Name: "f"}},
		{llms.FunctionChatMessage{Content: "no name"}, Message{Role: "tool", Content: "no name"}},
		{llms.GenericChatMessage{Role: "critic", Name: "bob", Content: "g"}, Message{Role: "user", Content: "g", Name: "bob"}},
		{llms.SystemChatMessage{Content: "s"}, Message{Role: "system", Content: "s"}},
		{llms.AIChatMessage{Content: "r", ReasoningContent: "why"}, Message{Role: "assistant", Content: "r"}},
	} {
		if got := FromChat(c.cm); !reflect.DeepEqual(got, c.want) {
			t.Errorf("FromChat(%#v):\n got %#v\nwant %#v", c.cm, got, c.want)
		}
	}
}

// otherMessage is a chat message of a type memory does not store.
type otherMessage llms.ChatMessageType

func (m otherMessage) GetType() llms.ChatMessageType { return llms.ChatMessageType(m) }
func (m otherMessage) GetContent() string            { return "other " + string(m) }

func TestFromChatOtherTypes(t *testing.T) {
	t.Parallel()
	for typ, role := range map[llms.ChatMessageType]string{
		llms.ChatMessageTypeAI: "assistant", llms.ChatMessageTypeSystem: "system", llms.ChatMessageTypeTool: "tool",
		llms.ChatMessageTypeFunction: "tool", llms.ChatMessageTypeHuman: "user", llms.ChatMessageTypeGeneric: "user", "": "user",
	} {
		want := Message{Role: role, Content: "other " + string(typ)}
		if got := FromChat(otherMessage(typ)); !reflect.DeepEqual(got, want) {
			t.Errorf("FromChat(%q) = %#v, want %#v", typ, got, want)
		}
	}
}

func TestKind(t *testing.T) {
	t.Parallel()
	var p **string
	for _, c := range []struct {
		v    any
		want string
	}{
		{"", "a string"}, {p, "a string"}, {[]int{}, "an array"}, {[2]int{}, "an array"}, {struct{}{}, "an object"},
		{map[string]int{}, "an object"}, {true, "true or false"}, {1.5, "a number"}, {uint8(1), "a number"},
	} {
		if got := Kind(reflect.TypeOf(c.v)); got != c.want {
			t.Errorf("Kind(%T) = %s, want %s", c.v, got, c.want)
		}
	}
	if got := Kind(nil); got != "a value" {
		t.Errorf("Kind(nil) = %s", got)
	}
}
