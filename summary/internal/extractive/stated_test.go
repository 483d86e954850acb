package extractive_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	. "github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

// Tests of the rules that rank what the user says about themselves above
// what the assistant, tools and other people say, in the extractive
// summarizer and through the ledger it feeds.

func TestExtractMarksWhatTheUserStated(t *testing.T) {
	facts := ExtractFacts([]llms.ChatMessage{
		user("My order is ORD-784512 and my email is ingrid.vt@fernmail.example."),
		agent("I see order ORD-784512 and a second order #A-5521 on your account."),
		llms.ToolChatMessage{ID: "c", Content: `{"email":"noah.muller@example.com","reservation_id":"NO6JO3"}`},
		agent("Done, the phone number on your account is now 503-555-0148."),
	}, nil)
	want := map[string]bool{"order_id": true, "email": true, "order_id_2": false, "email_2": false, "reservation_id": false, "phone": true}
	got := map[string]bool{}
	for _, f := range facts {
		got[f.Key] = f.Stated
	}
	for k, stated := range want {
		if s, ok := got[k]; !ok || s != stated {
			t.Errorf("%s: stated %v (present %v), want %v\n%s", k, s, ok, stated, dumpFacts(facts))
		}
	}
	// A value the tool said first becomes stated when the user says it.
	facts = ExtractFacts([]llms.ChatMessage{
		llms.ToolChatMessage{ID: "c", Content: `{"reservation_id":"NO6JO3"}`},
		user("Yes, reservation NO6JO3 is mine."),
	}, nil)
	if len(facts) != 1 || !facts[0].Stated {
		t.Fatalf("got\n%s", dumpFacts(facts))
	}
	// A value the ledger holds under a key this run gave another value:
	// no second fact under that key.
	facts = ExtractFacts([]llms.ChatMessage{
		user("My email is b@x.example now."),
		user("My friend's email is a@x.example, by the way."),
	}, []Fact{{Key: "email", Value: "a@x.example", Stated: true}})
	keys := map[string]bool{}
	for _, f := range facts {
		if keys[f.Key] {
			t.Fatalf("duplicate key %s:\n%s", f.Key, dumpFacts(facts))
		}
		keys[f.Key] = true
	}
	// Within one run too, the user's own e-mail is not replaced by a
	// tool's different one under the same key.
	facts = ExtractFacts([]llms.ChatMessage{
		user("Write to me at ingrid.vt@fernmail.example please."),
		agent("Noted, your email is noah@example.com on file."),
	}, nil)
	if len(facts) != 1 || facts[0].Value != "ingrid.vt@fernmail.example" || !facts[0].Stated {
		t.Fatalf("got\n%s", dumpFacts(facts))
	}
}

func TestExtractJSONRecordsKeyedByID(t *testing.T) {
	one := `{"user_id":"noah_muller_9847","payment_methods":{"credit_card_4421486":{"source":"credit_card","id":"credit_card_4421486"},"gift_card_3481935":{"source":"gift_card","id":"gift_card_3481935","amount":126}}}`
	got := factMap([]llms.ChatMessage{llms.ToolChatMessage{ID: "c", Content: one}}, nil)
	want := map[string]string{"user_id": "noah_muller_9847", "payment_method_id": "credit_card_4421486", "payment_method_id_2": "gift_card_3481935", "amount": "126"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all %v)", k, got[k], v, got)
		}
	}
	// Many records: all of them, under one family (its share bounds them
	// under pressure on the ledger).
	var recs []string
	for i := range 6 {
		recs = append(recs, fmt.Sprintf(`"certificate_%d":{"id":"certificate_%d"}`, 7504069+i, 7504069+i))
	}
	facts := ExtractFacts([]llms.ChatMessage{llms.ToolChatMessage{ID: "c", Content: `{"payment_methods":{` + strings.Join(recs, ",") + `}}`}}, nil)
	if len(facts) != 6 {
		t.Fatalf("got\n%s", dumpFacts(facts))
	}
	for _, f := range facts {
		if FamilyOf(f.Key).Name != "payment_method_id" {
			t.Errorf("%s is not a payment method id", f.Key)
		}
	}
}

