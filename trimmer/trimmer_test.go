package trimmer

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

// Costs under lenEst, overhead included, used in the cases below:
// user "keep" 24, user "last" 24, calls("a","c1") 1+6+20 = 27,
// result("c1","res") 23, ai "final" 25; TruncationMarker costs 14.
func TestTrimReferenceCases(t *testing.T) {
	tests := []struct {
		name      string
		window    int
		output    int
		system    string
		in        []llms.ChatMessage
		want      []string
		tokens    int // TokensAfter, checked when > 0
		overBudg  bool
		truncated int
	}{
		{
			name:   "tool pair removed together from the front",
			window: 10,
			in:     []llms.ChatMessage{calls("a", "c1"), result("c1", "res"), user("last")},
			want:   []string{"human:last"},
			tokens: 24, overBudg: true, // 10 cannot hold the overhead (20) of a cut
		},
		{
			name:   "non-positive budget keeps only the last user message",
			window: 5, output: 10, system: "sys",
			in:       []llms.ChatMessage{user("old"), ai("answer"), user("last")},
			want:     []string{"human:last"},
			overBudg: true,
		},
		{
			// Phase 1 leaves facts (54), summary (67) and the question
			// (35): 156 for a budget of 77. The three cannot all be cut to
			// fit (60 of overhead leave 17, less than a marker per text),
			// so the oldest memory message gives way; the summary is cut
			// to 22 tokens beside the whole question.
			name:   "leading system messages protected in phase 1, cut to fit, the oldest giving way",
			window: 80, system: "sys", // budget 77
			in: []llms.ChatMessage{
				sys("Conversation Facts:\n- order: #1234"),
				sys("Conversation Summary:\nCustomer asked about order"),
				user("old message"), ai("old reply"), user("recent question"),
			},
			want: []string{
				"system:Conversa" + TruncationMarker,
				"human:recent question",
			},
			tokens: 77, truncated: 1,
		},
		{
			name:   "leading system messages cut beside the question",
			window: 120, // 60 of overhead, 60 for the texts: 15 for the question, 22 and 23
			in: []llms.ChatMessage{
				sys("Conversation Facts:\n- order: #1234"),
				sys("Conversation Summary:\nCustomer asked about order"),
				user("old message"), ai("old reply"), user("recent question"),
			},
			want: []string{
				"system:Conversa" + TruncationMarker,
				"system:Conversat" + TruncationMarker,
				"human:recent question",
			},
			tokens: 120, truncated: 2,
		},
		{
			// Nothing fits, not even the question cut: the question alone,
			// whole, as with a budget of zero or less.
			name:   "extremely tight positive budget keeps the last user message alone",
			window: 1,
			in: []llms.ChatMessage{
				sys("Facts: order=#1234"), sys("Summary: customer wants refund"),
				user("old q1"), ai("old a1"), user("old q2"), ai("old a2"), user("old q3"), ai("old a3"),
				user("recent question"),
			},
			want:     []string{"human:recent question"},
			overBudg: true,
		},
		{
			name:   "no leading systems trims oldest first",
			window: 30,
			in:     []llms.ChatMessage{user("old1"), ai("reply1"), user("old2"), ai("reply2"), user("recent")},
			want:   []string{"human:recent"},
			tokens: 26,
		},
		{
			name:   "phase 2 removes post-user tool group first",
			window: 60,
			in:     []llms.ChatMessage{user("keep"), calls("a", "c1"), result("c1", "res"), ai("final")},
			want:   []string{"human:keep", "ai:final"},
			tokens: 49,
		},
		{
			name:   "phase 2 also removes the trailing assistant (off-by-one fix)",
			window: 10,
			in:     []llms.ChatMessage{user("keep"), calls("a", "c1"), result("c1", "res"), ai("final")},
			want:   []string{"human:keep"},
			tokens: 24, overBudg: true,
		},
		{
			name:   "trailing assistant is the only post-user message",
			window: 30,
			in:     []llms.ChatMessage{user("keep"), ai("very-long-assistant-message")},
			want:   []string{"human:keep"},
		},
		{
			name:   "single oversized message is cut to fit",
			window: 100,
			in:     []llms.ChatMessage{user(strings.Repeat("x", 1000))},
			want:   []string{"human:" + strings.Repeat("x", 66) + TruncationMarker},
			tokens: 100, truncated: 1,
		},
		{
			name:   "single oversized message over budget when the marker does not fit",
			window: 33, // 20 of overhead leave 13 < 14 for the marker
			in:     []llms.ChatMessage{user(strings.Repeat("x", 1000))},
			want:   []string{"human:" + strings.Repeat("x", 1000)},
			tokens: 1020, overBudg: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(tc.window, tc.output, lenEst)
			out, rep := tr.TrimReport(tc.in, tc.system, 0)
			if got := render(out); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Trim = %q, want %q", got, tc.want)
			}
			if tc.tokens > 0 && rep.TokensAfter != tc.tokens {
				t.Errorf("TokensAfter = %d, want %d", rep.TokensAfter, tc.tokens)
			}
			if rep.OverBudget != tc.overBudg || rep.Truncated != tc.truncated {
				t.Errorf("OverBudget = %v, Truncated = %d, want %v, %d (report %+v)", rep.OverBudget, rep.Truncated, tc.overBudg, tc.truncated, rep)
			}
			checkInvariants(t, tr, tc.in, out, rep)
		})
	}
}

