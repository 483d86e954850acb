package summary

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-go/strata/summary/internal/factkey"
	"github.com/strata-go/strata/trimmer"
)

// byKey returns the fact under key (normalised), or false.
func byKey(fs []Fact, key string) (Fact, bool) {
	for _, f := range fs {
		if NormalizeKey(f.Key) == NormalizeKey(key) {
			return f, true
		}
	}
	return Fact{}, false
}

func mustValue(t *testing.T, fs []Fact, key, want string) Fact {
	t.Helper()
	f, ok := byKey(fs, key)
	if !ok {
		t.Fatalf("no %s in\n%s", key, dumpFacts(fs))
	}
	if f.Value != want {
		t.Fatalf("%s = %q, want %q", key, f.Value, want)
	}
	return f
}

func TestFamilyOf(t *testing.T) {
	cases := []struct {
		key  string
		name string
		slot bool
		imp  Importance
	}{
		{"phone", "phone", true, ImportanceContact},
		{"Phone Number", "phone", true, ImportanceContact},
		{"customer_phone", "phone", true, ImportanceContact},
		{"new_phone", "phone", true, ImportanceContact},
		{"phone_2", "phone", true, ImportanceContact},
		{"user_name", "name", true, ImportanceIdentity},
		{"customer_name", "name", true, ImportanceIdentity},
		{"shipping_address", "delivery_address", true, ImportanceContact},
		{"order_number", "order_id", false, ImportanceReference},
		{"order_id_3", "order_id", false, ImportanceReference},
		{"price_26", "price", false, ImportanceContext},
		{"flight_number_45", "flight_number", false, ImportanceContext},
		{"reservation_id_26", "reservation_id", false, ImportanceReference},
		{"refund_amount", "refund_amount", false, ImportanceAmount},
		{"preference_2", "preference", false, ImportanceStatement},
		{"seat_preference", "seat_preference", false, ImportanceStatement},
		{"payment_method_id", "payment_method_id", false, ImportanceReference},
		{"refund_status", "refund_status", true, ImportanceContext},
		{"work_email", "work_email", true, ImportanceContact},
		{"favourite_colour", "favourite_colour", false, ImportanceIncidental},
	}
	for _, c := range cases {
		f := FamilyOf(c.key)
		if f.Name != c.name || f.Slot != c.slot || f.Importance != c.imp {
			t.Errorf("FamilyOf(%q) = %+v, want %s slot=%v %s", c.key, f, c.name, c.slot, c.imp)
		}
	}
	if _, past := familyOf("old_phone", General); !past {
		t.Error("old_phone is not a past key")
	}
}

func TestIsPlaceholder(t *testing.T) {
	for _, v := range []string{"", "  ", "N/A", "n/a", "none", "None.", "unknown", "Unknown", "not mentioned",
		"Not mentioned in the conversation", "(not provided)", "<unknown>", "null", "-", "?", "TBD", "not specified"} {
		if !IsPlaceholder(v) {
			t.Errorf("IsPlaceholder(%q) = false", v)
		}
	}
	for _, v := range []string{"#1234", "no calls after 6pm", "0", "Nonesuch Ltd", "none of the above options work for me today", "N/A-77"} {
		if IsPlaceholder(v) {
			t.Errorf("IsPlaceholder(%q) = true", v)
		}
	}
}

