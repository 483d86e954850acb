package summary

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var (
	t0 = time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
	t2 = t0.Add(2 * time.Hour)
)

func fact(k, v string, c Category, at time.Time) Fact {
	return Fact{Key: k, Value: v, Category: c, ExtractedAt: at}
}

// checkFacts compares key, value, category and time (provenance and history
// have their own tests).
func checkFacts(t *testing.T, got, want []Fact) {
	t.Helper()
	if !reflect.DeepEqual(project(got), project(want)) {
		t.Fatalf("got:\n%s\nwant:\n%s", dumpFacts(got), dumpFacts(want))
	}
}

func project(fs []Fact) []Fact {
	var out []Fact
	for _, f := range fs {
		out = append(out, Fact{Key: f.Key, Value: f.Value, Category: f.Category, ExtractedAt: f.ExtractedAt})
	}
	return out
}

func dumpFacts(fs []Fact) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %q=%q %s %s\n", f.Key, f.Value, f.Category, f.ExtractedAt.Format(time.TimeOnly))
	}
	return b.String()
}

func TestNormalizeKey(t *testing.T) {
	for in, want := range map[string]string{
		"order_id":        "order_id",
		"Order ID":        "order_id",
		"  order-id  ":    "order_id",
		"ORDER__ID":       "order_id",
		"order - id":      "order_id",
		"_order_id_":      "order_id",
		"Customer\tName":  "customer_name",
		"환불 금액":           "환불_금액",
		"":                "",
		" - _ ":           "",
		"agreed-price-$":  "agreed_price_$",
		"Flight Number 2": "flight_number_2",
	} {
		if got := NormalizeKey(in); got != want {
			t.Errorf("NormalizeKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMergeFactsNewValueReplaces(t *testing.T) {
	existing := []Fact{fact("order_id", "#1234", Entity, t0), fact("status", "pending", State, t0)}
	incoming := []Fact{{Key: "status", Value: "refunded", Category: State}}
	got := MergeFacts(existing, incoming, MergeOptions{Now: t1})
	checkFacts(t, got, []Fact{fact("order_id", "#1234", Entity, t0), fact("status", "refunded", State, t1)})
}

func TestMergeFactsKeysMatchNormalised(t *testing.T) {
	existing := []Fact{fact("order_id", "#1234", Entity, t0)}
	incoming := []Fact{{Key: " Order-ID ", Value: "#5678", Category: Entity}}
	got := MergeFacts(existing, incoming, MergeOptions{Now: t1})
	// The ledger's spelling of the key is kept.
	checkFacts(t, got, []Fact{fact("order_id", "#5678", Entity, t1)})
}

func TestMergeFactsUnchangedValueKeepsTime(t *testing.T) {
	existing := []Fact{fact("amount", "50,000 KRW", General, t0)}
	incoming := []Fact{{Key: "amount", Value: " 50,000 KRW ", Category: Numeric}}
	got := MergeFacts(existing, incoming, MergeOptions{Now: t1})
	// The category is updated, the time kept because the value did not change.
	checkFacts(t, got, []Fact{fact("amount", "50,000 KRW", Numeric, t0)})
}

func TestMergeFactsOmittedAreKept(t *testing.T) {
	existing := []Fact{fact("a", "1", Entity, t0), fact("b", "2", State, t0), fact("c", "3", General, t0)}
	got := MergeFacts(existing, []Fact{{Key: "b", Value: "2", Category: State}}, MergeOptions{Now: t1})
	checkFacts(t, got, existing)
	got = MergeFacts(existing, nil, MergeOptions{Now: t1})
	checkFacts(t, got, existing)
}

func TestMergeFactsEmptyValueChangesNothing(t *testing.T) {
	existing := []Fact{fact("a", "1", Entity, t0), fact("b", "2", State, t0), fact("c", "3", General, t0)}
	incoming := []Fact{{Key: "B", Value: ""}, {Key: "c", Value: "   "}, {Key: "unknown", Value: ""}, {Key: "a", Value: "not mentioned"}}
	got := MergeFacts(existing, incoming, MergeOptions{Now: t1})
	checkFacts(t, got, existing)
}

func TestMergeFactsExplicitRemove(t *testing.T) {
	existing := []Fact{fact("a", "1", Entity, t0), fact("b", "2", State, t0), fact("c", "3", General, t0)}
	incoming := []Fact{{Key: "B", Remove: true}, {Key: "c", Value: "3", Remove: true}, {Key: "unknown", Remove: true}}
	got := MergeFacts(existing, incoming, MergeOptions{Now: t1})
	checkFacts(t, got, []Fact{fact("a", "1", Entity, t0)})
}

func TestMergeFactsRemovedThenReAdded(t *testing.T) {
	existing := []Fact{fact("a", "1", Entity, t0), fact("b", "2", State, t0)}
	incoming := []Fact{{Key: "a", Remove: true}, {Key: "a", Value: "1", Category: Entity}}
	got := MergeFacts(existing, incoming, MergeOptions{Now: t1})
	checkFacts(t, got, []Fact{fact("a", "1", Entity, t1), fact("b", "2", State, t0)})
}

func TestMergeFactsDuplicatesCollapseLastWins(t *testing.T) {
	incoming := []Fact{
		{Key: "seat", Value: "12A", Category: Entity},
		{Key: "meal", Value: "vegan", Category: Decision},
		{Key: "Seat", Value: "14C", Category: Decision},
	}
	got := MergeFacts(nil, incoming, MergeOptions{Now: t1})
	checkFacts(t, got, []Fact{fact("seat", "14C", Decision, t1), fact("meal", "vegan", Decision, t1)})

	// Duplicates already in the ledger collapse too.
	existing := []Fact{fact("x", "1", General, t0), fact("X", "2", General, t1)}
	got = MergeFacts(existing, nil, MergeOptions{Now: t2})
	checkFacts(t, got, []Fact{fact("x", "2", General, t1)})
}

func TestMergeFactsOrder(t *testing.T) {
	existing := []Fact{fact("a", "1", General, t0), fact("b", "2", General, t0)}
	incoming := []Fact{
		{Key: "d", Value: "4"},
		{Key: "b", Value: "22"},
		{Key: "c", Value: "3"},
	}
	got := MergeFacts(existing, incoming, MergeOptions{Now: t1})
	checkFacts(t, got, []Fact{
		fact("a", "1", General, t0),
		fact("b", "22", General, t1),
		fact("d", "4", General, t1),
		fact("c", "3", General, t1),
	})
}

func TestMergeFactsDropsEmptyKeysAndFixesCategories(t *testing.T) {
	incoming := []Fact{
		{Key: "", Value: "x"},
		{Key: " -_ ", Value: "y"},
		{Key: "k", Value: "v", Category: "money"},
		{Key: "l", Value: "w", Category: "numeric"},
	}
	got := MergeFacts(nil, incoming, MergeOptions{Now: t1})
	checkFacts(t, got, []Fact{fact("k", "v", General, t1), fact("l", "w", Numeric, t1)})
}

func TestMergeFactsTruncatesValuesAndKeys(t *testing.T) {
	long := strings.Repeat("가", 30) // multi-byte runes
	longKey := strings.Repeat("k", 150)
	got := MergeFacts(nil, []Fact{{Key: longKey, Value: long}}, MergeOptions{MaxValueLen: 10, Now: t1})
	if len(got) != 1 {
		t.Fatalf("got %d facts", len(got))
	}
	if want := strings.Repeat("가", 9) + "…"; got[0].Value != want {
		t.Errorf("value = %q, want %q", got[0].Value, want)
	}
	if !utf8.ValidString(got[0].Value) || utf8.RuneCountInString(got[0].Value) != 10 {
		t.Errorf("value %q is not 10 valid runes", got[0].Value)
	}
	if got[0].Key != strings.Repeat("k", MaxKeyLen) {
		t.Errorf("key has %d runes, want %d", utf8.RuneCountInString(got[0].Key), MaxKeyLen)
	}

	// Default value cap: 500 runes.
	got = MergeFacts(nil, []Fact{{Key: "k", Value: strings.Repeat("x", 600)}}, MergeOptions{Now: t1})
	if n := utf8.RuneCountInString(got[0].Value); n != DefaultMaxValueLen || !strings.HasSuffix(got[0].Value, "…") {
		t.Errorf("default cap: %d runes, suffix ok=%v", n, strings.HasSuffix(got[0].Value, "…"))
	}

	// A value equal to its truncated ledger value is unchanged.
	existing := MergeFacts(nil, []Fact{{Key: "k", Value: long}}, MergeOptions{MaxValueLen: 10, Now: t0})
	got = MergeFacts(existing, []Fact{{Key: "k", Value: long}}, MergeOptions{MaxValueLen: 10, Now: t1})
	if got[0].ExtractedAt != t0 {
		t.Errorf("truncated identical value counted as a change")
	}
}

func TestMergeFactsCapDropsLeastImportantThenLeastRecent(t *testing.T) {
	seen := func(f Fact, seq int64) Fact { f.FirstSeq, f.LastSeq = seq, seq; return f }
	existing := []Fact{
		seen(fact("order_id", "#1", Entity, t0), 1), // reference, oldest
		seen(fact("chatter", "x", General, t1), 50), // incidental, recent
		seen(fact("remark", "y", General, t1), 40),  // incidental
		seen(fact("phone", "555", Entity, t0), 2),   // contact
		seen(fact("price", "$10", Numeric, t0), 30), // context
		seen(fact("aside", "z", General, t1), 45),   // incidental
	}
	got := MergeFacts(existing, nil, MergeOptions{MaxFacts: 3, Now: t2})
	checkFacts(t, got, []Fact{existing[0], existing[3], existing[4]})

	got = MergeFacts(existing, nil, MergeOptions{MaxFacts: 5, Now: t2})
	// Within a tier the least recently seen goes first: remark (40).
	checkFacts(t, got, []Fact{existing[0], existing[1], existing[3], existing[4], existing[5]})
}

func TestMergeFactsDefaultCap(t *testing.T) {
	var incoming []Fact
	for i := 0; i < 150; i++ {
		incoming = append(incoming, Fact{Key: fmt.Sprintf("k%03d", i), Value: "v"})
	}
	got := MergeFacts(nil, incoming, MergeOptions{Now: t1})
	if len(got) != DefaultMaxFacts {
		t.Fatalf("len = %d, want %d", len(got), DefaultMaxFacts)
	}
	if got[0].Key != "k050" || got[99].Key != "k149" {
		t.Fatalf("kept %s..%s, want k050..k149", got[0].Key, got[99].Key)
	}
}

func TestMergeFactsDefaultNow(t *testing.T) {
	before := time.Now()
	got := MergeFacts(nil, []Fact{{Key: "k", Value: "v"}}, MergeOptions{})
	if got[0].ExtractedAt.Before(before) || got[0].ExtractedAt.After(time.Now()) {
		t.Fatalf("ExtractedAt %v not now", got[0].ExtractedAt)
	}
}

func TestMergeFactsDoesNotModifyInputs(t *testing.T) {
	existing := []Fact{fact("a", "1", Entity, t0), fact("b", "2", State, t0)}
	existing[0].Previous = "0"
	incoming := []Fact{{Key: " A ", Value: " 9 ", Category: "entity"}, {Key: "b", Remove: true}}
	ex := append([]Fact(nil), existing...)
	in := append([]Fact(nil), incoming...)
	_ = MergeFacts(existing, incoming, MergeOptions{Now: t1})
	if !reflect.DeepEqual(existing, ex) || !reflect.DeepEqual(incoming, in) || existing[0].Previous != "0" {
		t.Fatalf("inputs modified")
	}
}

func TestMergeFactsDeterministic(t *testing.T) {
	existing := []Fact{fact("a", "1", Entity, t0), fact("b", "2", State, t1), fact("c", "3", General, t0)}
	incoming := []Fact{{Key: "d", Value: "4"}, {Key: "a", Value: "x"}, {Key: "c", Remove: true}, {Key: "e", Value: "5"}}
	first := MergeFacts(existing, incoming, MergeOptions{MaxFacts: 3, Now: t2, Seq: 9})
	for i := 0; i < 50; i++ {
		if got := MergeFacts(existing, incoming, MergeOptions{MaxFacts: 3, Now: t2, Seq: 9}); !reflect.DeepEqual(got, first) {
			t.Fatalf("run %d differs:\n%s\nfirst:\n%s", i, dumpFacts(got), dumpFacts(first))
		}
	}
}

func TestMergeFactsEmpty(t *testing.T) {
	if got := MergeFacts(nil, nil, MergeOptions{}); len(got) != 0 {
		t.Fatalf("got %v", got)
	}
}
