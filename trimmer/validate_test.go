package trimmer

import (
	"errors"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		msgs  []llms.ChatMessage
		err   error // nil when valid
		index int
		id    string
	}{
		{name: "empty"},
		{name: "plain conversation", msgs: []llms.ChatMessage{sys("a"), sys("b"), user("q"), ai("a"), user("q2")}},
		{name: "complete group", msgs: []llms.ChatMessage{user("q"), calls("", "c1"), result("c1", "r"), ai("done")}},
		{name: "results in any order", msgs: []llms.ChatMessage{user("q"), calls("", "c1", "c2", "c3"), result("c2", ""), result("c3", ""), result("c1", "")}},
		{name: "consecutive groups", msgs: []llms.ChatMessage{calls("", "c1"), result("c1", ""), calls("", "c2"), result("c2", "")}},
		{name: "duplicate call ids answered twice", msgs: []llms.ChatMessage{calls("", "x", "x"), result("x", "1"), result("x", "2")}},
		{name: "legacy and unknown generic messages are not violations", msgs: []llms.ChatMessage{user("q"), llms.FunctionChatMessage{Name: "f"}, llms.GenericChatMessage{Role: "narrator"}}},
		{name: "pointer forms", msgs: []llms.ChatMessage{
			&llms.SystemChatMessage{Content: "s"}, &llms.HumanChatMessage{Content: "q"},
			&llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: "c1"}}}, &llms.ToolChatMessage{ID: "c1"},
		}},

		{name: "orphan first", msgs: []llms.ChatMessage{result("c1", "r"), user("q")}, err: ErrOrphanToolResult, index: 0, id: "c1"},
		{name: "orphan after user", msgs: []llms.ChatMessage{user("q"), result("c1", "r")}, err: ErrOrphanToolResult, index: 1, id: "c1"},
		{name: "orphan after plain assistant", msgs: []llms.ChatMessage{user("q"), ai("a"), result("c1", "r")}, err: ErrOrphanToolResult, index: 2, id: "c1"},
		{name: "duplicate result", msgs: []llms.ChatMessage{user("q"), calls("", "c1"), result("c1", "r"), result("c1", "r2")}, err: ErrOrphanToolResult, index: 3, id: "c1"},
		{name: "orphan after function message", msgs: []llms.ChatMessage{calls("", "c1"), result("c1", ""), llms.FunctionChatMessage{}, result("c1", "")}, err: ErrOrphanToolResult, index: 3, id: "c1"},
		{name: "nil message", msgs: []llms.ChatMessage{user("q"), nil}, err: ErrNilMessage, index: 1},
		{name: "nil pointer message", msgs: []llms.ChatMessage{(*llms.HumanChatMessage)(nil), user("q")}, err: ErrNilMessage, index: 0},
		{name: "nil inside a group", msgs: []llms.ChatMessage{calls("", "c1"), (*llms.ToolChatMessage)(nil), result("c1", "")}, err: ErrMissingToolResult, index: 0, id: "c1"},
		{name: "missing result", msgs: []llms.ChatMessage{user("q"), calls("", "c1", "c2"), result("c1", "r")}, err: ErrMissingToolResult, index: 1, id: "c2"},
		{name: "pending call at the end", msgs: []llms.ChatMessage{user("q"), calls("", "c1")}, err: ErrMissingToolResult, index: 1, id: "c1"},
		{name: "result separated from its call", msgs: []llms.ChatMessage{calls("", "c1"), ai("x"), result("c1", "")}, err: ErrMissingToolResult, index: 0, id: "c1"},
		{name: "wrong id", msgs: []llms.ChatMessage{calls("", "c1"), result("c2", "")}, err: ErrMissingToolResult, index: 0, id: "c1"},
		{name: "misplaced system", msgs: []llms.ChatMessage{sys("s"), user("q"), sys("late")}, err: ErrMisplacedSystem, index: 2},
		{name: "misplaced generic system", msgs: []llms.ChatMessage{user("q"), llms.GenericChatMessage{Role: "System"}}, err: ErrMisplacedSystem, index: 1},
		{name: "first violation wins", msgs: []llms.ChatMessage{sys("s"), user("q"), calls("", "c1"), sys("late"), result("c1", "")}, err: ErrMissingToolResult, index: 2, id: "c1"},
		{name: "misplaced system before orphan", msgs: []llms.ChatMessage{user("q"), sys("late"), result("c1", "")}, err: ErrMisplacedSystem, index: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.msgs)
			if tc.err == nil {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("Validate = %v, want %v", err, tc.err)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate = %T, want *ValidationError", err)
			}
			if ve.Index != tc.index || ve.ToolCallID != tc.id {
				t.Fatalf("violation at %d (id %q), want %d (id %q)", ve.Index, ve.ToolCallID, tc.index, tc.id)
			}
			if !strings.Contains(err.Error(), "message ") {
				t.Fatalf("error %q does not name the message", err)
			}
		})
	}
}