func TestSlotNewValueSupersedes(t *testing.T) {
	ledger := MergeFacts(nil, []Fact{{Key: "phone", Value: "555-1111", Category: Entity}}, MergeOptions{Now: t0, Seq: 4})
	// An update under another key of the same family lands on the slot.
	ledger = MergeFacts(ledger, []Fact{{Key: "phone_number", Value: "555-2222", Category: Entity}}, MergeOptions{Now: t1, Seq: 40})
	f := mustValue(t, ledger, "phone", "555-2222")
	if len(ledger) != 1 || f.Previous != "555-1111" {
		t.Fatalf("ledger:\n%s previous %q", dumpFacts(ledger), f.Previous)
	}
	if f.FirstSeq != 40 || f.LastSeq != 40 || f.Mentions != 1 || !f.ExtractedAt.Equal(t1) {
		t.Fatalf("provenance %+v", f)
	}
	block := FactsBlock(ledger)
	if strings.Contains(block, "555-1111") {
		t.Fatalf("superseded value rendered as current:\n%s", block)
	}
	if got := FactsBlockWith(ledger, RenderOptions{ShowPrevious: true}); got != FactsHeader+"\n- phone: 555-2222 (previously 555-1111)" {
		t.Fatalf("with previous: %q", got)
	}
	// Going back to the old value takes it out of the history.
	ledger = MergeFacts(ledger, []Fact{{Key: "mobile", Value: "555 1111"}}, MergeOptions{Now: t2, Seq: 60})
	f = mustValue(t, ledger, "phone", "555 1111")
	if f.Previous != "555-2222" {
		t.Fatalf("previous %q", f.Previous)
	}
}

func TestSlotOlderValueOnlyBecomesPrevious(t *testing.T) {
	// A re-summarization from the originals reads the first chunk again: the
	// old phone number (seen through seq 35) must not replace the current one
	// (seen at seq 60).
	ledger := []Fact{{Key: "phone", Value: "555-2222", Category: Entity, FirstSeq: 60, LastSeq: 60, Mentions: 1, Previous: "555-1111"}}
	got := MergeFacts(ledger, []Fact{{Key: "phone", Value: "555-1111"}}, MergeOptions{Now: t1, Seq: 35})
	f := mustValue(t, got, "phone", "555-2222")
	if f.LastSeq != 60 || f.Previous != "555-1111" {
		t.Fatalf("got %+v", f)
	}
	// Within one result the later value wins.
	got = MergeFacts(nil, []Fact{{Key: "phone", Value: "A-1"}, {Key: "phone_2", Value: "B-2"}}, MergeOptions{Now: t1, Seq: 9})
	f = mustValue(t, got, "phone", "B-2")
	if len(got) != 1 || f.Previous != "A-1" {
		t.Fatalf("got\n%s", dumpFacts(got))
	}
}

func TestMentionRefreshes(t *testing.T) {
	ledger := MergeFacts(nil, []Fact{{Key: "order_id", Value: "#1234", Category: Entity}}, MergeOptions{Now: t0, Seq: 5})
	ledger = MergeFacts(ledger, []Fact{{Key: "order_number", Value: "1234"}}, MergeOptions{Now: t1, Seq: 50})
	f := mustValue(t, ledger, "order_id", "#1234")
	if len(ledger) != 1 || f.FirstSeq != 5 || f.LastSeq != 50 || f.Mentions != 2 || !f.ExtractedAt.Equal(t0) {
		t.Fatalf("ledger:\n%s %+v", dumpFacts(ledger), f)
	}
	// An older re-read is not a new mention.
	again := MergeFacts(ledger, []Fact{{Key: "order_id", Value: "#1234"}}, MergeOptions{Now: t2, Seq: 20})
	if g := mustValue(t, again, "order_id", "#1234"); g.LastSeq != 50 || g.Mentions != 2 {
		t.Fatalf("older re-read counted: %+v", g)
	}
	// A summarizer that knows the message's seq reports it.
	own := MergeFacts(ledger, []Fact{{Key: "order_id", Value: "#1234", LastSeq: 61}}, MergeOptions{Now: t2, Seq: 70})
	if g := mustValue(t, own, "order_id", "#1234"); g.LastSeq != 61 || g.Mentions != 3 {
		t.Fatalf("own seq: %+v", g)
	}
}

