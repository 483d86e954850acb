package summary

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/trimmer"
)

// Tests of the rules that rank what the user says about themselves above
// what the assistant, tools and other people say: Fact.Stated in the
// ledger (shared by every summarizer) and in the extractive summarizer.

func TestStatedContactIsNotReplacedByChatter(t *testing.T) {
	ledger := MergeFacts(nil, []Fact{{Key: "email", Value: "ingrid@fern.example", Category: Entity, Stated: true}}, MergeOptions{Now: t0, Seq: 4})

	// Another customer's e-mail from a tool result, under a numbered key
	// of the same slot, and under the slot's own key: no change.
	got := MergeFacts(ledger, []Fact{{Key: "email_2", Value: "noah@example.com"}, {Key: "email", Value: "aarav@example.com"}}, MergeOptions{Now: t1, Seq: 90})
	if f := mustValue(t, got, "email", "ingrid@fern.example"); len(got) != 1 || f.Previous != "" || !f.Stated {
		t.Fatalf("got\n%s %+v", dumpFacts(got), f)
	}
	// The user giving a new one replaces it.
	got = MergeFacts(got, []Fact{{Key: "email", Value: "ingrid.new@fern.example", Stated: true}}, MergeOptions{Now: t1, Seq: 95})
	if f := mustValue(t, got, "email", "ingrid.new@fern.example"); f.Previous != "ingrid@fern.example" || !f.Stated {
		t.Fatalf("stated update: %+v", f)
	}
	// An update naming the value it replaces is applied, whoever says it.
	got = MergeFacts(got, []Fact{{Key: "email", Value: "i@fern.example", Replaces: "ingrid.new@fern.example"}}, MergeOptions{Now: t1, Seq: 99})
	if f := mustValue(t, got, "email", "i@fern.example"); f.Stated {
		t.Fatalf("named update: %+v", f)
	}
	// Stored ledgers heal the same way: a later unstated value of a stated
	// slot does not take it over.
	stored := []Fact{{Key: "phone", Value: "555-0100", Stated: true, LastSeq: 3}, {Key: "phone_2", Value: "555-0999", LastSeq: 80}}
	if got := MergeFacts(stored, nil, MergeOptions{Now: t1}); len(got) != 1 || got[0].Value != "555-0100" {
		t.Fatalf("stored ledger:\n%s", dumpFacts(got))
	}
	// Nothing stated (a summarizer that does not say who said what): the
	// newest value wins, as before.
	got = MergeFacts([]Fact{{Key: "email", Value: "a@x.example", LastSeq: 3}}, []Fact{{Key: "email_2", Value: "b@x.example"}}, MergeOptions{Now: t1, Seq: 9})
	mustValue(t, got, "email", "b@x.example")
	// Other kinds (an order, a reservation) follow the newest value: the
	// agent's action legitimately changes them.
	got = MergeFacts([]Fact{{Key: "status", Value: "open", Stated: true, LastSeq: 3}}, []Fact{{Key: "status", Value: "refunded"}}, MergeOptions{Now: t1, Seq: 9})
	mustValue(t, got, "status", "refunded")
	// Saying the same value again keeps it stated; a tool repeating it
	// does not unstate it.
	got = MergeFacts([]Fact{{Key: "order_id", Value: "#77", LastSeq: 3}}, []Fact{{Key: "order_id", Value: "#77", Stated: true}}, MergeOptions{Now: t1, Seq: 9})
	got = MergeFacts(got, []Fact{{Key: "order_id", Value: "77"}}, MergeOptions{Now: t1, Seq: 12})
	if f := mustValue(t, got, "order_id", "#77"); !f.Stated {
		t.Fatalf("stated lost: %+v", f)
	}
}

