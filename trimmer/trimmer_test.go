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
// result("c1","res") 23, ai "final" 25.
func TestTrimReferenceCases(t *testing.T) {
	tests := []struct {
		name     string
		window   int
		output   int
		system   string
		in       []llms.ChatMessage
		want     []string
		tokens   int // TokensAfter, checked when > 0
		overBudg bool
	}{
		{
			name:   "tool pair removed together from the front",
			window: 10,
			in:     []llms.ChatMessage{calls("a", "c1"), result("c1", "res"), user("last")},
			want:   []string{"human:last"},
			tokens: 24, overBudg: true,
		},
		{
			name:   "non-positive budget keeps only the last user message",
			window: 5, output: 10, system: "sys",
			in:       []llms.ChatMessage{user("old"), ai("answer"), user("last")},
			want:     []string{"human:last"},
			overBudg: true,
		},
		{
			name:   "leading system messages protected in phase 1, result may exceed budget",
			window: 80, system: "sys", // budget 77
			in: []llms.ChatMessage{
				sys("Conversation Facts:\n- order: #1234"),
				sys("Conversation Summary:\nCustomer asked about order"),
				user("old message"), ai("old reply"), user("recent question"),
			},
			want: []string{
				"system:Conversation Facts:\n- order: #1234",
				"system:Conversation Summary:\nCustomer asked about order",
				"human:recent question",
			},
			tokens: 157, overBudg: true,
		},
		{
			name:   "extremely tight positive budget keeps systems and last user",
			window: 1,
			in: []llms.ChatMessage{
				sys("Facts: order=#1234"), sys("Summary: customer wants refund"),
				user("old q1"), ai("old a1"), user("old q2"), ai("old a2"), user("old q3"), ai("old a3"),
				user("recent question"),
			},
			want:     []string{"system:Facts: order=#1234", "system:Summary: customer wants refund", "human:recent question"},
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
			name:   "single oversized message is kept over budget",
			window: 100,
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
			if rep.OverBudget != tc.overBudg {
				t.Errorf("OverBudget = %v, want %v (report %+v)", rep.OverBudget, tc.overBudg, rep)
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

func TestTrimNonPositiveBudget(t *testing.T) {
	tests := []struct {
		name string
		in   []llms.ChatMessage
		want []string
	}{
		{"drops systems and tool context", []llms.ChatMessage{sys("facts"), user("q"), calls("", "c1"), result("c1", "r")}, []string{"human:q"}},
		{"single user unchanged", []llms.ChatMessage{user("q")}, []string{"human:q"}},
		{"no user: unchanged", []llms.ChatMessage{ai("a"), ai("b")}, []string{"ai:a", "ai:b"}},
		{"no user: still repaired", []llms.ChatMessage{ai("a"), result("c1", "x"), calls("", "c2")}, []string{"ai:a"}},
		{"lone orphan removed", []llms.ChatMessage{result("c1", "x")}, []string{}},
		{"empty", nil, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(10, 20, lenEst)
			out, rep := tr.TrimReport(tc.in, "", 0)
			if rep.Budget > 0 {
				t.Fatalf("budget %d, want ≤ 0", rep.Budget)
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
		} else if !reflect.DeepEqual(out, in) {
			t.Fatalf("case %d: no-user list changed: %q", i, render(out))
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
		checkPhaseOrder(t, in, out, rep)
	}
}

// A wide matrix of valid histories and budgets, asserting the invariants and
// the order in which the phases give things up.
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
							checkPhaseOrder(t, in, out, rep)
							checkGroupsWhole(t, in, out)
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

// checkPhaseOrder asserts, for a valid input with a user message and a
// positive budget, that each region loses its oldest messages first and that
// a later phase only ran after the earlier ones had nothing left.
func checkPhaseOrder(t testing.TB, in, out []llms.ChatMessage, rep Report) {
	t.Helper()
	lu := lastUserIndex(in)
	if rep.Budget <= 0 || lu < 0 || Validate(in) != nil {
		return
	}
	idx, _ := subsequenceIndex(in, out)
	kept := make([]bool, len(in))
	for _, i := range idx {
		kept[i] = true
	}
	lead := leadingSystems(describeAll(in))
	regions := [][2]int{{0, lead}, {lead, lu}, {lu + 1, len(in)}}
	for _, r := range regions {
		for i := r[0]; i+1 < r[1]; i++ {
			if kept[i] && !kept[i+1] {
				t.Fatalf("region %v kept %d but dropped newer %d: %q", r, i, i+1, render(out))
			}
		}
	}
	droppedSystem := lead > 0 && !kept[0]
	droppedAfter := lu+1 < len(in) && !kept[lu+1]
	keptBefore := lead < lu && kept[lu-1]
	if droppedSystem && keptBefore {
		t.Fatalf("phase 1.5 ran before phase 1 finished: %q", render(out))
	}
	if droppedAfter && (keptBefore || (lead > 0 && kept[lead-1])) {
		t.Fatalf("phase 2 ran before phases 1 and 1.5 finished: %q", render(out))
	}
	if rep.OverBudget {
		// Nothing removable may remain: only systems (when nothing followed
		// the question) and the question itself.
		for k, i := range idx {
			if i != lu && (i >= lead || lu+1 < len(in)) {
				t.Fatalf("over budget but message %d (%q) was removable: %q", i, render1(out[k]), render(out))
			}
		}
	}
}

func describeAll(msgs []llms.ChatMessage) []item {
	items := make([]item, len(msgs))
	for i, m := range msgs {
		items[i] = describe(m, nil)
	}
	return items
}

// checkGroupsWhole asserts that every tool group of a valid input is either
// fully kept or fully dropped.
func checkGroupsWhole(t testing.TB, in, out []llms.ChatMessage) {
	t.Helper()
	idx, _ := subsequenceIndex(in, out)
	kept := make([]bool, len(in))
	for _, i := range idx {
		kept[i] = true
	}
	items := describeAll(in)
	for i := 0; i < len(items); {
		end := scanGroup(items, i).end
		for j := i + 1; j < end; j++ {
			if kept[j] != kept[i] {
				t.Fatalf("group %d..%d split: %q", i, end-1, render(out))
			}
		}
		i = end
	}
}

// Without a user message the newest group is the anchor and leading systems
// stay (the reference kept the oldest message instead).
func TestTrimWithoutUserKeepsNewestGroup(t *testing.T) {
	tests := []struct {
		name string
		in   []llms.ChatMessage
		want []string
	}{
		{"plain answers", []llms.ChatMessage{sys("facts"), ai("a1"), ai("a2"), ai("a3")}, []string{"system:facts", "ai:a3"}},
		{"tool group last", []llms.ChatMessage{ai("a1"), calls("", "c1"), result("c1", "r")}, []string{"ai:[c1]", "tool:c1:r"}},
		{"only systems", []llms.ChatMessage{sys("s1"), sys("s2")}, []string{"system:s1", "system:s2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(30, 0, lenEst)
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