func TestUpdateLandsOnExistingKey(t *testing.T) {
	ledger := []Fact{
		{Key: "order_id", Value: "#1234", Category: Entity, LastSeq: 3},
		{Key: "delivery_address", Value: "1 Main St", Category: Entity, LastSeq: 3},
		{Key: "meeting_room", Value: "B-120", Category: General, LastSeq: 3},
	}
	got := MergeFacts(ledger, []Fact{
		{Key: "customer_order", Value: "#9999", Replaces: "#1234"},       // replaces names the old value
		{Key: "shipping_address", Value: "22 Oak Ave", Category: Entity}, // same slot family
		{Key: "room", Value: "b120"},                                     // same value, unknown key
	}, MergeOptions{Now: t1, Seq: 30})
	if len(got) != 3 {
		t.Fatalf("got\n%s", dumpFacts(got))
	}
	if f := mustValue(t, got, "order_id", "#9999"); f.Category != Entity || f.Previous != "#1234" {
		t.Fatalf("order_id %+v", f)
	}
	addr := mustValue(t, got, "delivery_address", "22 Oak Ave")
	if addr.Previous != "1 Main St" {
		t.Fatalf("previous %q", addr.Previous)
	}
	if room := mustValue(t, got, "meeting_room", "B-120"); room.LastSeq != 30 {
		t.Fatalf("room not refreshed: %+v", room)
	}
}

func TestPastKeyOnlySetsPrevious(t *testing.T) {
	ledger := []Fact{{Key: "phone", Value: "555-2222", Category: Entity, LastSeq: 9}}
	got := MergeFacts(ledger, []Fact{{Key: "old_phone", Value: "555-1111"}, {Key: "previous_email", Value: "a@b.c"}}, MergeOptions{Now: t1, Seq: 10})
	if len(got) != 1 || got[0].Previous != "555-1111" || got[0].Value != "555-2222" {
		t.Fatalf("got\n%s %v", dumpFacts(got), got[0].Previous)
	}
}

func TestStoredPastKeyNeverBecomesCurrent(t *testing.T) {
	stored := []Fact{fact("old_phone", "555-1111", Entity, t0), fact("phone", "555-2222", Entity, t1)}
	got := MergeFacts(stored, nil, MergeOptions{Now: t2})
	if f := mustValue(t, got, "phone", "555-2222"); len(got) != 1 || f.Previous != "555-1111" {
		t.Fatalf("got\n%s", dumpFacts(got))
	}
	// Without a current value it stays a fact of its own.
	got = MergeFacts(stored[:1], nil, MergeOptions{Now: t2})
	mustValue(t, got, "old_phone", "555-1111")
}

func TestLegacyLedgerHeals(t *testing.T) {
	// Ledgers written before slots number a second phone phone_2, in order
	// of appearance: the later one is current.
	legacy := []Fact{fact("phone", "555-1111", Entity, t0), fact("order_id", "#1", Entity, t0), fact("phone_2", "555-2222", Entity, t1)}
	got := MergeFacts(legacy, nil, MergeOptions{Now: t2})
	if len(got) != 2 {
		t.Fatalf("got\n%s", dumpFacts(got))
	}
	f := mustValue(t, got, "phone", "555-2222")
	if f.Previous != "555-1111" {
		t.Fatalf("previous %q", f.Previous)
	}
}

func TestProtectedFactsSurvive(t *testing.T) {
	ledger := []Fact{
		{Key: "name", Value: "Dana Reyes", Category: Entity, LastSeq: 1},
		{Key: "note", Value: "pinned by the caller", Pinned: true, LastSeq: 1},
		{Key: "case_id", Value: "CS-7", Category: Entity, LastSeq: 1},
		{Key: "chatter", Value: "x", LastSeq: 90},
	}
	opt := MergeOptions{Now: t1, Seq: 100, MaxFacts: 1, PinnedKeys: []string{"case_*"}}
	// Removal requests for protected facts are ignored.
	got := MergeFacts(ledger, []Fact{{Key: "name", Remove: true}, {Key: "note", Remove: true}, {Key: "case_id", Remove: true}}, opt)
	for _, k := range []string{"name", "note", "case_id"} {
		if _, ok := byKey(got, k); !ok {
			t.Errorf("%s dropped:\n%s", k, dumpFacts(got))
		}
	}
	if _, ok := byKey(got, "chatter"); ok {
		t.Errorf("chatter kept although only protected facts fit:\n%s", dumpFacts(got))
	}
	// Pinned is sticky across an update of the value.
	got = MergeFacts(got, []Fact{{Key: "note", Value: "new"}}, opt)
	if f := mustValue(t, got, "note", "new"); !f.Pinned {
		t.Fatal("pin lost on update")
	}
}

