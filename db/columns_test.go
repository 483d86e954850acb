package db_test

import (
	"reflect"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory/store"
)

// The tool_calls and metadata columns hold JSON that rows already written
// keep: these tests pin what an append stores, as PostgreSQL returns it,
// and that rows of that shape, however their JSON is spaced, read back.

func TestColumnEncodingGolden(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	msgs := []store.Message{
		{Role: store.RoleAssistant, Content: "", ToolCalls: []llms.ToolCall{
			{ID: "call_1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "lookup", Arguments: `{"q":"<a&b>"}`}},
			{ID: "call_2", Type: "custom"}, // no function
			{Type: "function", FunctionCall: &llms.FunctionCall{Name: "no_id"}},
		}, Metadata: map[string]string{store.MetadataModelVariant: "v1", "a": "é\"\n"}},
		{Role: store.RoleTool, Content: "ok", ToolCallID: "call_1", Name: "lookup"},
		{Role: store.RoleUser, Content: "plain", Metadata: map[string]string{}},
	}
	mustAppend(t, ctx, f.messages, "cols", "u", msgs...)
	var rows []struct {
		ToolCalls *string `db:"tool_calls"`
		Metadata  *string `db:"metadata"`
	}
	if err := f.d.SelectContext(ctx, &rows, `SELECT tool_calls::text AS tool_calls, metadata::text AS metadata
  FROM strata_messages WHERE session_id = 'cols' ORDER BY seq`); err != nil {
		t.Fatal(err)
	}
	str := func(p *string) string {
		if p == nil {
			return "NULL"
		}
		return *p
	}
	want := [][2]string{
		{`[{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"<a&b>\"}"}}, {"id": "call_2", "type": "custom"}, {"id": "", "type": "function", "function": {"name": "no_id", "arguments": ""}}]`,
			`{"a": "é\"\n", "model_variant": "v1"}`},
		{"NULL", "NULL"},
		{"NULL", "NULL"},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows", len(rows))
	}
	for i, r := range rows {
		if got := [2]string{str(r.ToolCalls), str(r.Metadata)}; got != want[i] {
			t.Errorf("row %d:\n got %q\nwant %q", i, got, want[i])
		}
	}
	got := allMessages(t, ctx, f.messages, "cols", "u")
	msgs[2].Metadata = nil // an empty map is not stored
	for i := range got {
		got[i].Seq, got[i].UserID, got[i].CreatedAt = 0, "", msgs[i].CreatedAt
		if !reflect.DeepEqual(got[i], msgs[i]) {
			t.Errorf("message %d:\n got %#v\nwant %#v", i, got[i], msgs[i])
		}
	}
}

func TestColumnLegacyRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	ensureSession(t, ctx, f.messages, "legacy", "u")
	insert := func(role, toolCalls, metadata string) {
		t.Helper()
		_, err := f.d.ExecContext(ctx, `INSERT INTO strata_messages
       (session_id, role, content, tool_calls, tool_call_id, name, metadata, user_id, created_at)
VALUES ('legacy', $1, 'c', NULLIF($2, '')::jsonb, '', '', NULLIF($3, '')::jsonb, 'u', now())`, role, toolCalls, metadata)
		if err != nil {
			t.Fatal(err)
		}
	}
	// As the store has always sent them, compact; as a person or a dump
	// tool might have written them, spaced; and JSON null.
	insert("assistant", `[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"c2","type":""}]`, `{"model_variant":"v"}`)
	insert("assistant", "[\n  {\"function\": {\"arguments\": \"\", \"name\": \"g\"}, \"type\": \"function\", \"id\": \"c3\"}\n]", `{}`)
	insert("user", `null`, `null`)
	insert("user", `[]`, ``)
	want := []store.Message{
		{Role: store.RoleAssistant, Content: "c", ToolCalls: []llms.ToolCall{
			{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: `{"a":1}`}},
			{ID: "c2"},
		}, Metadata: map[string]string{store.MetadataModelVariant: "v"}},
		{Role: store.RoleAssistant, Content: "c", ToolCalls: []llms.ToolCall{
			{ID: "c3", Type: "function", FunctionCall: &llms.FunctionCall{Name: "g"}}}},
		{Role: store.RoleUser, Content: "c"},
		{Role: store.RoleUser, Content: "c"},
	}
	got := allMessages(t, ctx, f.messages, "legacy", "u")
	if len(got) != len(want) {
		t.Fatalf("%d messages", len(got))
	}
	for i := range got {
		got[i].Seq, got[i].UserID, got[i].CreatedAt = 0, "", want[i].CreatedAt
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("message %d:\n got %#v\nwant %#v", i, got[i], want[i])
		}
	}
}
