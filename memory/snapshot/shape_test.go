package snapshot

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/msgjson"
	"github.com/strata-go/strata/memory/store"
)

// jsonNames are the JSON names of a struct type's fields, in order.
func jsonNames(typ reflect.Type) []string {
	var out []string
	for i := range typ.NumField() {
		out = append(out, strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
	}
	return out
}

// A snapshot's message is the one JSON shape of a message (msgjson's)
// between its seq and its created_at: the same names in the same order,
// the same tool calls; and a stored message comes back unchanged through
// it, tool calls without type or function included.
func TestMessageIsTheWireShape(t *testing.T) {
	t.Parallel()
	names := jsonNames(reflect.TypeFor[Message]())
	if want := append(append([]string{"seq"}, jsonNames(reflect.TypeFor[msgjson.Message]())...), "created_at"); !slices.Equal(names, want) {
		t.Fatalf("snapshot.Message's JSON names %v, want %v", names, want)
	}
	m := store.Message{Seq: 7, Role: store.RoleAssistant, Content: "x", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC),
		ToolCalls: []llms.ToolCall{{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: `{"a":1}`}}, {ID: "c2"}},
		Metadata:  map[string]string{"model_variant": "v"}}
	s := FromStored(m)
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"seq":7,"role":"assistant","content":"x","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"c2","type":""}],"metadata":{"model_variant":"v"},"created_at":"2026-01-02T03:04:05.000006Z"}`
	if string(raw) != want {
		t.Fatalf("snapshot message:\n got %s\nwant %s", raw, want)
	}
	cols, err := msgjson.EncodeToolCalls(m.ToolCalls)
	if err != nil || !strings.Contains(string(raw), `"tool_calls":`+cols+`,`) {
		t.Fatalf("the tool calls differ from the store's column %s (%v)", cols, err)
	}
	var back Message
	if err := msgjson.UnmarshalStrict(strings.NewReader(string(raw)), &back); err != nil {
		t.Fatal(err)
	}
	if got := back.Stored(); !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip:\n got %#v\nwant %#v", got, m)
	}
}