func TestFamilyShareGoesFirstAndKeepsAnchor(t *testing.T) {
	others := []Fact{{Key: "order_id", Value: "#1", LastSeq: 1}, {Key: "note1", Value: "a", LastSeq: 1}, {Key: "note2", Value: "b", LastSeq: 1}}
	in := append([]Fact(nil), others...)
	for i := 1; i <= 30; i++ {
		in = append(in, Fact{Key: factkey.Numbered("price", i), Value: fmt.Sprintf("$%d", 100+i), Category: Numeric, LastSeq: int64(i)})
	}
	// Room for everything: a family may use it.
	if got := MergeFacts(nil, in, MergeOptions{Now: t1, Seq: 40, MaxPerFamily: 4}); len(got) != 33 {
		t.Fatalf("no pressure, yet %d of 33 facts kept", len(got))
	}
	// Under pressure the family's excess goes first, even before less
	// important facts (note1, note2 are incidental, the prices context).
	got := MergeFacts(nil, in, MergeOptions{Now: t1, Seq: 40, MaxPerFamily: 4, MaxFacts: 7})
	var prices []string
	for _, f := range got {
		if FamilyOf(f.Key).Name == "price" {
			prices = append(prices, f.Value)
		}
	}
	// The first price seen stays (the anchor), then the newest.
	if want := []string{"$101", "$128", "$129", "$130"}; len(got) != 7 || !reflect.DeepEqual(prices, want) {
		t.Fatalf("kept\n%s want prices %v", dumpFacts(got), want)
	}
}

func TestTokenBudgetHardStop(t *testing.T) {
	var in []Fact
	in = append(in, Fact{Key: "name", Value: strings.Repeat("Long Name ", 20), Category: Entity})
	for i := 0; i < 40; i++ {
		in = append(in, Fact{Key: fmt.Sprintf("note%02d", i), Value: strings.Repeat("word ", 10)})
	}
	tokens := trimmer.EstimateScript
	got := MergeFacts(nil, in, MergeOptions{Now: t1, Seq: 5, TokenBudget: 120})
	if n := tokens(FactsBlock(got)); n > 120 {
		t.Fatalf("block of %d tokens over budget 120", n)
	}
	if _, ok := byKey(got, "name"); !ok {
		t.Fatal("identity fact dropped for the budget")
	}
	// Only protected facts left, still over budget: the hard stop keeps them.
	got = MergeFacts(nil, in, MergeOptions{Now: t1, Seq: 5, TokenBudget: 5})
	if len(got) != 1 || NormalizeKey(got[0].Key) != "name" {
		t.Fatalf("got\n%s", dumpFacts(got))
	}
}

