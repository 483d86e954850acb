package runner

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/bench/internal/data"
	"github.com/strata-go/strata/summary"
)

func factIndex(t *testing.T, kind string) int {
	t.Helper()
	i := slices.IndexFunc(plantedFacts, func(f plantedFact) bool { return f.kind == kind })
	if i < 0 {
		t.Fatalf("no planted fact %q", kind)
	}
	return i
}

func TestSpellingIn(t *testing.T) {
	phone := plantedFacts[factIndex(t, "phone number")].latest
	amount := plantedFacts[factIndex(t, "amount with currency")].latest
	name := plantedFacts[factIndex(t, "name")].latest
	pref := plantedFacts[factIndex(t, "preference in words")].latest
	for _, c := range []struct {
		s    spelling
		text string
		want bool
	}{
		{phone, "- phone: (628) 555-0142", true},
		{phone, "call +1 628 555 0142 today", true},
		{phone, "6285550142", true},
		{phone, "call 628-555-0199", false},
		{phone, "(415) 555-0199", false},
		{phone, "628 555 then 0142", false},
		{amount, "- amount: €1,249.50", true},
		{amount, "- amount: EUR 1249.50", true},
		{amount, "- amount: 1,249.50", false}, // the currency is required
		{amount, "€11,249.50", false},
		{name, "- user_name: ingrid vasquez-thorne", true},
		{name, "- user_name: Ingrid", false},
		{pref, "- preference: No calls after 6pm", true},
		{pref, "- preference: no  calls\nafter 6pm", true},
		{pref, "- time: 6pm", false},
	} {
		if got := c.s.in(c.text); got != c.want {
			t.Errorf("%v in %q = %v, want %v", c.s, c.text, got, c.want)
		}
	}
}

func TestScorePrompt(t *testing.T) {
	phone, addr := factIndex(t, "phone number"), factIndex(t, "street address")
	order, sku := factIndex(t, "order id"), factIndex(t, "product SKU")
	prompt := []llms.ChatMessage{
		llms.SystemChatMessage{Content: summary.FactsHeader + "\n- order_id: ORD-784512\n- phone: (415) 555-0199\n- phone_2: (628) 555-0142\n- delivery_address: 1187 Wexford Avenue (previously 42 Larkspur Lane)"},
		llms.SystemChatMessage{Content: summary.NarrativeHeader + "\nUser asked about a desk."},
		llms.HumanChatMessage{Content: "The SKU was KX-4471-BLU."},
		llms.AIChatMessage{Content: "Noted."},
	}
	s := scorePrompt(prompt, plantedFacts)
	if !s.shown[order] || !s.shown[sku] || !s.shown[phone] || !s.shown[addr] {
		t.Errorf("shown = %v: the order id, SKU, new phone and new address are in the prompt", s.shown)
	}
	if s.nShown() != 4 {
		t.Errorf("nShown = %d, want 4", s.nShown())
	}
	if !s.superseded[phone] {
		t.Error("the old phone on a fact line of its own is shown as current")
	}
	if s.superseded[addr] {
		t.Error("the old address on the new address's line is history, not current")
	}
	if s.nSuperseded() != 1 {
		t.Errorf("nSuperseded = %d, want 1", s.nSuperseded())
	}
	if !strings.HasPrefix(s.factsBlock, summary.FactsHeader) {
		t.Errorf("facts block = %q", s.factsBlock)
	}

	// An old value in a verbatim message is the conversation's history, not
	// a fact shown as current; without a facts block nothing is superseded.
	s = scorePrompt([]llms.ChatMessage{llms.HumanChatMessage{Content: "call me at (415) 555-0199"}}, plantedFacts)
	if s.nSuperseded() != 0 || s.nShown() != 0 || s.factsBlock != "" {
		t.Errorf("verbatim old phone: %+v", s)
	}
}

func TestProbeConversation(t *testing.T) {
	filler := []data.Turn{{User: "filler A"}, {User: "filler B"}}
	c := probeConversation("x", filler, 30)
	if len(c.Turns) != 30 {
		t.Fatalf("%d turns, want 30", len(c.Turns))
	}
	for _, p := range plantedTurns {
		if c.Turns[p.at].User != p.user {
			t.Errorf("turn %d = %q, want the planted turn", p.at, c.Turns[p.at].User)
		}
	}
	if c.Turns[5].User != "filler A" || c.Turns[6].User != "filler B" || c.Turns[7].User != "filler A" {
		t.Errorf("filler turns 5–7 = %q %q %q", c.Turns[5].User, c.Turns[6].User, c.Turns[7].User)
	}
	// Every latest and old value is said by the user, once, in the planted
	// turns; the assistant repeats none, and the probe question holds none.
	var users strings.Builder
	for _, p := range plantedTurns {
		users.WriteString(p.user + "\n")
		for _, f := range plantedFacts {
			if f.latest.in(p.reply) || (f.old != nil && f.old.in(p.reply)) {
				t.Errorf("the assistant's reply %q repeats the %s", p.reply, f.kind)
			}
		}
		if p.at >= 5 && p.at != 9 && p.at != 19 {
			t.Errorf("planted turn at %d: facts are said in turns 1–5, updates at 10 and 20", p.at+1)
		}
	}
	for _, f := range plantedFacts {
		if !f.latest.in(users.String()) {
			t.Errorf("the user never says the latest %s", f.kind)
		}
		if f.old != nil && !f.old.in(users.String()) {
			t.Errorf("the user never says the old %s", f.kind)
		}
		if f.latest.in(probeQuestion) {
			t.Errorf("the probe question holds the %s", f.kind)
		}
	}
	// The first-five-turn statement of an updated fact holds its old value
	// only: the probe scores the update, not the first statement.
	for _, f := range plantedFacts {
		if f.old == nil {
			continue
		}
		for _, p := range plantedTurns[:5] {
			if f.latest.in(p.user) {
				t.Errorf("turn %d already holds the new %s", p.at+1, f.kind)
			}
		}
	}
}

