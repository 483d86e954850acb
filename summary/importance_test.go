package summary

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/summary/internal/factkey"
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
			chatter = append(chatter, Fact{Key: factkey.Numbered(k, fold+2), Value: fmt.Sprintf("X%d-%d", fold, i)})
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
		res, err := svc.Summarize(context.Background(), Request{Messages: []llms.ChatMessage{llms.HumanChatMessage{Content: "fold " + fmt.Sprint(i)}}, Existing: cur, Incremental: cur != nil})
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
		key := factkey.Numbered(kinds[i%len(kinds)], i/len(kinds)%DefaultMaxPerFamily+1)
		parts = append(parts, fmt.Sprintf(`{"key":"%s","value":"R%04d","category":"ENTITY"}`, key, i))
	}
	return strings.Join(parts, ",")
}