func TestPlantedFactsSurviveSupportChatter(t *testing.T) {
	planted := []Fact{
		{Key: "name", Value: "Dana Reyes", Category: Entity},
		{Key: "order_id", Value: "#A-99812", Category: Entity},
		{Key: "sku", Value: "WX-4410-BL", Category: Entity},
		{Key: "case_id", Value: "CS-55120", Category: Entity},
		{Key: "amount", Value: "$249.99", Category: Numeric},
		{Key: "date", Value: "2025-03-14", Category: Condition},
		{Key: "delivery_address", Value: "12 Elm Street, Springfield", Category: Entity},
		{Key: "phone", Value: "555-0100", Category: Entity},
		{Key: "email", Value: "dana@example.com", Category: Entity},
		{Key: "preference", Value: "no calls after 6pm", Category: Condition},
	}
	ledger := MergeFacts(nil, planted, MergeOptions{Now: t0, Seq: 5})
	ledger = MergeFacts(ledger, []Fact{{Key: "phone", Value: "555-0199"}, {Key: "address", Value: "9 Birch Road, Springfield"}}, MergeOptions{Now: t0, Seq: 20})
	// 400 turns of other customers' data, in folds of 10 messages.
	kinds := []string{"price", "flight_number", "reservation_id", "date", "time", "origin", "destination", "cabin", "payment_method_id", "baggage", "amount", "order_id"}
	for fold := 0; fold < 40; fold++ {
		var chatter []Fact
		for i, k := range kinds {
			chatter = append(chatter, Fact{Key: factkey.Numbered(k, fold+2), Value: fmt.Sprintf("%s-%d-%d", strings.ToUpper(k[:2]), fold, i)})
		}
		ledger = MergeFacts(ledger, chatter, MergeOptions{Now: t1, Seq: int64(30 + 10*fold)})
	}
	want := map[string]string{"name": "Dana Reyes", "order_id": "#A-99812", "sku": "WX-4410-BL", "case_id": "CS-55120",
		"amount": "$249.99", "date": "2025-03-14", "delivery_address": "9 Birch Road, Springfield", "phone": "555-0199",
		"email": "dana@example.com", "preference": "no calls after 6pm"}
	for k, v := range want {
		mustValue(t, ledger, k, v)
	}
	block := FactsBlock(ledger)
	if strings.Contains(block, "555-0100") || strings.Contains(block, "12 Elm Street") {
		t.Fatalf("superseded value shown:\n%s", block)
	}
	if len(ledger) > DefaultMaxFacts || trimmer.EstimateScript(block) > DefaultFactsTokenBudget {
		t.Fatalf("caps exceeded: %d facts, %d tokens", len(ledger), trimmer.EstimateScript(block))
	}
}

func TestApplyCursorNarrativeAndProvenance(t *testing.T) {
	existing := &Summary{SessionID: "s", Epoch: 2, UpToSeq: 80, Narrative: "Earlier.", Version: 3,
		Facts: []Fact{{Key: "phone", Value: "555-2222", LastSeq: 80, Category: Entity}}}
	// A first chunk of a re-summarization from the originals ends before
	// the stored cursor: the cursor stays, the old phone stays history.
	next := Apply(existing, "s", 2, Result{Narrative: "From the start.", Facts: []Fact{{Key: "phone", Value: "555-1111"}}}, 30, MergeOptions{Now: t1})
	if next.UpToSeq != 80 || next.Version != 3 || next.Narrative != "From the start." {
		t.Fatalf("got %+v", next)
	}
	mustValue(t, next.Facts, "phone", "555-2222")
	// Facts whose provenance a store did not keep count as seen at the
	// stored cursor: an older re-read does not supersede them either.
	bare := &Summary{SessionID: "s", Epoch: 2, UpToSeq: 80, Facts: []Fact{{Key: "phone", Value: "555-2222"}}}
	next = Apply(bare, "s", 2, Result{Facts: []Fact{{Key: "phone", Value: "555-1111"}}}, 30, MergeOptions{Now: t1})
	mustValue(t, next.Facts, "phone", "555-2222")
	// Another epoch: the cursor is the fold's.
	if n := Apply(existing, "s", 3, Result{Narrative: "x"}, 30, MergeOptions{Now: t1}); n.UpToSeq != 30 {
		t.Fatalf("other epoch cursor %d", n.UpToSeq)
	}
	// New facts carry the fold's cursor.
	n := Apply(nil, "s", 1, Result{Facts: []Fact{{Key: "email", Value: "a@b.co"}}}, 12, MergeOptions{Now: t1})
	if f := mustValue(t, n.Facts, "email", "a@b.co"); f.FirstSeq != 12 || f.LastSeq != 12 || f.Mentions != 1 {
		t.Fatalf("provenance %+v", f)
	}
	// The narrative cap is in tokens, at a sentence boundary.
	long := strings.Repeat("The user wants a refund for the broken kettle. ", 30)
	n = Apply(nil, "s", 1, Result{Narrative: long}, 12, MergeOptions{Now: t1, MaxNarrativeTokens: 40})
	if tk := trimmer.EstimateScript(n.Narrative); tk > 40 || !strings.HasSuffix(n.Narrative, "kettle.") {
		t.Fatalf("narrative %d tokens: %q", tk, n.Narrative)
	}
}