// Phase 1.5: facts (25) and narrative (29) give way, one at a time, to the
// tool context after the current question: q 21, calls 26, result 30.
func TestTrimPhaseOneAndAHalf(t *testing.T) {
	in := []llms.ChatMessage{
		sys("facts"), sys("narrative"), user("q"), calls("", "c1"), result("c1", "0123456789"),
	}
	tests := []struct {
		window        int
		want          []string
		systemRemoved int
	}{
		{131, []string{"system:facts", "system:narrative", "human:q", "ai:[c1]", "tool:c1:0123456789"}, 0},
		{110, []string{"system:narrative", "human:q", "ai:[c1]", "tool:c1:0123456789"}, 1},
		{80, []string{"human:q", "ai:[c1]", "tool:c1:0123456789"}, 2},
		{60, []string{"human:q"}, 2}, // phase 2 after phase 1.5 is exhausted
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.window), func(t *testing.T) {
			tr := New(tc.window, 0, lenEst)
			out, rep := tr.TrimReport(in, "", 0)
			if got := render(out); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Trim = %q, want %q", got, tc.want)
			}
			if rep.SystemRemoved != tc.systemRemoved {
				t.Errorf("SystemRemoved = %d, want %d", rep.SystemRemoved, tc.systemRemoved)
			}
			checkInvariants(t, tr, in, out, rep)
		})
	}
}

// In a tool loop whose newest rounds fill the budget, the question of the
// turn survives: the memory and then the oldest rounds after the question
// give way, never the question. q 21, facts 25, each round 26 + 70.
func TestTrimKeepsTheQuestionInAToolLoop(t *testing.T) {
	res := strings.Repeat("r", 50)
	in := []llms.ChatMessage{
		sys("facts"), user("old"), ai("old answer"), user("q"),
		calls("", "c1"), result("c1", "1"+res[1:]), calls("", "c2"), result("c2", "2"+res[1:]),
		calls("", "c3"), result("c3", "3"+res[1:]),
	}
	round := func(n string) []string { return []string{"ai:[c" + n + "]", "tool:c" + n + ":" + n + res[1:]} }
	tests := []struct {
		window int
		want   []string
	}{
		{334, append(append(append([]string{"system:facts", "human:q"}, round("1")...), round("2")...), round("3")...)},
		{309, append(append(append([]string{"human:q"}, round("1")...), round("2")...), round("3")...)},
		{213, append(append([]string{"human:q"}, round("2")...), round("3")...)},
		{117, append([]string{"human:q"}, round("3")...)},
		{116, []string{"human:q"}},
		{30, []string{"human:q"}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.window), func(t *testing.T) {
			tr := New(tc.window, 0, lenEst)
			out, rep := tr.TrimReport(in, "", 0)
			if got := render(out); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Trim = %q, want %q", got, tc.want)
			}
			checkInvariants(t, tr, in, out, rep)
		})
	}
}

