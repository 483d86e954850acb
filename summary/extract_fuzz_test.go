package summary

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"
)

// FuzzExtractFacts: any text, as prose from the user or as a tool result
// or tool-call arguments, yields well-formed facts and never panics.
func FuzzExtractFacts(f *testing.F) {
	for _, seed := range []string{
		"My name is Dana Whitfield, order #A-7731, $129.99 on 2026-12-05 at 3pm, dana@example.com, +1 415 555 0134, 2 bags",
		`{"reservation_id":"NM1VX1","flights":[{"flight_number":"HAT136","date":"2024-05-20"}],"payment_methods":[{"id":"credit_card_1","amount":250.5}]}`,
		`[{"id":1},{"id":"x"},null,true,[["deep"]]]`,
		`{"a":{"b":{"c":{"d":{"e":"f"}}}}}`, `{"id":`, "₩50,000 KRW 가나다", "\xff\xfe", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
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
		if _, err := NewExtractiveService().Summarize(t.Context(), Request{Messages: msgs}); err != nil && !strings.Contains(err.Error(), "found nothing") {
			t.Fatalf("Summarize: %v", err)
		}
	})
}