func TestCapNarrative(t *testing.T) {
	tokens := func(s string) int { return len(strings.Fields(s)) } // one token a word
	if got := CapNarrative("One two. Three four five. Six.", 5, tokens); got != "One two. Three four five." {
		t.Fatalf("got %q", got)
	}
	if got := CapNarrative("One two three four five six seven.", 3, tokens); got != "One two…" && tokens(got) > 3 {
		t.Fatalf("got %q", got)
	}
	if got := CapNarrative("Short.", 0, tokens); got != "Short." {
		t.Fatalf("no cap: %q", got)
	}
	if got := CapNarrative("Fits fine.", 10, nil); got != "Fits fine." {
		t.Fatalf("got %q", got)
	}
}

// TestMergeProperties checks the ledger's invariants on random ledgers and
// replies: pinned and identity facts are never dropped, no cap is exceeded
// (pinned and identity facts aside), a slot has one current value, and no
// fact shows a value its history holds.
func TestMergeProperties(t *testing.T) {
	keys := []string{"name", "user_name", "customer_name", "phone", "phone_number", "mobile", "email", "address",
		"delivery_address", "order_id", "order_id_2", "order_id_3", "case_id", "price", "price_2", "price_3", "price_4",
		"price_5", "price_6", "flight_number_7", "flight_number_8", "note", "chat", "preference", "preference_2",
		"old_phone", "new_email", "status", "order_status", "x1", "x2", "x3", "x4", "x5", "x6"}
	values := []string{"A", "B", "555-1111", "555-2222", "#1234", "1234", "not mentioned", "", "N/A",
		"a long value " + strings.Repeat("w ", 30), "Dana", "$10", "$20"}
	rng := rand.New(rand.NewPCG(1, 2))
	randFacts := func(n int, seqMax int64) []Fact {
		var fs []Fact
		for range n {
			f := Fact{Key: keys[rng.IntN(len(keys))], Value: values[rng.IntN(len(values))], Category: Categories[rng.IntN(len(Categories))]}
			switch rng.IntN(12) {
			case 0:
				f.Remove = true
			case 1:
				f.Pinned = true
			case 2:
				f.Replaces = values[rng.IntN(len(values))]
			case 3:
				f.LastSeq = rng.Int64N(seqMax + 1)
			case 4, 5:
				f.Stated = true
			}
			fs = append(fs, f)
		}
		return fs
	}
	for iter := 0; iter < 3000; iter++ {
		opt := MergeOptions{Now: t1, Seq: int64(iter%50 + 1), MaxFacts: 1 + rng.IntN(12), MaxPerFamily: 1 + rng.IntN(4),
			TokenBudget: []int{-1, 20, 60, 400}[rng.IntN(4)], PinnedKeys: []string{"note"}, ShowPrevious: rng.IntN(2) == 0}
		existing := MergeFacts(nil, randFacts(rng.IntN(10), 50), MergeOptions{Now: t0, Seq: 1, MaxFacts: 1000, TokenBudget: -1})
		incoming := randFacts(rng.IntN(10), 60)
		got := MergeFacts(existing, incoming, opt)

		roomy := opt
		roomy.MaxFacts, roomy.TokenBudget = 1<<20, -1
		full := MergeFacts(existing, incoming, roomy)

		protected := func(f Fact) bool {
			return f.Pinned || NormalizeKey(f.Key) == "note" || FamilyOf(f.Key).Importance == ImportanceIdentity
		}
		nprot := 0
		slots := map[string]bool{}
		families, droppable := map[string]int{}, map[string]bool{}
		for _, f := range got {
			if protected(f) {
				nprot++
			}
			if fam := FamilyOf(f.Key); !fam.Slot {
				families[fam.Name]++
				if !protected(f) {
					droppable[fam.Name] = true
				}
			}
			if fam := FamilyOf(f.Key); fam.Slot {
				if slots[fam.Name] {
					t.Fatalf("iter %d: two current values of slot %s:\n%s", iter, fam.Name, dumpFacts(got))
				}
				slots[fam.Name] = true
			}
			if IsPlaceholder(f.Value) || f.Remove || f.Replaces != "" {
				t.Fatalf("iter %d: bad fact %+v", iter, f)
			}
			if f.Previous != "" && sameValue(f.Previous, f.Value) {
				t.Fatalf("iter %d: previous value is the current one: %+v", iter, f)
			}
		}
		// Every protected fact of existing is still there (possibly with a
		// newer value).
		for _, f := range existing {
			if !protected(f) {
				continue
			}
			fam := FamilyOf(f.Key)
			found := false
			for _, g := range got {
				if NormalizeKey(g.Key) == NormalizeKey(f.Key) || (fam.Slot && FamilyOf(g.Key).Name == fam.Name) {
					found = true
				}
			}
			if !found {
				t.Fatalf("iter %d: protected %+v dropped:\nexisting\n%s\nincoming\n%s\ngot\n%s", iter, f, dumpFacts(existing), dumpFacts(incoming), dumpFacts(got))
			}
		}
		if len(got)-nprot > max(0, opt.MaxFacts-nprot) && len(got) > opt.MaxFacts {
			t.Fatalf("iter %d: %d facts (%d protected) over cap %d", iter, len(got), nprot, opt.MaxFacts)
		}
		// A family beyond its share means only families beyond their share
		// lost facts.
		if over := overShare(families, droppable, opt.MaxPerFamily); over != "" {
			if d := droppedOutsideExcess(full, got, opt.MaxPerFamily); d != "" {
				t.Fatalf("iter %d: family %s over its share %d while %s was dropped:\n%s\nfull:\n%s", iter, over, opt.MaxPerFamily, d, dumpFacts(got), dumpFacts(full))
			}
		}
		if opt.TokenBudget > 0 && nprot < len(got) {
			if n := trimmer.EstimateScript(FactsBlockWith(got, RenderOptions{ShowPrevious: opt.ShowPrevious})); n > opt.TokenBudget {
				t.Fatalf("iter %d: block of %d tokens over budget %d with droppable facts left", iter, n, opt.TokenBudget)
			}
		}
		if again := MergeFacts(existing, incoming, opt); !reflect.DeepEqual(again, got) {
			t.Fatalf("iter %d: not deterministic", iter)
		}
	}
}

// overShare names a family with more than share facts, one of them
// droppable, "" when none has.
func overShare(families map[string]int, droppable map[string]bool, share int) string {
	for name, n := range families {
		if n > share && droppable[name] {
			return name
		}
	}
	return ""
}

// droppedOutsideExcess names a fact of full missing from got whose family
// was within its share in full, "" when none.
func droppedOutsideExcess(full, got []Fact, share int) string {
	count := map[string]int{}
	for _, f := range full {
		if fam := FamilyOf(f.Key); !fam.Slot {
			count[fam.Name]++
		}
	}
	for _, f := range full {
		if _, ok := byKey(got, f.Key); !ok && count[FamilyOf(f.Key).Name] <= share {
			return f.Key
		}
	}
	return ""
}
