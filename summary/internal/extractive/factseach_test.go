package extractive_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/summary/internal/extractive"
)

// TestFactsEachIsSummarizeOfOneMessage: FactsEach, which builds the
// ledger's indexes once for all messages, finds in every message exactly
// what Summarize finds in that message alone with the same ledger and
// timestamp — over seeded random conversations in English, Korean,
// Japanese and Chinese with tool calls, tool results and a ledger from
// earlier folds (the seed is printed).
func TestFactsEachIsSummarizeOfOneMessage(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	protected := func(key string) bool { return key == "phone" || key == "email" || key == "user_name" }
	for conv := range 40 {
		sc := englishChat
		if conv%2 == 1 {
			sc = cjkChat
		}
		msgs := scriptMessages(sc, rng.Uint64(), 10+rng.IntN(30))
		for i := range msgs {
			switch rng.IntN(8) {
			case 0:
				msgs[i] = llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: fmt.Sprint("c", i), Type: "function",
					FunctionCall: &llms.FunctionCall{Name: "lookup", Arguments: fmt.Sprintf(`{"order_id":"ORD-%d","email":"a%d@example.com"}`, rng.IntN(9999), rng.IntN(50))}}}}
			case 1:
				msgs[i] = llms.ToolChatMessage{ID: fmt.Sprint("c", i), Content: fmt.Sprintf(`{"status":"shipped","tracking":"1Z%06d","phone":"(415) 555-%04d"}`, rng.IntN(1e6), rng.IntN(1e4))}
			case 2:
				msgs[i] = llms.HumanChatMessage{Content: fmt.Sprintf("My name is Ana and my phone is (628) 555-%04d; order #A%d, I paid $%d.50 yesterday.", rng.IntN(1e4), rng.IntN(1e5), rng.IntN(900))}
			case 3:
				msgs[i] = nil
			}
		}
		sentAt := make([]time.Time, len(msgs)-rng.IntN(3)) // some messages without a time
		for i := range sentAt {
			sentAt[i] = time.Date(2024, 5, 1+i%28, 10, 0, 0, 0, time.UTC)
		}
		s := extractive.New(protected)
		var known []extractive.Fact
		if conv%3 != 0 { // a ledger from an earlier fold of part of the conversation
			known = s.Summarize(extractive.Input{Messages: msgs[:rng.IntN(len(msgs))], SentAt: sentAt}).Facts
		}
		in := extractive.Input{Messages: msgs, SentAt: sentAt, Known: known}
		got := s.FactsEach(in)
		if len(got) != len(msgs) {
			t.Fatalf("seed %d, conversation %d: %d results for %d messages", seed, conv, len(got), len(msgs))
		}
		fresh := extractive.New(protected) // no memo shared with FactsEach
		for i, m := range msgs {
			var want []extractive.Fact
			if m != nil {
				one := extractive.Input{Messages: msgs[i : i+1], Known: known}
				if i < len(sentAt) {
					one.SentAt = sentAt[i : i+1]
				}
				want = fresh.Summarize(one).Facts
			}
			if !reflect.DeepEqual(got[i], want) {
				t.Fatalf("seed %d, conversation %d, message %d (%v):\nFactsEach %+v\nSummarize %+v", seed, conv, i, m, got[i], want)
			}
		}
	}
}
