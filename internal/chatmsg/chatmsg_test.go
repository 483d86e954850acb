package chatmsg

import (
	"reflect"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

type custom struct{ llms.HumanChatMessage }

func TestValue(t *testing.T) {
	var nilAI *llms.AIChatMessage
	var nilCustom *custom
	ai := llms.AIChatMessage{Content: "a", ToolCalls: []llms.ToolCall{{ID: "c1"}}}
	cases := []struct {
		in, want llms.ChatMessage
	}{
		{nil, nil},
		{nilAI, nil},
		{nilCustom, nil},
		{&llms.HumanChatMessage{Content: "h"}, llms.HumanChatMessage{Content: "h"}},
		{&ai, ai},
		{ai, ai},
		{&llms.SystemChatMessage{Content: "s"}, llms.SystemChatMessage{Content: "s"}},
		{&llms.ToolChatMessage{ID: "c1", Content: "r"}, llms.ToolChatMessage{ID: "c1", Content: "r"}},
		{&llms.GenericChatMessage{Role: "critic", Content: "g"}, llms.GenericChatMessage{Role: "critic", Content: "g"}},
		{&llms.FunctionChatMessage{Name: "f", Content: "r"}, llms.FunctionChatMessage{Name: "f", Content: "r"}},
		{custom{llms.HumanChatMessage{Content: "c"}}, custom{llms.HumanChatMessage{Content: "c"}}},
	}
	for i, c := range cases {
		if got := Value(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("case %d: Value(%#v) = %#v, want %#v", i, c.in, got, c.want)
		}
	}
}

func TestToolCalls(t *testing.T) {
	a := llms.FunctionCall{Name: "a", Arguments: `{"x":1}`}
	b := llms.FunctionCall{Name: "b", Arguments: `{}`}
	ai := llms.AIChatMessage{FunctionCall: &a, ToolCalls: []llms.ToolCall{{ID: "1", FunctionCall: &b}, {ID: "2"}}}
	for _, m := range []llms.ChatMessage{ai, &ai} {
		if got := ToolCalls(m); !reflect.DeepEqual(got, []llms.FunctionCall{a, b}) {
			t.Errorf("%T: got %+v", m, got)
		}
	}
	for _, m := range []llms.ChatMessage{nil, (*llms.AIChatMessage)(nil), llms.AIChatMessage{Content: "hi"}, llms.ToolChatMessage{ID: "1", Content: "x"}} {
		if got := ToolCalls(m); got != nil {
			t.Errorf("%#v: got %+v, want nil", m, got)
		}
	}
}