func TestExtractDatePromisedIsADeliveryDate(t *testing.T) {
	got := factMap([]llms.ChatMessage{user("I paid €1,249.50 for it and it was promised for March 14, 2026.")}, nil)
	if got["delivery_date"] != "March 14, 2026" || got["payment"] != "€1,249.50" {
		t.Fatalf("got %v", got)
	}
}

// otherCustomer is a turn of another customer's support chat, with their
// own e-mail, ids, amounts and dates in what they say and in tool results.
func otherCustomer(i int) []llms.ChatMessage {
	name := []string{"noah_muller", "aarav_garcia", "lei_patel", "sophia_silva", "yara_ito"}[i%5]
	profile := fmt.Sprintf(`{"user_id":"%s_%d","email":"%s%d@example.com","dob":"1963-01-%02d","name":{"first_name":"Lei","last_name":"Patel"},"payment_methods":{"credit_card_%d":{"source":"credit_card","id":"credit_card_%d"},"gift_card_%d":{"source":"gift_card","id":"gift_card_%d","amount":%d}},"reservations":["R%05d"]}`,
		name, i, name, i, 1+i%28, 1000000+i, 1000000+i, 2000000+i, 2000000+i, 50+i%90, i)
	return []llms.ChatMessage{
		llms.HumanChatMessage{Content: fmt.Sprintf("Hi, my user id is %s_%d. I want to change reservation R%05d to May %d and I can pay $%d more.", name, i, i, 1+i%28, 20+i%70)},
		llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: fmt.Sprintf("c%d", i), Type: "function", FunctionCall: &llms.FunctionCall{Name: "get_user_details", Arguments: fmt.Sprintf(`{"user_id":"%s_%d"}`, name, i)}}}},
		llms.ToolChatMessage{ID: fmt.Sprintf("c%d", i), Content: profile},
		llms.AIChatMessage{Content: fmt.Sprintf("Done: reservation R%05d now flies on May %d, the new total is $%d, refunded to gift card %d.", i, 1+i%28, 200+i%150, 2000000+i)},
	}
}

// TestUserEmailSurvivesOtherCustomersChatter: a user's e-mail, order,
// amount and date said in the first turns are all still in the ledger
// after 300 turns of other customers' support chats with their own
// e-mails, ids, amounts and dates, under both fold styles.
func TestUserEmailSurvivesOtherCustomersChatter(t *testing.T) {
	msgs := []llms.ChatMessage{
		user("Hi, my name is Ingrid Vasquez-Thorne. I'm writing about my order ORD-784512."),
		agent("I'm sorry to hear that, Ingrid."),
		user("It's SKU KX-4471-BLU. I paid €1,249.50 for it and it was promised for March 14, 2026."),
		agent("Thank you, I have the details."),
		user("You can reach me at ingrid.vt@fernmail.example."),
		agent("Noted."),
	}
	turns := 300
	if testing.Short() {
		turns = 60
	}
	for i := range turns {
		msgs = append(msgs, otherCustomer(i)...)
	}
	want := map[string]string{"email": "ingrid.vt@fernmail.example", "order_id": "ORD-784512", "sku": "KX-4471-BLU",
		"payment": "€1,249.50", "delivery_date": "March 14, 2026", "user_name": "Ingrid Vasquez-Thorne"}
	for _, parity := range []bool{true, false} {
		t.Run(fmt.Sprintf("parity=%v", parity), func(t *testing.T) {
			s := foldLikeMemory(t, NewExtractiveService(), msgs, parity)
			for k, v := range want {
				if f, ok := byKey(s.Facts, k); !ok || f.Value != v {
					t.Errorf("%s = %q (present %v), want %q", k, f.Value, ok, v)
				}
			}
			if n := trimmer.EstimateScript(FactsBlock(s.Facts)); len(s.Facts) > DefaultMaxFacts || n > DefaultFactsTokenBudget {
				t.Errorf("caps exceeded: %d facts, %d tokens", len(s.Facts), n)
			}
			if t.Failed() {
				t.Logf("ledger:\n%s", dumpFacts(s.Facts))
			}
		})
	}
}