func TestStatedFactsOutrankChatterUnderTheCaps(t *testing.T) {
	user := []Fact{
		{Key: "order_id", Value: "ORD-784512", Stated: true},
		{Key: "sku", Value: "KX-4471-BLU", Stated: true},
		{Key: "case_id", Value: "CS-93127", Stated: true},
		{Key: "payment", Value: "€1,249.50", Category: Numeric, Stated: true},
		{Key: "delivery_date", Value: "March 14, 2026", Category: Condition, Stated: true},
		{Key: "bags", Value: "2", Category: Numeric, Stated: true}, // stated, but incidental
	}
	ledger := MergeFacts(nil, user, MergeOptions{Now: t0, Seq: 5})
	// Many folds of other people's ids, amounts and dates: more recent,
	// of higher tiers than a date, each kind of them a family of its own.
	for fold := range 30 {
		var chatter []Fact
		for i, k := range []string{"reservation_id", "payment_method_id", "amount", "travel_date", "flight_number", "ticket_id", "invoice_id"} {
			chatter = append(chatter, Fact{Key: numberedKey(k, fold+2), Value: fmt.Sprintf("X%d-%d", fold, i)})
		}
		chatter = append(chatter, Fact{Key: fmt.Sprintf("gift_card_%d_id", 3481935+fold), Value: fmt.Sprintf("gift_card_%d", 3481935+fold)})
		ledger = MergeFacts(ledger, chatter, MergeOptions{Now: t1, Seq: int64(20 + 10*fold), MaxFacts: 40})
	}
	for _, f := range user[:5] {
		mustValue(t, ledger, f.Key, f.Value)
	}
	if _, ok := byKey(ledger, "bags"); ok {
		t.Errorf("an incidental fact outranked chatter:\n%s", dumpFacts(ledger))
	}
	// Keys that embed a record's id are one family, under one share.
	cards := 0
	for _, f := range ledger {
		if FamilyOf(f.Key).Name == "gift_card_id" {
			cards++
		}
	}
	if len(ledger) > 40 || cards > DefaultMaxPerFamily {
		t.Fatalf("%d facts, %d gift card ids:\n%s", len(ledger), cards, dumpFacts(ledger))
	}
}

func TestFamilyOfEmbeddedIDsAndAmounts(t *testing.T) {
	for _, c := range []struct {
		key, name string
		imp       Importance
	}{
		{"credit_card_4421486_id", "credit_card_id", ImportanceReference},
		{"gift_card_3481935_id", "gift_card_id", ImportanceReference},
		{"certificate_7504069_id", "certificate_id", ImportanceReference},
		{"card_last4", "card_last4", ImportanceIncidental},
		{"payment", "amount", ImportanceAmount},
		{"payment_2", "amount", ImportanceAmount},
		{"compensation", "credit", ImportanceAmount},
		{"voucher", "credit", ImportanceAmount},
		{"deposit", "deposit", ImportanceAmount},
		{"2024", "2024", ImportanceIncidental},
	} {
		if f := FamilyOf(c.key); f.Name != c.name || f.Importance != c.imp {
			t.Errorf("FamilyOf(%q) = %s/%s, want %s/%s", c.key, f.Name, f.Importance, c.name, c.imp)
		}
	}
}

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

// TestLLMStatedFactsFollowTheSameRules: the LLM summarizer's facts go
// through the same merge: a model marking the user's e-mail as stated
// keeps it against a later fold's unstated e-mail of someone else, and
// the user's facts outrank chatter under the caps.
func TestLLMStatedFactsFollowTheSameRules(t *testing.T) {
	model := &fakeModel{replies: []fakeReply{
		{content: `{"narrative":"The user reported order ORD-1.","facts":[{"key":"email","value":"ingrid@fern.example","category":"ENTITY","stated":true},{"key":"delivery_date","value":"March 14, 2026","category":"CONDITION","stated":true}]}`},
		{content: `{"narrative":"Another customer's booking.","facts":[{"key":"email","value":"noah@example.com","category":"ENTITY"},` + chatterFacts(30) + `]}`},
	}}
	svc := NewLLMService(model)
	var cur *Summary
	for i := range 2 {
		res, err := svc.Summarize(context.Background(), Request{Messages: []llms.ChatMessage{user("fold " + fmt.Sprint(i))}, Existing: cur, Incremental: cur != nil})
		if err != nil {
			t.Fatal(err)
		}
		next := Apply(cur, "s", 1, res, int64(10*(i+1)), MergeOptions{Now: t1, MaxFacts: 20})
		cur = &next
	}
	if f := mustValue(t, cur.Facts, "email", "ingrid@fern.example"); !f.Stated {
		t.Fatalf("email %+v", f)
	}
	mustValue(t, cur.Facts, "delivery_date", "March 14, 2026")
	if len(cur.Facts) > 20 {
		t.Fatalf("%d facts", len(cur.Facts))
	}
}

// chatterFacts renders n facts of other customers as JSON fact objects:
// references of several kinds, each kind within its family's share, all
// of a higher tier than a date.
func chatterFacts(n int) string {
	kinds := []string{"reservation_id", "ticket_id", "booking_id", "invoice_id", "tracking_number", "case_id"}
	var parts []string
	for i := range n {
		key := numberedKey(kinds[i%len(kinds)], i/len(kinds)%DefaultMaxPerFamily+1)
		parts = append(parts, fmt.Sprintf(`{"key":"%s","value":"R%04d","category":"ENTITY"}`, key, i))
	}
	return strings.Join(parts, ",")
}
