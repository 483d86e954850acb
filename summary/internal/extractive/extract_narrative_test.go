package extractive_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/text"
	. "github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/summary/internal/extractive"
	"github.com/strata-go/strata/trimmer"
)

// reactions are sentences of a personal chat that carry nothing a later
// question could be about.
var reactions = []string{
	"Wow, that's so cool!",
	"Haha, I know what you mean.",
	"How are you doing these days?",
	"That sounds like a lot of fun, enjoy it.",
	"Aww, thanks so much.",
	"Yeah, that is so true, same here.",
	"What have you been up to lately?",
}

// TestNarrativeKeepsSalientSentencesFromTheWholeConversation: folded
// incrementally in chunks, a long personal chat keeps in its narrative the
// sentences that told something (a title, a place, an event) from its
// first turns, leaves out reactions, however new, and stays within the
// narrative's token cap, so that Apply keeps it whole.
func TestNarrativeKeepsSalientSentencesFromTheWholeConversation(t *testing.T) {
	msgs := []llms.ChatMessage{
		user("Hey Mel! I'm thinking of going back to school to become a counselor."),
		agent("I loved reading \"Charlotte's Web\" as a kid, it taught me so much about friendship."),
		user("Last Friday I went to an LGBTQ+ counseling workshop in Boston with my friend Jolene."),
		agent("We adopted a guinea pig named Oscar and the kids adore him."),
	}
	for i := range 200 {
		if i%2 == 0 {
			msgs = append(msgs, user(reactions[i%len(reactions)]))
		} else {
			msgs = append(msgs, agent(reactions[(i+3)%len(reactions)]))
		}
	}
	svc := NewExtractiveService()
	var cur *Summary
	for start := 0; start < len(msgs); start += 20 {
		end := min(start+20, len(msgs))
		res, err := svc.Summarize(context.Background(), Request{Messages: msgs[start:end], Existing: cur, Incremental: cur != nil})
		if err != nil {
			t.Fatalf("fold at %d: %v", start, err)
		}
		next := Apply(cur, "s", 1, res, int64(end), MergeOptions{Now: t1})
		if next.Narrative != res.Narrative && strings.TrimSpace(res.Narrative) != "" {
			t.Fatalf("Apply cut the narrative:\n%q\n%q", res.Narrative, next.Narrative)
		}
		cur = &next
	}
	for _, want := range []string{"counselor", "Charlotte's Web", "Boston", "Oscar"} {
		if !strings.Contains(cur.Narrative, want) {
			t.Errorf("narrative lacks %q: %q", want, cur.Narrative)
		}
	}
	for _, r := range reactions {
		if strings.Contains(cur.Narrative, strings.TrimSuffix(r, "!")) {
			t.Errorf("narrative carries the reaction %q: %q", r, cur.Narrative)
		}
	}
	if n := trimmer.EstimateScript(cur.Narrative); n > extractiveNarrativeTokens {
		t.Errorf("narrative of %d tokens over %d", n, extractiveNarrativeTokens)
	}
}

// TestNarrativeFillsItsTokenCap: many salient sentences fill the narrative
// up to its token cap (CJK text included, whose runes cost more), the goal
// first.
func TestNarrativeFillsItsTokenCap(t *testing.T) {
	for _, script := range []string{"latin", "cjk"} {
		msgs := []llms.ChatMessage{user("My blender from order #1234 arrived broken and I want a refund.")}
		for i := range 200 {
			// Sentences of distinct shapes (the narrative skips repeats).
			text := fmt.Sprintf("The %s refund for order #%d has been issued to your card.", letterCode(uint64(i)), 5000+i)
			if script == "cjk" {
				text = fmt.Sprintf("The refund for order #%d: 주문의 %s 환불이 카드로 처리되었습니다.", 5000+i, letterCode(uint64(i)))
			}
			msgs = append(msgs, agent(text))
		}
		res := extract(t, Request{Messages: msgs})
		n := trimmer.EstimateScript(res.Narrative)
		if n > extractiveNarrativeTokens || n < extractiveNarrativeTokens*3/4 {
			t.Errorf("%s: narrative of %d tokens, want close to the cap %d", script, n, extractiveNarrativeTokens)
		}
		if !strings.HasPrefix(res.Narrative, "User: My blender from order #1234") {
			t.Errorf("%s: goal not first: %.80q", script, res.Narrative)
		}
		// A smaller cap from the caller (the manager's MaxNarrativeTokens)
		// is filled instead, so Apply's cap never cuts the narrative.
		const small = 80
		res = extract(t, Request{Messages: msgs, MaxNarrativeTokens: small})
		if n := trimmer.EstimateScript(res.Narrative); n > small || n < small/2 {
			t.Errorf("%s: narrative of %d tokens under a cap of %d", script, n, small)
		}
		if next := Apply(nil, "s", 1, res, 1, MergeOptions{MaxNarrativeTokens: small}); next.Narrative != res.Narrative {
			t.Errorf("%s: Apply cut the narrative written within its cap", script)
		}
	}
}

func TestWordScoreStoryMarks(t *testing.T) {
	for _, c := range []struct {
		text string
		want func(int) bool
		what string
	}{
		{"It takes 5-7 business days.", func(s int) bool { return s <= 0 }, "one mark alone (a number)"},
		{"We talked about the weather for a while.", func(s int) bool { return s <= 0 }, "one mark alone (the speaker)"},
		{"I'm so sorry to hear that, Sarah.", func(s int) bool { return s <= 1 }, "a vocative is no name"},
		{"My friend Carlos just ran his first marathon in 4 hours!", func(s int) bool { return s >= 3 }, "name, number, speaker"},
		{"I loved reading \"Charlotte's Web\" as a kid.", func(s int) bool { return s >= 3 }, "title, quoted, speaker"},
		{"Did you see Carlos at the marathon in Boston?", func(s int) bool { return s <= 0 }, "a question"},
		{"Wow, that's cool!", func(s int) bool { return s < 0 }, "a reaction"},
	} {
		if got := extractive.WordScore(c.text, "User"); !c.want(got) {
			t.Errorf("%s: extractive.WordScore(%q) = %d", c.what, c.text, got)
		}
	}
}

// TestIncrementalFoldReadsOnlyItsMessages: an incremental fold scans the
// new messages and the existing narrative's sentences, nothing of the
// history before them, however long: its work does not grow with the
// session.
func TestIncrementalFoldReadsOnlyItsMessages(t *testing.T) {
	for _, history := range []int{5, 80} {
		existing := foldedConversation(t, NewExtractiveService(), history, 16)
		x := extractive.New(nil)
		batch := chatMessages(99_999, 16)
		known := make([]extractive.Fact, len(existing.Facts))
		for i, f := range existing.Facts {
			known[i] = extractive.Fact{Key: f.Key, Value: f.Value, Category: extractive.Category(f.Category), Stated: f.Stated}
		}
		if out := x.Summarize(extractive.Input{Messages: batch, Known: known, Carried: existing.Narrative,
			MaxNarrativeRunes: MaxExtractiveNarrative, MaxNarrativeTokens: extractiveNarrativeTokens}); out.Narrative == "" && len(out.Facts) == 0 {
			t.Fatal("the fold found nothing")
		}
		carried := len(text.Sentences(existing.Narrative))
		scanned, split := x.MemoLen()
		if n := scanned; n > len(batch)+carried {
			t.Errorf("history %d chunks: %d texts scanned for %d messages and %d carried sentences", history, n, len(batch), carried)
		}
		if n := split; n > len(batch) {
			t.Errorf("history %d chunks: %d messages split for %d new ones", history, n, len(batch))
		}
	}
}
