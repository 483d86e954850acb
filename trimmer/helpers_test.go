package trimmer

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/chatmsg"
)

// lenEst counts one token per byte, like arc-reactor's tests' text.length.
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

func roles(msgs []llms.ChatMessage) []role {
	rs := make([]role, len(msgs))
	for i, m := range msgs {
		rs[i] = classify(m).role
	}
	return rs
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

func describeAll(msgs []llms.ChatMessage) []item {
	items := make([]item, len(msgs))
	for i, m := range msgs {
		items[i] = describe(m, nil)
	}
	return items
}

// shape is a repaired list as the phases see it: its leading system
// messages, its anchor (the last user message, or else the newest group
// after the leading systems) and its groups.
type shape struct {
	msgs       []llms.ChatMessage
	lead       int
	user       int    // the last user message, -1 without one
	anchor     [2]int // [start, end) of the anchor, empty at the end without one
	groupStart []int  // the start of each group after lead, then len(msgs)
}

// shapeOf repairs msgs (TestTrimRepair pins repair) and splits the result.
func shapeOf(msgs []llms.ChatMessage) shape {
	items := repair(describeAll(msgs))
	s := shape{msgs: make([]llms.ChatMessage, len(items)), lead: leadingSystems(items), user: -1}
	for i, it := range items {
		s.msgs[i] = it.msg
		if it.role == roleUser {
			s.user = i
		}
	}
	for i := s.lead; i < len(items); i = scanGroup(items, i).end {
		s.groupStart = append(s.groupStart, i)
	}
	s.groupStart = append(s.groupStart, len(items))
	s.anchor = [2]int{len(items), len(items)}
	switch {
	case s.user >= 0:
		s.anchor = [2]int{s.user, s.user + 1}
	case len(s.groupStart) > 1:
		s.anchor[0] = s.groupStart[len(s.groupStart)-2]
	}
	return s
}

// fresh reports whether messages follow the last user message.
func (s shape) fresh() bool { return s.user >= 0 && s.user+1 < len(s.msgs) }

// groupsIn returns the groups of s that lie in [from, to), oldest first.
func (s shape) groupsIn(from, to int) [][2]int {
	var gs [][2]int
	for k := 0; k+1 < len(s.groupStart); k++ {
		if g := [2]int{s.groupStart[k], s.groupStart[k+1]}; g[0] >= from && g[1] <= to {
			gs = append(gs, g)
		}
	}
	return gs
}

// isCutOf reports whether m is want with its text cut: the same message in
// value form but for a text that is a prefix of want's, cut between
// characters, followed by TruncationMarker.
func isCutOf(m, want llms.ChatMessage) bool {
	bare, ok := withContent(want, "")
	if !ok {
		return false
	}
	text := describe(want, nil).text()
	body, marked := strings.CutSuffix(describe(m, nil).text(), TruncationMarker)
	return marked && strings.HasPrefix(text, body) && (utf8.ValidString(body) || !utf8.ValidString(text)) &&
		reflect.DeepEqual(withText(m, ""), bare)
}

// withText is withContent for messages known to be cuttable.
func withText(m llms.ChatMessage, text string) llms.ChatMessage {
	out, _ := withContent(m, text)
	return out
}

// canCut reports whether msgs can be cut to cost at most budget: each
// message needs its overhead and tool calls, and either its whole text or
// room for the marker, whichever is less (a text that cannot be cut
// counts whole). It restates cut's feasibility independently of it.
func canCut(tr *Trimmer, msgs []llms.ChatMessage, budget int) bool {
	marker := tr.est.Estimate(TruncationMarker)
	need := 0
	for _, m := range msgs {
		bare, ok := withContent(m, "")
		need += tr.Cost([]llms.ChatMessage{bare})
		if ok {
			need += min(tr.est.Estimate(describe(m, nil).text()), marker)
		}
	}
	return need <= budget
}

// match maps each output message to the message of the repaired input s
// it is, or is a cut of, by a greedy subsequence walk from the end; ok is
// false when out is no such subsequence. Test inputs have unique contents,
// but a cut text can be a prefix of several, so a cut is matched only where
// one may be: a leading system message or the anchor. The leading systems
// kept are the newest ones, hence the walk from the end.
func match(s shape, out []llms.ChatMessage) (idx []int, cut []bool, ok bool) {
	idx, cut = make([]int, len(out)), make([]bool, len(out))
	cuttable := func(j int) bool { return j < s.lead || (j >= s.anchor[0] && j < s.anchor[1]) }
	j := len(s.msgs) - 1
	for k := len(out) - 1; k >= 0; k-- {
		m := out[k]
		for j >= 0 && !reflect.DeepEqual(s.msgs[j], m) && !(cuttable(j) && isCutOf(m, s.msgs[j])) {
			j--
		}
		if j < 0 {
			return nil, nil, false
		}
		idx[k], cut[k] = j, !reflect.DeepEqual(s.msgs[j], m)
		j--
	}
	return idx, cut, true
}

// checkInvariants asserts the whole contract of TrimReport for any input,
// against the repaired input r:
//   - the result is a subsequence of r, each message kept or cut (roles,
//     tool calls and ids kept), groups whole; the last user message is in
//     it (possibly cut) and is its last user message;
//   - phase order: each of the regions (leading systems, old history
//     before the anchor, the turn after the last user message) loses its
//     oldest groups first; phase 1.5 and phase 2 run only once the old
//     history is gone, and phase 2 only once the leading systems are (when
//     messages follow the last user message); a phase stops as soon as the
//     list fits;
//   - a leading system message is dropped only for fresh tool context that
//     does not fit beside it, or because it cannot be cut to fit beside the
//     anchor, or when nothing fits;
//   - cuts happen only to what every phase left, only when it does not fit
//     whole;
//   - the result fits the budget, or nothing could: the anchor cannot even
//     be cut to fit, and the result is then the last user message alone,
//     whole, or without a user message the leading systems and the newest
//     group, whole;
//   - no tool violation remains, and the report adds up.
func checkInvariants(t testing.TB, tr *Trimmer, in, out []llms.ChatMessage, rep Report) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+" (report %+v)\n in: %q\nout: %q", append(args, rep, render(in), render(out))...)
	}
	s := shapeOf(in)
	B := rep.Budget
	idx, cutAt, ok := match(s, out)
	if !ok {
		fail("the result is not a subsequence of the repaired input, kept, or cut where a cut may be")
	}
	kept := make([]bool, len(s.msgs))
	cuts := 0
	for k, i := range idx {
		kept[i] = true
		if cutAt[k] {
			cuts++
		}
	}
	if cuts != rep.Truncated {
		fail("%d messages cut, Report.Truncated says %d", cuts, rep.Truncated)
	}
	if tr.Cost(s.msgs) <= B && (cuts > 0 || len(out) != len(s.msgs)) {
		fail("the repaired input fits, yet it was changed")
	}
	for _, g := range s.groupsIn(0, len(s.msgs)) {
		for i := g[0] + 1; i < g[1]; i++ {
			if kept[i] != kept[g[0]] {
				fail("group %v split", g)
			}
		}
	}
	if s.user >= 0 {
		k := lastUserIndex(out)
		if k < 0 || idx[k] != s.user {
			fail("the last user message %d is not the result's last user message", s.user)
		}
	}

	// Phase order, region by region.
	a, ae := s.anchor[0], s.anchor[1]
	anyDropped := func(from, to int) bool { return slices.Contains(kept[from:to], false) }
	old, after := s.groupsIn(s.lead, a), s.groupsIn(ae, len(s.msgs))
	for _, region := range [][][2]int{old, after} {
		for k := 0; k+1 < len(region); k++ {
			if kept[region[k][0]] && !kept[region[k+1][0]] {
				fail("group %v kept, but the newer %v dropped", region[k], region[k+1])
			}
		}
	}
	for i := 0; i+1 < s.lead; i++ {
		if kept[i] && !kept[i+1] {
			fail("leading system %d kept, but the newer %d dropped", i, i+1)
		}
	}
	sysDropped := 0
	for sysDropped < s.lead && !kept[sysDropped] {
		sysDropped++
	}
	laterPhases := sysDropped > 0 || anyDropped(ae, len(s.msgs)) || cuts > 0
	if laterPhases && len(old) > 0 && kept[old[len(old)-1][0]] {
		fail("later phases ran while old history was left")
	}
	if anyDropped(ae, len(s.msgs)) && sysDropped < s.lead {
		fail("phase 2 ran while leading systems were left")
	}
	// A phase stops as soon as the list fits: the newest group it dropped
	// was needed. Phase 1 is checked when no later step ran, phase 2 when
	// nothing was cut and the result fits.
	needless := func(region [][2]int) bool {
		var newest [2]int
		for _, g := range region {
			if !kept[g[0]] {
				newest = g
			}
		}
		return newest[1] > 0 && tr.Cost(out)+tr.Cost(s.msgs[newest[0]:newest[1]]) <= B
	}
	if !laterPhases && !rep.OverBudget && needless(old) {
		fail("phase 1 dropped a group the list fits with")
	}
	if cuts == 0 && !rep.OverBudget && needless(after) {
		fail("phase 2 dropped a group the list fits with")
	}

	// Leading systems.
	if k := sysDropped; k > 0 && !rep.OverBudget {
		withIt := append(slices.Clone(s.msgs[k-1:s.lead]), s.msgs[a:ae]...)
		switch {
		case s.fresh():
			if tr.Cost(s.msgs[k-1:s.lead])+tr.Cost(s.msgs[s.user:]) <= B {
				fail("leading system %d dropped for tool context, though it fits beside it", k-1)
			}
		case canCut(tr, withIt, B):
			fail("leading system %d dropped, though it can be cut to fit beside the anchor", k-1)
		}
	}

	// Cuts only to what the phases left, when it does not fit whole.
	if cuts > 0 {
		if slices.Contains(kept[s.lead:a], true) || slices.Contains(kept[ae:], true) {
			fail("cut while the phases had more to drop")
		}
		var whole []llms.ChatMessage
		for _, i := range idx {
			whole = append(whole, s.msgs[i])
		}
		if tr.Cost(whole) <= B {
			fail("cut, though the kept messages fit whole")
		}
	}

	// The budget.
	if rep.OverBudget {
		anchor := s.msgs[a:ae]
		if len(anchor) == 0 {
			anchor = s.msgs[:s.lead]
		}
		want := append(slices.Clone(s.msgs[:s.lead]), s.msgs[a:ae]...)
		if s.user >= 0 {
			want = s.msgs[s.user : s.user+1]
		}
		if !reflect.DeepEqual(out, want) {
			fail("over budget, but not %q", render(want))
		}
		if canCut(tr, anchor, B) {
			fail("over budget, though the anchor can be cut to fit")
		}
	}

	err := Validate(out)
	if !hasMisplacedSystem(in) && err != nil {
		fail("Validate(result) = %v", err)
	}
	if err := Validate(withoutSystems(out)); err != nil {
		fail("tool violation in result: %v", err)
	}
	switch {
	case rep.Removed != len(in)-len(out):
		fail("Report.Removed = %d, want %d", rep.Removed, len(in)-len(out))
	case rep.Repaired != len(in)-len(s.msgs):
		fail("Report.Repaired = %d, want %d", rep.Repaired, len(in)-len(s.msgs))
	case rep.SystemRemoved != countRoleIn(in, roleSystem)-countRoleIn(out, roleSystem):
		fail("Report.SystemRemoved = %d", rep.SystemRemoved)
	case rep.TokensAfter != tr.Cost(out):
		fail("Report.TokensAfter = %d, want %d", rep.TokensAfter, tr.Cost(out))
	case rep.TokensBefore != tr.Cost(in):
		fail("Report.TokensBefore = %d, want %d", rep.TokensBefore, tr.Cost(in))
	case rep.OverBudget != (rep.TokensAfter > B):
		fail("Report.OverBudget = %v with %d tokens for budget %d", rep.OverBudget, rep.TokensAfter, B)
	}
}

func countRoleIn(msgs []llms.ChatMessage, r role) int {
	return countRole(describeAll(msgs), r)
}

func lastUserIndex(msgs []llms.ChatMessage) int {
	return lastUser(describeAll(msgs))
}