func TestFillerStreamWraps(t *testing.T) {
	convs := []data.Conversation{{Turns: []data.Turn{{User: "a"}, {User: "b"}}}, {Turns: []data.Turn{{User: "c"}}}}
	got := fillerStream(convs, 1, 5)
	var users []string
	for _, t := range got {
		users = append(users, t.User)
	}
	if want := []string{"c", "a", "b", "c", "a"}; !slices.Equal(users, want) {
		t.Errorf("fillerStream = %v, want %v", users, want)
	}
	if fillerStream(nil, 0, 3) != nil {
		t.Error("no conversations: want no filler")
	}
}

// qaConv builds a LoCoMo-like conversation of n turns (user + assistant)
// whose message i reads "message i" unless overridden in texts.
func qaConv(n int, texts map[int]string) data.Conversation {
	msg := func(i int) string {
		if s, ok := texts[i]; ok {
			return s
		}
		return fmt.Sprintf("message %d about nothing", i)
	}
	c := data.Conversation{ID: "qa"}
	for t := range n {
		c.Turns = append(c.Turns, data.Turn{User: msg(2 * t), Replies: []llms.ChatMessage{llms.AIChatMessage{Content: msg(2*t + 1)}}})
	}
	return c
}

func TestQAProbes(t *testing.T) {
	texts := map[int]string{
		6:  "Yesterday I met Ravindra at the Lisbon harbour.", // a decoy source
		8:  "I finally visited Copenhagen last spring.",       // evidence of item 0
		10: "We talked about Copenhagen again.",               // repeats item 1's answer
		12: "My sister adopted a beagle named Pickles.",       // evidence of item 1
	}
	conv := qaConv(100, texts)
	items := []data.QAItem{
		{Answer: "Copenhagen", Category: 1, EvidenceMsgs: []int{8}},
		{Answer: "Copenhagen", Category: 1, EvidenceMsgs: []int{4}}, // the answer is not in its evidence
		{Answer: "Pickles", Category: 4, EvidenceMsgs: []int{12}},
		{Answer: "Pickles", Category: 5, EvidenceMsgs: []int{12}},  // adversarial
		{Answer: "Pickles", Category: 1, EvidenceMsgs: []int{-1}},  // unresolved evidence
		{Answer: "ok", Category: 1, EvidenceMsgs: []int{12}},       // too short
		{Answer: "Pickles", Category: 1, EvidenceMsgs: []int{190}}, // no room for +20
	}
	probes := qaProbes(conv, items, 0)
	byItem := map[int][]qaProbe{}
	for _, p := range probes {
		byItem[p.item] = append(byItem[p.item], p)
	}
	for _, i := range []int{1, 3, 4, 5, 6} {
		if len(byItem[i]) > 0 {
			t.Errorf("item %d qualified: %+v", i, byItem[i])
		}
	}
	// Item 0's answer is said again 2 messages later: every distance's
	// window holds it, so no pair qualifies.
	if len(byItem[0]) != 0 {
		t.Errorf("item 0 (answer repeated) gave %+v", byItem[0])
	}
	if len(byItem[2]) != len(qaDistances) {
		t.Fatalf("item 2: %d probes, want one per distance: %+v", len(byItem[2]), byItem[2])
	}
	for _, p := range byItem[2] {
		// The check follows the first turn leaving >= k messages after
		// message 12: 13+k messages stored, an even count, so turn (13+k+1)/2.
		if want := (13 + p.k + 1) / 2; p.turn != want {
			t.Errorf("k=%d: checked after turn %d, want %d", p.k, p.turn, want)
		}
		if p.decoy == "" || strings.Contains(strings.ToLower(p.decoy), "pickles") {
			t.Errorf("k=%d: decoy %q", p.k, p.decoy)
		}
		// A capitalised answer draws a capitalised mid-sentence decoy from
		// the six messages before the evidence (6–11).
		if !slices.Contains([]string{"Ravindra", "Lisbon", "Copenhagen"}, p.decoy) {
			t.Errorf("k=%d: decoy %q, want a capitalised mid-sentence word of messages 6–11", p.k, p.decoy)
		}
	}
	if again := qaProbes(conv, items, 0); !slices.Equal(again, probes) {
		t.Error("qaProbes is not deterministic")
	}
}

func TestPairedDiff(t *testing.T) {
	res := []qaResult{{answer: true}, {answer: true}, {answer: true, decoy: true}, {decoy: true}}
	a, d, diff, lo, hi := pairedDiff(res)
	if a != 0.75 || d != 0.5 || diff != 0.25 {
		t.Errorf("answer %v decoy %v diff %v, want 0.75 0.5 0.25", a, d, diff)
	}
	if !(lo < diff && diff < hi) {
		t.Errorf("interval [%v, %v] does not hold %v", lo, hi, diff)
	}
	same := []qaResult{{answer: true, decoy: true}, {}}
	if _, _, diff, lo, hi := pairedDiff(same); diff != 0 || lo != 0 || hi != 0 {
		t.Errorf("identical answer and decoy: diff %v [%v, %v], want 0", diff, lo, hi)
	}
	if a, _, _, _, _ := pairedDiff(nil); !math.IsNaN(a) {
		t.Errorf("no results: answer rate %v, want NaN", a)
	}
}