// Phase 1 runs before phase 1.5: old turns go before any memory message.
func TestTrimOldHistoryBeforeLeadingSystems(t *testing.T) {
	in := []llms.ChatMessage{
		sys("facts"), user("old"), ai("old answer"), user("q"), calls("", "c1"), result("c1", "r"),
	}
	// facts 25, old 23, old answer 30, q 21, calls 26, result 21: total 146.
	tr := New(93, 0, lenEst)
	out := tr.Trim(in, "", 0)
	want := []string{"system:facts", "human:q", "ai:[c1]", "tool:c1:r"}
	if got := render(out); !reflect.DeepEqual(got, want) {
		t.Fatalf("Trim = %q, want %q", got, want)
	}
}

// A non-leading system message is ordinary history for phase 1.
func TestTrimDropsNonLeadingSystemAsHistory(t *testing.T) {
	in := []llms.ChatMessage{sys("lead"), user("u1"), sys("late"), ai("a1"), user("q")}
	tr := New(50, 0, lenEst) // lead 24, q 21
	out := tr.Trim(in, "", 0)
	want := []string{"system:lead", "human:q"}
	if got := render(out); !reflect.DeepEqual(got, want) {
		t.Fatalf("Trim = %q, want %q", got, want)
	}
}

func TestTrimMultiResultGroupsNeverSplit(t *testing.T) {
	// q0 22, calls(3 ids) 38, results 21 each, ans 23, q 21: total 167.
	in := []llms.ChatMessage{
		user("q0"), calls("", "c1", "c2", "c3"),
		result("c3", "r"), result("c1", "r"), result("c2", "r"), // any order
		ai("ans"), user("q"),
	}
	tests := []struct {
		window int
		want   []string
	}{
		{167, render(in)},
		{150, []string{"ai:[c1,c2,c3]", "tool:c3:r", "tool:c1:r", "tool:c2:r", "ai:ans", "human:q"}},
		// Dropping q0 and one result would fit 140 (124), but the group goes
		// as a whole.
		{140, []string{"ai:ans", "human:q"}},
		{10, []string{"human:q"}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.window), func(t *testing.T) {
			tr := New(tc.window, 0, lenEst)
			out, rep := tr.TrimReport(in, "", 0)
			if got := render(out); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Trim = %q, want %q", got, tc.want)
			}
			checkInvariants(t, tr, in, out, rep)
		})
	}
}

func TestTrimPostUserMultiResultGroups(t *testing.T) {
	in := []llms.ChatMessage{
		user("q"), calls("", "a", "b"), result("a", "1"), result("b", "2"),
		calls("", "c"), result("c", "3"), ai("done"),
	}
	// q 21, group1 32+21+21 = 74, group2 26+21 = 47, done 24: total 166.
	tests := []struct {
		window int
		want   []string
	}{
		{100, []string{"human:q", "ai:[c]", "tool:c:3", "ai:done"}},
		{50, []string{"human:q", "ai:done"}},
		{40, []string{"human:q"}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.window), func(t *testing.T) {
			tr := New(tc.window, 0, lenEst)
			out, rep := tr.TrimReport(in, "", 0)
			if got := render(out); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Trim = %q, want %q", got, tc.want)
			}
			checkInvariants(t, tr, in, out, rep)
		})
	}
}

func TestTrimRepair(t *testing.T) {
	tests := []struct {
		name     string
		in       []llms.ChatMessage
		want     []string
		repaired int
	}{
		{"orphan result first", []llms.ChatMessage{result("c9", "x"), user("q")}, []string{"human:q"}, 1},
		{"result after plain assistant", []llms.ChatMessage{user("q"), ai("a"), result("c1", "x")}, []string{"human:q", "ai:a"}, 1},
		{"incomplete group removed whole", []llms.ChatMessage{user("q"), calls("", "c1", "c2"), result("c1", "x"), ai("done")}, []string{"human:q", "ai:done"}, 2},
		{"duplicate result", []llms.ChatMessage{user("q"), calls("", "c1"), result("c1", "x"), result("c1", "y")}, []string{"human:q", "ai:[c1]", "tool:c1:x"}, 1},
		{"unknown id", []llms.ChatMessage{user("q"), calls("", "c1"), result("c2", "x")}, []string{"human:q"}, 2},
		{"pending call at the end", []llms.ChatMessage{user("q"), calls("", "c1")}, []string{"human:q"}, 1},
		{"group split by a user message", []llms.ChatMessage{calls("", "c1"), user("q"), result("c1", "x")}, []string{"human:q"}, 2},
		{"duplicate call ids each need a result", []llms.ChatMessage{user("q"), calls("", "c1", "c1"), result("c1", "x"), result("c1", "y")}, []string{"human:q", "ai:[c1,c1]", "tool:c1:x", "tool:c1:y"}, 0},
		{"nil messages dropped", []llms.ChatMessage{nil, user("q"), (*llms.AIChatMessage)(nil), (*llms.ToolChatMessage)(nil)}, []string{"human:q"}, 3},
		{"no user: orphan still removed", []llms.ChatMessage{result("c1", "x"), ai("a")}, []string{"ai:a"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(100_000, 0, lenEst)
			out, rep := tr.TrimReport(tc.in, "", 0)
			if got := render(out); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Trim = %q, want %q", got, tc.want)
			}
			if rep.Repaired != tc.repaired {
				t.Errorf("Repaired = %d, want %d", rep.Repaired, tc.repaired)
			}
			checkInvariants(t, tr, tc.in, out, rep)
		})
	}
}

