package extractive_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	. "github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/summary/internal/extractive"
)

// FuzzExtractFacts: any text, as prose from the user or as a tool result
// or tool-call arguments, yields well-formed facts and a narrative within
// its cap, and never panics.
func FuzzExtractFacts(f *testing.F) {
	for _, seed := range []string{
		"My name is Dana Whitfield, order #A-7731, $129.99 on 2026-12-05 at 3pm, dana@example.com, +1 415 555 0134, 2 bags",
		`{"reservation_id":"NM1VX1","flights":[{"flight_number":"HAT136","date":"2024-05-20"}],"payment_methods":[{"id":"credit_card_1","amount":250.5}]}`,
		`[{"id":1},{"id":"x"},null,true,[["deep"]]]`,
		`{"a":{"b":{"c":{"d":{"e":"f"}}}}}`, `{"id":`, "₩50,000 KRW 가나다", "\xff\xfe", "",
		"Please ship to 4410 Larkspur Lane, Apt 3B, Portland, OR 97205. No calls after 6pm, I'm allergic to peanuts.",
		"This is Max, my dog. Hi, this is Dana. My old number 415-555-0134 no longer works, use 503-555-0199.",
		"SKU KT-2209, model number RTX4090, return RMA-77104; deliver it tomorrow or next Friday, in 2 weeks.",
		`[{"flight_number":"HAT1"},{"flight_number":"HAT2"},{"flight_number":"HAT3"},{"flight_number":"HAT4"}]`,
		"I'd prefer a window seat, thanks. Don't call me before 9am, I work nights. 1 Main St. 2 Oak Ave.",
		"DON'T\tRING me, I CAN\nNOT climb stairs; I need\na WHEELCHAIR. ORDER 12345, ſku KX-4471, 3 BAGS, 10:30 P.M.",
		"Never leave it at the door. I am unable to lift 2 boxes. Let’s go with the refund, it has\nbeen approved.",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		// The prefilters are necessary conditions only: they never change
		// what is found.
		if m := extractive.PrefilterMismatch(text); m != "" {
			t.Fatal(m)
		}
		msgs := []llms.ChatMessage{
			llms.HumanChatMessage{Content: text},
			llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: "c", Type: "function", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: text}}}},
			llms.ToolChatMessage{ID: "c", Content: text},
		}
		facts := ExtractFacts(msgs, nil)
		keys := map[string]bool{}
		for _, fact := range facts {
			if strings.TrimSpace(fact.Key) == "" || strings.TrimSpace(fact.Value) == "" || !fact.Category.Valid() {
				t.Fatalf("malformed fact %+v", fact)
			}
			if keys[fact.Key] {
				t.Fatalf("duplicate key %q in %+v", fact.Key, facts)
			}
			keys[fact.Key] = true
			if utf8.ValidString(text) && !utf8.ValidString(fact.Value) {
				t.Fatalf("fact value is not UTF-8: %q", fact.Value)
			}
		}
		at := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
		res, err := NewExtractiveService().Summarize(t.Context(), Request{Messages: msgs, SentAt: []time.Time{at, at, at}})
		if err != nil && !strings.Contains(err.Error(), "found nothing") {
			t.Fatalf("Summarize: %v", err)
		}
		if n := utf8.RuneCountInString(res.Narrative); n > MaxExtractiveNarrative {
			t.Fatalf("narrative has %d runes, cap %d", n, MaxExtractiveNarrative)
		}
		if utf8.ValidString(text) && !utf8.ValidString(res.Narrative) {
			t.Fatalf("narrative is not UTF-8: %q", res.Narrative)
		}
	})
}
