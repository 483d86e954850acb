package trimmer

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"
)

// custom is a message type from outside langchaingo: Trim prices and
// keeps it, but cannot cut its text.
type custom struct{ text string }

func (c custom) GetType() llms.ChatMessageType { return llms.ChatMessageTypeHuman }
func (c custom) GetContent() string            { return c.text }

// What every phase leaves — the anchor and the leading systems still there
// — is cut when it does not fit: a text smaller than its share stays
// whole, the others get equal shares, and the messages keep their roles,
// calls and ids. Tool groups are cut only as the anchor of a list without
// a user message; after a question they are dropped first. Costs under
// lenEst: overhead 20, the marker 14, a call of "tool" with "{}" 6.
func TestTrimCutsWhatThePhasesLeave(t *testing.T) {
	big := strings.Repeat("b", 500)
	tests := []struct {
		name      string
		window    int
		in        []llms.ChatMessage
		want      []string
		truncated int
	}{
		{
			// 300 − fixed 40 = 260 for the texts: "facts" (5) stays, the
			// question gets 255: 241 bytes and the marker.
			name:   "a new question too large is cut, after the memory",
			window: 300,
			in:     []llms.ChatMessage{sys("facts"), user("old"), ai("old answer"), user(big)},
			want:   []string{"system:facts", "human:" + big[:241] + TruncationMarker}, truncated: 1,
		},
		{
			// 200 − 40 = 160: two shares of 80, 66 bytes each.
			name:   "the memory and the question share the cut",
			window: 200,
			in:     []llms.ChatMessage{sys(strings.ToUpper(big)), user("old"), user(big)},
			want: []string{"system:" + strings.ToUpper(big[:66]) + TruncationMarker,
				"human:" + big[:66] + TruncationMarker}, truncated: 2,
		},
		{
			// Phase 1.5 drops the memory and phase 2 the tool round; the
			// question alone gets 80: 66 bytes.
			name:   "the question is cut once the tool context and memory are gone",
			window: 100,
			in:     []llms.ChatMessage{sys("facts"), user(big), calls("", "c1"), result("c1", "r")},
			want:   []string{"human:" + big[:66] + TruncationMarker}, truncated: 1,
		},
		{
			// 200 − fixed 32 (calls) − 20 − 20 = 128 for the texts: "ok"
			// (2) stays, the big result gets 126: 112 bytes and the marker.
			name:   "no user message: a small result stays whole, a large one is cut",
			window: 200,
			in:     []llms.ChatMessage{ai("hello"), calls("", "c1", "c2"), result("c1", "ok"), result("c2", big)},
			want:   []string{"ai:[c1,c2]", "tool:c1:ok", "tool:c2:" + big[:112] + TruncationMarker}, truncated: 1,
		},
		{
			// 200 − 32 − 20 − 20 = 128: two shares of 64, 50 bytes each.
			name:   "no user message: large results share equally",
			window: 200,
			in:     []llms.ChatMessage{calls("", "c1", "c2"), result("c1", big), result("c2", strings.ToUpper(big))},
			want: []string{"ai:[c1,c2]", "tool:c1:" + big[:50] + TruncationMarker,
				"tool:c2:" + strings.ToUpper(big[:50]) + TruncationMarker}, truncated: 2,
		},
		{
			// The assistant's text is cut, its calls are not: 150 − 26
			// (overhead, call) − 21 (result) = 103 for its text: 89 bytes.
			name:   "an assistant's text is cut, its tool calls kept",
			window: 150,
			in:     []llms.ChatMessage{calls(big, "c1"), result("c1", "r")},
			want:   []string{"ai:" + big[:89] + TruncationMarker + "[c1]", "tool:c1:r"}, truncated: 1,
		},
		{
			// Cut messages come back in value form.
			name:   "pointer forms",
			window: 60,
			in:     []llms.ChatMessage{&llms.AIChatMessage{Content: "a"}, &llms.HumanChatMessage{Content: big}},
			want:   []string{"human:" + big[:26] + TruncationMarker}, truncated: 1,
		},
		{
			name:   "a legacy function result",
			window: 100,
			in:     []llms.ChatMessage{ai("a"), llms.FunctionChatMessage{Name: "f", Content: big}},
			want:   []string{"function:" + big[:66] + TruncationMarker}, truncated: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(tc.window, 0, lenEst)
			out, rep := tr.TrimReport(tc.in, "", 0)
			if got := render(out); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Trim = %q, want %q", got, tc.want)
			}
			if rep.OverBudget || rep.TokensAfter > rep.Budget || rep.Truncated != tc.truncated {
				t.Fatalf("report %+v, want within budget, %d cut", rep, tc.truncated)
			}
			checkInvariants(t, tr, tc.in, out, rep)
			if err := Validate(out); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// For every window from nothing to more than enough, the result never
// exceeds the budget unless nothing fits, and OverBudget says so. With a
// question, the minimum is the question cut alone: its overhead and a
// marker (34); below it the result is the question alone, whole. Without
// one, the minimum is the newest group cut alone (139: its overhead and
// calls 98, its short texts whole, "thinking" 8 and "small" 5, and a
// marker for each large result); the memory (25) stays beside it from 164
// on; below 139 the result is the memory and the group, whole.
func TestTrimNeverExceedsTheBudget(t *testing.T) {
	big := strings.Repeat("日本語のテキスト", 40)
	group := []llms.ChatMessage{
		calls("thinking", "c1", "c2", "c3"), result("c3", big), result("c1", "small"), result("c2", big+"!"),
	}
	tests := []struct {
		name    string
		in      []llms.ChatMessage
		minimum int
		over    []llms.ChatMessage
	}{
		{"a long question in a tool loop",
			append([]llms.ChatMessage{sys("facts"), user("old"), ai("old answer"), user(big + "?")}, group...),
			34, []llms.ChatMessage{user(big + "?")}},
		{"no user message: a long tool group",
			append([]llms.ChatMessage{sys("facts"), ai("old answer")}, group...),
			139, append([]llms.ChatMessage{sys("facts")}, group...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cuts, withMemory := 0, 0
			for w := -5; w <= New(0, 0, lenEst).Cost(tc.in)+5; w++ {
				tr := New(w, 0, lenEst)
				out, rep := tr.TrimReport(tc.in, "", 0)
				checkInvariants(t, tr, tc.in, out, rep)
				if rep.OverBudget != (w < tc.minimum) {
					t.Fatalf("window %d: over budget %v, the minimum is %d", w, rep.OverBudget, tc.minimum)
				}
				if rep.OverBudget && !reflect.DeepEqual(out, tc.over) {
					t.Fatalf("window %d: over budget with %q", w, render(out))
				}
				if rep.SystemRemoved == 0 {
					withMemory++
				}
				if rep.Truncated > 0 {
					cuts++
					for _, m := range out {
						if !utf8.ValidString(m.GetContent()) {
							t.Fatalf("window %d: %q is not cut between characters", w, m.GetContent())
						}
					}
				}
			}
			if cuts == 0 || withMemory == 0 {
				t.Fatalf("%d windows cut, %d kept the memory: each must happen", cuts, withMemory)
			}
		})
	}
}

// Nothing fits, not even the anchor cut: its overhead, tool calls and a
// marker per cut text exceed the budget. The result is the last user
// message alone, whole; without one, the memory and the newest group,
// whole.
func TestTrimOverBudget(t *testing.T) {
	big := strings.Repeat("x", 300)
	tests := []struct {
		name   string
		window int
		in     []llms.ChatMessage
		want   []string
	}{
		{"the question cannot hold a marker", 20,
			[]llms.ChatMessage{sys("a long facts block"), sys("and a narrative"), user("q")},
			[]string{"human:q"}},
		{"no user message: no room for the group's overhead", 60,
			[]llms.ChatMessage{ai("a"), calls("", "c1", "c2"), result("c1", big), result("c2", big)},
			[]string{"ai:[c1,c2]", "tool:c1:" + big, "tool:c2:" + big}},
		{"no user message: no room for a marker per cut text", 99, // 99 − 72 = 27 < 2 × 14
			[]llms.ChatMessage{sys("facts"), calls("", "c1", "c2"), result("c1", big), result("c2", big)},
			[]string{"system:facts", "ai:[c1,c2]", "tool:c1:" + big, "tool:c2:" + big}},
		{"a text that cannot be cut", 100,
			[]llms.ChatMessage{user("q"), custom{big}},
			[]string{"human:" + big}},
		{"a budget of zero", 0,
			[]llms.ChatMessage{sys("facts"), user(big)},
			[]string{"human:" + big}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(tc.window, 0, lenEst)
			out, rep := tr.TrimReport(tc.in, "", 0)
			if got := render(out); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Trim = %q, want %q", got, tc.want)
			}
			if !rep.OverBudget || rep.Truncated != 0 {
				t.Fatalf("report %+v, want over budget, nothing cut", rep)
			}
			checkInvariants(t, tr, tc.in, out, rep)
			// A second trim keeps it as it is.
			if again := tr.Trim(out, "", 0); !reflect.DeepEqual(again, out) {
				t.Fatalf("second trim: %q", render(again))
			}
		})
	}
}

// cutText keeps the longest prefix, in whole characters, that fits with
// the marker.
func TestCutText(t *testing.T) {
	runes := EstimatorFunc(func(s string) int { return utf8.RuneCountInString(s) })
	marker := utf8.RuneCountInString(TruncationMarker)
	tests := []struct {
		text   string
		tokens int
		want   string
	}{
		{"héllo wörld", marker + 4, "héll"},
		{"héllo wörld", marker, ""},
		{"日本語", marker + 2, "日本"},
		{"abc", marker + 10, "abc"},
	}
	for _, tc := range tests {
		if got := cutText(runes, tc.text, tc.tokens); got != tc.want+TruncationMarker {
			t.Errorf("cutText(%q, %d) = %q, want %q", tc.text, tc.tokens, got, tc.want+TruncationMarker)
		}
	}
}