// Repair runs before the phases, so broken history does not cost budget:
// without it the orphan (10 000 tokens) would push out the older turn.
func TestTrimRepairBeforeBudget(t *testing.T) {
	in := []llms.ChatMessage{user("u1"), ai("a1"), result("zz", strings.Repeat("x", 10_000)), user("q")}
	tr := New(100, 0, lenEst) // u1 22 + a1 22 + q 21 = 65
	out := tr.Trim(in, "", 0)
	want := []string{"human:u1", "ai:a1", "human:q"}
	if got := render(out); !reflect.DeepEqual(got, want) {
		t.Fatalf("Trim = %q, want %q", got, want)
	}
}

// A budget of zero or less fits nothing: the last user message alone,
// whole and over budget; without one, the leading systems and the newest
// group (a list without a user message is trimmed too, not left as it is).
func TestTrimNonPositiveBudget(t *testing.T) {
	tests := []struct {
		name string
		in   []llms.ChatMessage
		want []string
	}{
		{"drops systems and tool context", []llms.ChatMessage{sys("facts"), user("q"), calls("", "c1"), result("c1", "r")}, []string{"human:q"}},
		{"single user unchanged", []llms.ChatMessage{user("q")}, []string{"human:q"}},
		{"no user: the newest message", []llms.ChatMessage{ai("a"), ai("b")}, []string{"ai:b"}},
		{"no user: the memory and the newest group", []llms.ChatMessage{sys("facts"), ai("a"), calls("", "c1"), result("c1", "r")}, []string{"system:facts", "ai:[c1]", "tool:c1:r"}},
		{"only systems unchanged", []llms.ChatMessage{sys("s1"), sys("s2")}, []string{"system:s1", "system:s2"}},
		{"no user: still repaired", []llms.ChatMessage{ai("a"), result("c1", "x"), calls("", "c2")}, []string{"ai:a"}},
		{"lone orphan removed", []llms.ChatMessage{result("c1", "x")}, []string{}},
		{"empty", nil, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(10, 20, lenEst)
			out, rep := tr.TrimReport(tc.in, "", 0)
			if rep.Budget > 0 || !rep.OverBudget || rep.Truncated != 0 {
				t.Fatalf("report %+v, want a budget ≤ 0, over, nothing cut", rep)
			}
			if got := render(out); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Trim = %q, want %q", got, tc.want)
			}
			checkInvariants(t, tr, tc.in, out, rep)
		})
	}
}

