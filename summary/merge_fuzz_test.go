package summary

import (
	"strings"
	"testing"

	"github.com/strata-go/strata/trimmer"
)

// FuzzMergeReply feeds arbitrary summarizer replies through ParseReply and
// Apply onto a ledger with identity, pinned, contact and chatter facts, and
// checks the merge protocol: a reply that does not parse changes nothing
// (the fold fails); one that does never drops a pinned or identity fact,
// never exceeds the caps (a family goes beyond its share only when nothing
// had to be dropped), never stores a placeholder, never shows a
// superseded value as current, and its narrative comes from a JSON object
// and fits the narrative cap. The seed corpus is in
// testdata/fuzz/FuzzMergeReply.
func FuzzMergeReply(f *testing.F) {
	for _, s := range []string{
		`{"narrative":"The user changed the phone number.","facts":[{"key":"phone_number","value":"555-0199"}]}`,
		`{"narrative":null,"facts":[{"key":"name","value":null},{"key":"order_id","value":"not mentioned"}]}`,
		`{"facts":[{"key":"name","remove":true},{"key":"case_id","remove":true},{"key":"chat_1","remove":true}]}`,
		`{"narrative":"x","facts":[{"key":"customer_order","value":"#9","replaces":"#A-99812"}]}`,
		`Sure! The customer wants a refund.`,
		"```json\n{\"narrative\": \"ok\", \"facts\": [{\"key\": \"price_9\", \"value\": \"$1\"}]}\n```",
		`{"narrative":"` + strings.Repeat("A very long sentence about the order. ", 80) + `"}`,
		`{"narrative":"{\"narrative\":\"nested\"}","facts":[]}`,
		`{"facts":[{"key":"old_phone","value":"555-0100"},{"key":"new_email","value":"d@x.io"}]}`,
		`{"facts":[{"key":"email","value":"a@b.io","stated":true},{"key":"email_2","value":"c@d.io"},{"key":"phone","value":"555-0123","stated":"true"}]}`,
	} {
		f.Add(s)
	}
	const maxFacts, perFamily, budget, narrativeCap = 8, 2, 120, 40
	existing := &Summary{SessionID: "s", Epoch: 1, UpToSeq: 50, Narrative: "The customer reported a broken kettle.",
		Facts: []Fact{
			{Key: "name", Value: "Dana Reyes", Category: Entity, LastSeq: 3},
			{Key: "case_id", Value: "CS-55120", Category: Entity, LastSeq: 3},
			{Key: "order_id", Value: "#A-99812", Category: Entity, LastSeq: 3},
			{Key: "phone", Value: "555-0100", Category: Entity, LastSeq: 4},
			{Key: "chat_1", Value: "hello", LastSeq: 40},
			{Key: "note", Value: "VIP", Pinned: true, LastSeq: 2},
		}}
	opt := MergeOptions{MaxFacts: maxFacts, MaxPerFamily: perFamily, TokenBudget: budget, MaxNarrativeTokens: narrativeCap,
		PinnedKeys: []string{"case_*"}}
	f.Fuzz(func(t *testing.T, reply string) {
		res, err := ParseReply(reply)
		if err != nil {
			if !res.IsEmpty() {
				t.Fatalf("error %v with a result %#v", err, res)
			}
			return // a failed fold: the stored summary stays as it is
		}
		next := Apply(existing, "s", 1, res, 60, opt)
		if next.Narrative != existing.Narrative {
			if !strings.Contains(reply, "{") {
				t.Fatalf("narrative %q from a reply without JSON", next.Narrative)
			}
			if n := trimmer.EstimateScript(next.Narrative); n > narrativeCap {
				t.Fatalf("narrative of %d tokens over cap %d", n, narrativeCap)
			}
		}
		if next.UpToSeq != 60 {
			t.Fatalf("cursor %d", next.UpToSeq)
		}
		for _, want := range []string{"name", "case_id", "note"} {
			if _, ok := byKey(next.Facts, want); !ok {
				t.Fatalf("protected fact %s dropped:\n%s", want, dumpFacts(next.Facts))
			}
		}
		protected, families, droppable := 0, map[string]int{}, map[string]bool{}
		for _, fa := range next.Facts {
			fam := FamilyOf(fa.Key)
			prot := fa.Pinned || fam.Importance == ImportanceIdentity || strings.HasPrefix(NormalizeKey(fa.Key), "case_")
			if prot {
				protected++
			}
			if !fam.Slot {
				families[fam.Name]++
				if !prot {
					droppable[fam.Name] = true
				}
			}
			if IsPlaceholder(fa.Value) || fa.Remove || fa.Replaces != "" {
				t.Fatalf("bad fact stored: %+v", fa)
			}
			if fa.Previous != "" && sameValue(fa.Previous, fa.Value) {
				t.Fatalf("previous value is the current one: %+v", fa)
			}
		}
		if len(next.Facts) > max(maxFacts, protected) {
			t.Fatalf("%d facts over cap %d", len(next.Facts), maxFacts)
		}
		roomy := opt
		roomy.MaxFacts, roomy.TokenBudget = 1<<20, -1
		full := Apply(existing, "s", 1, res, 60, roomy)
		if over := overShare(families, droppable, perFamily); over != "" {
			if d := droppedOutsideExcess(full.Facts, next.Facts, perFamily); d != "" {
				t.Fatalf("family %s over its share %d while %s was dropped", over, perFamily, d)
			}
		}
		if protected < len(next.Facts) {
			if n := trimmer.EstimateScript(FactsBlock(next.Facts)); n > budget {
				t.Fatalf("facts block of %d tokens over budget %d", n, budget)
			}
		}
	})
}
