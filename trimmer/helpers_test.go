package trimmer

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/chatmsg"
)

// lenEst counts one token per byte, like the reference tests' text.length.
var lenEst = EstimatorFunc(func(s string) int { return len(s) })

func sys(s string) llms.ChatMessage  { return llms.SystemChatMessage{Content: s} }
func user(s string) llms.ChatMessage { return llms.HumanChatMessage{Content: s} }
func ai(s string) llms.ChatMessage   { return llms.AIChatMessage{Content: s} }

// calls is an assistant message calling tool "tool" with "{}" once per id,
// so each call costs len("tool{}") = 6 tokens under lenEst.
func calls(s string, ids ...string) llms.ChatMessage {
	m := llms.AIChatMessage{Content: s}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, llms.ToolCall{
			ID: id, Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "tool", Arguments: "{}"},
		})
	}
	return m
}

func result(id, s string) llms.ChatMessage { return llms.ToolChatMessage{ID: id, Content: s} }

// render spells a message list compactly for comparisons and failure output.
func render(msgs []llms.ChatMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = render1(m)
	}
	return out
}

func render1(m llms.ChatMessage) string {
	switch v := m.(type) {
	case nil:
		return "<nil>"
	case llms.AIChatMessage:
		return renderAI(v)
	case *llms.AIChatMessage:
		if v == nil {
			return "<nil>"
		}
		return "*" + renderAI(*v)
	case llms.ToolChatMessage:
		return "tool:" + v.ID + ":" + v.Content
	case *llms.ToolChatMessage:
		if v == nil {
			return "<nil>"
		}
		return "*tool:" + v.ID + ":" + v.Content
	}
	if chatmsg.Value(m) == nil {
		return "<nil>"
	}
	prefix := ""
	if reflect.ValueOf(m).Kind() == reflect.Pointer {
		prefix = "*"
	}
	return prefix + string(m.GetType()) + ":" + m.GetContent()
}

func renderAI(m llms.AIChatMessage) string {
	if len(m.ToolCalls) == 0 {
		return "ai:" + m.Content
	}
	ids := make([]string, len(m.ToolCalls))
	for i, tc := range m.ToolCalls {
		ids[i] = tc.ID
	}
	return fmt.Sprintf("ai:%s[%s]", m.Content, strings.Join(ids, ","))
}

// sameMessages is reflect.DeepEqual that treats nil and empty lists alike.
func sameMessages(a, b []llms.ChatMessage) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

// subsequenceIndex maps each output message to its input position, or
// reports false when out is not a subsequence of in. Test inputs use unique
// contents, so the greedy match is the only one.
func subsequenceIndex(in, out []llms.ChatMessage) ([]int, bool) {
	idx := make([]int, 0, len(out))
	j := 0
	for _, m := range out {
		for j < len(in) && !reflect.DeepEqual(in[j], m) {
			j++
		}
		if j == len(in) {
			return nil, false
		}
		idx = append(idx, j)
		j++
	}
	return idx, true
}

func roles(msgs []llms.ChatMessage) []role {
	rs := make([]role, len(msgs))
	for i, m := range msgs {
		rs[i] = classify(m).role
	}
	return rs
}

func lastUserIndex(msgs []llms.ChatMessage) int {
	rs := roles(msgs)
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i] == roleUser {
			return i
		}
	}
	return -1
}

func hasMisplacedSystem(msgs []llms.ChatMessage) bool {
	seenOther := false
	for _, r := range roles(msgs) {
		if r == roleSystem && seenOther {
			return true
		}
		seenOther = seenOther || r != roleSystem
	}
	return false
}

func withoutSystems(msgs []llms.ChatMessage) []llms.ChatMessage {
	var out []llms.ChatMessage
	for _, m := range msgs {
		if classify(m).role != roleSystem {
			out = append(out, m)
		}
	}
	return out
}

// checkInvariants asserts what must hold for every trim, whatever the input:
// the result is a subsequence, the last user message survives (and is still
// the last one), no tool violation remains, and the report adds up.
func checkInvariants(t testing.TB, tr *Trimmer, in, out []llms.ChatMessage, rep Report) {
	t.Helper()
	idx, ok := subsequenceIndex(in, out)
	if !ok {
		t.Fatalf("result is not a subsequence of the input\n in: %q\nout: %q", render(in), render(out))
	}
	if lu := lastUserIndex(in); lu >= 0 {
		k := lastUserIndex(out)
		if k < 0 || idx[k] != lu {
			t.Fatalf("last user message %d lost\n in: %q\nout: %q", lu, render(in), render(out))
		}
	}
	err := Validate(out)
	if !hasMisplacedSystem(in) && err != nil {
		t.Fatalf("Validate(result) = %v\n in: %q\nout: %q", err, render(in), render(out))
	}
	if err := Validate(withoutSystems(out)); err != nil {
		t.Fatalf("tool violation in result: %v\n in: %q\nout: %q", err, render(in), render(out))
	}
	if rep.Removed != len(in)-len(out) {
		t.Fatalf("Report.Removed = %d, want %d", rep.Removed, len(in)-len(out))
	}
	if got := tr.Cost(out); rep.TokensAfter != got {
		t.Fatalf("Report.TokensAfter = %d, want %d", rep.TokensAfter, got)
	}
	if got := tr.Cost(in); rep.TokensBefore != got {
		t.Fatalf("Report.TokensBefore = %d, want %d", rep.TokensBefore, got)
	}
	if rep.OverBudget != (rep.TokensAfter > rep.Budget) {
		t.Fatalf("Report.OverBudget = %v with %d tokens for budget %d", rep.OverBudget, rep.TokensAfter, rep.Budget)
	}
}