// Reference: 180 non-positive-budget cases (window 20, reserve 40).
func TestTrimNonPositiveBudgetMatrix(t *testing.T) {
	for i := range 180 {
		in := []llms.ChatMessage{ai(fmt.Sprint("a", i)), user(fmt.Sprint("u", i)), ai(fmt.Sprint("b", i)), user(fmt.Sprint("last-", i))}
		switch i % 6 {
		case 0, 3:
			in = []llms.ChatMessage{ai(fmt.Sprint("only-a", i)), ai(fmt.Sprint("only-b", i))}
		case 1:
			in = append([]llms.ChatMessage{sys("facts"), sys("narrative")}, in...)
		case 2:
			in = append(in, calls("", "c1", "c2"), result("c2", "x"), result("c1", "y"))
		case 4:
			in = append(in[:1:1], calls("", "c1"), result("c1", "r"), user(fmt.Sprint("last-", i)))
		}
		tr := New(20, 40, lenEst)
		out, rep := tr.TrimReport(in, fmt.Sprint("sys-", i), 0)
		if lu := lastUserIndex(in); lu >= 0 {
			if len(out) != 1 || !reflect.DeepEqual(out[0], in[lu]) {
				t.Fatalf("case %d: Trim = %q, want only %q", i, render(out), render1(in[lu]))
			}
		} else if !reflect.DeepEqual(out, in[len(in)-1:]) {
			t.Fatalf("case %d: no-user list kept %q, want the newest message", i, render(out))
		}
		checkInvariants(t, tr, in, out, rep)
	}
}

// Reference: high budget keeps the history unchanged (30 size combinations),
// here with systems and tool groups as well.
func TestTrimHighBudgetUnchanged(t *testing.T) {
	checked := 0
	for users := 1; users <= 5; users++ {
		for assistants := 1; assistants <= 6; assistants++ {
			var in []llms.ChatMessage
			if users%2 == 0 {
				in = append(in, sys("facts"))
			}
			for i := range users {
				in = append(in, user(fmt.Sprint("user-", i)))
			}
			for i := range assistants {
				id := fmt.Sprint("c", i)
				in = append(in, calls("", id), result(id, "r"), ai(fmt.Sprint("assistant-", i)))
			}
			tr := New(New(0, 0, lenEst).Cost(in)+100, 0, lenEst)
			out, rep := tr.TrimReport(in, "", 0)
			if !reflect.DeepEqual(out, in) || rep.Removed != 0 || rep.OverBudget {
				t.Fatalf("users=%d assistants=%d: changed to %q (%+v)", users, assistants, render(out), rep)
			}
			checked++
		}
	}
	if checked != 30 {
		t.Fatalf("checked %d combinations", checked)
	}
}

// Reference: a tool result never becomes an orphan, across 120 budgets
// (window 35–54, 1–4 pairs), extended to assert every invariant.
func TestTrimToolPairBudgetMatrix(t *testing.T) {
	for i := range 120 {
		pairs := 1 + i%4
		in := []llms.ChatMessage{user(fmt.Sprint("question-", i))}
		for p := range pairs {
			id := fmt.Sprintf("call-%d", p)
			in = append(in, calls(fmt.Sprintf("think-%d-%d", i, p), id), result(id, fmt.Sprint("res-", p)))
		}
		in = append(in, ai(fmt.Sprint("final-", i)))
		tr := New(35+i%20, 0, lenEst)
		out, rep := tr.TrimReport(in, "", 0)
		checkInvariants(t, tr, in, out, rep)
	}
}

// A wide matrix of valid histories and budgets, asserting the whole
// contract (checkInvariants: the invariants and the order in which the
// phases give things up) at every seventh budget.
func TestTrimCombinationMatrix(t *testing.T) {
	cases := 0
	for systems := range 3 {
		for before := range 4 {
			for after := range 4 {
				for width := 1; width <= 3; width++ {
					for _, trailing := range []bool{false, true} {
						in := history(systems, before, after, width, trailing)
						total := New(0, 0, lenEst).Cost(in)
						for w := -20; w <= total+40; w += 7 {
							tr := New(w, 0, lenEst)
							out, rep := tr.TrimReport(in, "", 0)
							checkInvariants(t, tr, in, out, rep)
							if w >= total && !reflect.DeepEqual(out, in) {
								t.Fatalf("budget %d ≥ cost %d but list changed: %q", w, total, render(out))
							}
							cases++
						}
					}
				}
			}
		}
	}
	t.Logf("%d cases", cases)
}

// history builds a valid list: leading systems, `before` old turns (each a
// user message and a tool group of `width` results), the current question,
// `after` tool groups and optionally a final answer.
func history(systems, before, after, width int, trailing bool) []llms.ChatMessage {
	var in []llms.ChatMessage
	n := 0
	group := func() {
		ids := make([]string, width)
		for k := range ids {
			ids[k] = fmt.Sprintf("c%d-%d", n, k)
		}
		in = append(in, calls(fmt.Sprint("think", n), ids...))
		for k := len(ids) - 1; k >= 0; k-- {
			in = append(in, result(ids[k], fmt.Sprintf("result %d/%d", n, k)))
		}
		n++
	}
	for s := range systems {
		in = append(in, sys(fmt.Sprint("memory ", s)))
	}
	for b := range before {
		in = append(in, user(fmt.Sprint("old question ", b)))
		group()
		in = append(in, ai(fmt.Sprint("old answer ", b)))
	}
	in = append(in, user("current question"))
	for range after {
		group()
	}
	if trailing {
		in = append(in, ai("final answer"))
	}
	return in
}

// Without a user message the newest group is the anchor: older groups go
// first, and the leading systems stay beside it as long as they can be cut
// to fit (keeping the oldest message instead would drop the newest).
func TestTrimWithoutUserKeepsNewestGroup(t *testing.T) {
	tests := []struct {
		name   string
		window int
		in     []llms.ChatMessage
		want   []string
	}{
		// facts 25, a3 22.
		{"plain answers", 50, []llms.ChatMessage{sys("facts"), ai("a1"), ai("a2"), ai("a3")}, []string{"system:facts", "ai:a3"}},
		// 40 holds the overhead of both, no marker: the facts give way.
		{"the memory gives way to the newest message", 40, []llms.ChatMessage{sys("facts"), ai("a1"), ai("a2"), ai("a3")}, []string{"ai:a3"}},
		{"tool group last", 50, []llms.ChatMessage{ai("a1"), calls("", "c1"), result("c1", "r")}, []string{"ai:[c1]", "tool:c1:r"}},
		// A system message after a non-system one is the newest group, the
		// anchor: the leading systems (32 each) give way to it, oldest
		// first, when all four (128) cannot be cut to fit 107.
		{"a misplaced system message as the anchor", 107,
			[]llms.ChatMessage{sys("memory one.."), sys("memory two.."), sys("memory 3...."), ai("a"), sys("late system.")},
			[]string{"system:memory two..", "system:memory 3....", "system:late system."}},
		// s1 and s2 cost 22 each and have nothing to give way to: whole
		// when they fit, whole over budget when not even a cut fits (40
		// holds their overhead, no marker).
		{"only systems", 44, []llms.ChatMessage{sys("s1"), sys("s2")}, []string{"system:s1", "system:s2"}},
		{"only systems over budget", 40, []llms.ChatMessage{sys("s1"), sys("s2")}, []string{"system:s1", "system:s2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(tc.window, 0, lenEst)
			out, rep := tr.TrimReport(tc.in, "", 0)
			if got := render(out); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Trim = %q, want %q", got, tc.want)
			}
			checkInvariants(t, tr, tc.in, out, rep)
		})
	}
}

func TestTrimPointerAndGenericMessages(t *testing.T) {
	in := []llms.ChatMessage{
		&llms.SystemChatMessage{Content: "facts"},
		&llms.HumanChatMessage{Content: "old"},
		&llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: "c1", FunctionCall: &llms.FunctionCall{Name: "tool", Arguments: "{}"}}}},
		&llms.ToolChatMessage{ID: "c1", Content: "r"},
		llms.GenericChatMessage{Role: "user", Content: "q"},
		llms.FunctionChatMessage{Name: "legacy", Content: "f"},
	}
	if err := Validate(in); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	// facts 25, old 23, calls 26, result 21, q 21, function 21: total 137.
	tests := []struct {
		window int
		want   []string
	}{
		{70, []string{"*system:facts", "generic:q", "function:f"}},
		{50, []string{"generic:q", "function:f"}},
	}
	for _, tc := range tests {
		tr := New(tc.window, 0, lenEst)
		out, rep := tr.TrimReport(in, "", 0)
		if got := render(out); !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("window %d: Trim = %q, want %q", tc.window, got, tc.want)
		}
		checkInvariants(t, tr, in, out, rep)
	}
}

func TestTrimDoesNotMutateInput(t *testing.T) {
	build := func() []llms.ChatMessage {
		return []llms.ChatMessage{
			sys("facts"), result("zz", "orphan"), user("old"),
			&llms.AIChatMessage{Content: "x", ToolCalls: []llms.ToolCall{{ID: "c1", FunctionCall: &llms.FunctionCall{Name: "t", Arguments: "{}"}}}},
			&llms.ToolChatMessage{ID: "c1", Content: "r"},
			user("q"), ai("a"),
		}
	}
	in, snapshot := build(), build()
	tr := New(60, 0, lenEst)
	out := tr.Trim(in, "", 0)
	if !reflect.DeepEqual(in, snapshot) {
		t.Fatalf("input changed: %q", render(in))
	}
	if len(out) > 0 {
		out[0] = nil
		if in[0] == nil {
			t.Fatal("result shares the input's backing array")
		}
	}
	high := New(100_000, 0, lenEst)
	valid := []llms.ChatMessage{user("q"), ai("a")}
	same := high.Trim(valid, "", 0)
	same[0] = nil
	if valid[0] == nil {
		t.Fatal("unchanged result shares the input's backing array")
	}
}

func TestBudgetAndCost(t *testing.T) {
	tr := New(1000, 100, lenEst)
	if got, want := tr.Budget("system prompt", 2*ToolDefinitionTokens), 1000-13-100-400; got != want {
		t.Errorf("Budget = %d, want %d", got, want)
	}
	if got := tr.Budget("", -50); got != 900 {
		t.Errorf("Budget with negative reserve = %d, want 900", got)
	}
	msgs := []llms.ChatMessage{
		user("hello"),                         // 5 + 20
		calls("ab", "c1", "c2"),               // 2 + 6 + 6 + 20
		result("c1", "xyz"), result("c2", ""), // 3 + 20, 0 + 20
		nil, // 0 + 20
		llms.AIChatMessage{FunctionCall: &llms.FunctionCall{Name: "f", Arguments: "12"}}, // 3 + 20
	}
	if got, want := tr.Cost(msgs), 25+34+23+20+20+23; got != want {
		t.Errorf("Cost = %d, want %d", got, want)
	}
	if got := tr.Cost(nil); got != 0 {
		t.Errorf("Cost(nil) = %d", got)
	}
	// The tool reserve shrinks the budget and so changes the result.
	in := []llms.ChatMessage{user("old"), ai("answer"), user("q")}
	tr = New(300, 0, lenEst)
	if got := len(tr.Trim(in, "", 0)); got != 3 {
		t.Errorf("without tools kept %d, want 3", got)
	}
	if got := len(tr.Trim(in, "", ToolDefinitionTokens+60)); got != 1 {
		t.Errorf("with a tool reserve kept %d, want 1", got)
	}
}

// Reference: per-message costs are reused across repeated trims, so each
// text reaches the estimator once.
func TestTrimReusesEstimates(t *testing.T) {
	var mu sync.Mutex
	callsByText := map[string]int{}
	counting := EstimatorFunc(func(s string) int {
		mu.Lock()
		callsByText[s]++
		mu.Unlock()
		return len(s)
	})
	tr := New(200, 0, counting)
	msgs := []llms.ChatMessage{user("user-1"), ai("assistant-1"), user("user-2")}
	for range 5 {
		tr.Trim(msgs, "sys", 0)
		msgs = append(msgs, ai(fmt.Sprint("more-", len(msgs))))
	}
	for _, s := range []string{"user-1", "assistant-1", "user-2", "sys", "more-3"} {
		if callsByText[s] != 1 {
			t.Errorf("%q estimated %d times, want 1", s, callsByText[s])
		}
	}
}

func TestNewNilEstimatorUsesDefault(t *testing.T) {
	tr := New(1000, 0, nil)
	if got, want := tr.Cost([]llms.ChatMessage{user("abcdefgh")}), 2+MessageOverheadTokens; got != want {
		t.Fatalf("Cost = %d, want %d", got, want)
	}
	if tr.Estimator().Estimate("abcdefgh") != 2 {
		t.Fatal("Estimator() is not the script estimator")
	}
}

func TestTrimConcurrent(t *testing.T) {
	tr := New(400, 0, nil)
	in := history(2, 3, 2, 2, true)
	want := tr.Trim(in, "prompt", 0)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if got := tr.Trim(in, "prompt", 0); !reflect.DeepEqual(got, want) {
					t.Error("concurrent trims disagree")
					return
				}
			}
		})
	}
	wg.Wait()
}
