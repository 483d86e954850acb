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

func checkFacts(t *testing.T, got, want []Fact) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got:\n%s\nwant:\n%s", dumpFacts(got), dumpFacts(want))
	}
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

func TestMergeFactsEmptyValueRemoves(t *testing.T) {
	existing := []Fact{fact("a", "1", Entity, t0), fact("b", "2", State, t0), fact("c", "3", General, t0)}
	incoming := []Fact{{Key: "B", Value: ""}, {Key: "c", Value: "   "}, {Key: "unknown", Value: ""}}
	got := MergeFacts(existing, incoming, MergeOptions{Now: t1})
	checkFacts(t, got, []Fact{fact("a", "1", Entity, t0)})
}

func TestMergeFactsRemovedThenReAdded(t *testing.T) {
	existing := []Fact{fact("a", "1", Entity, t0), fact("b", "2", State, t0)}
	incoming := []Fact{{Key: "a", Value: ""}, {Key: "a", Value: "1", Category: Entity}}
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

func TestMergeFactsCapDropsOldest(t *testing.T) {
	existing := []Fact{
		fact("a", "1", General, t1),
		fact("b", "2", General, t0), // oldest
		fact("c", "3", General, t1),
		fact("d", "4", General, t0), // second oldest
	}
	incoming := []Fact{{Key: "e", Value: "5"}, {Key: "a", Value: "11"}}
	got := MergeFacts(existing, incoming, MergeOptions{MaxFacts: 3, Now: t2})
	checkFacts(t, got, []Fact{
		fact("a", "11", General, t2),
		fact("c", "3", General, t1),
		fact("e", "5", General, t2),
	})

	// Equal times: the earliest positions go first; zero times are oldest.
	existing = []Fact{fact("p", "1", General, t0), fact("q", "2", General, time.Time{}), fact("r", "3", General, t0)}
	got = MergeFacts(existing, nil, MergeOptions{MaxFacts: 1, Now: t2})
	checkFacts(t, got, []Fact{fact("r", "3", General, t0)})
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
	incoming := []Fact{{Key: " A ", Value: " 9 ", Category: "entity"}, {Key: "b", Value: ""}}
	ex := append([]Fact(nil), existing...)
	in := append([]Fact(nil), incoming...)
	_ = MergeFacts(existing, incoming, MergeOptions{Now: t1})
	checkFacts(t, existing, ex)
	checkFacts(t, incoming, in)
}

func TestMergeFactsDeterministic(t *testing.T) {
	existing := []Fact{fact("a", "1", Entity, t0), fact("b", "2", State, t1), fact("c", "3", General, t0)}
	incoming := []Fact{{Key: "d", Value: "4"}, {Key: "a", Value: "x"}, {Key: "c", Value: ""}, {Key: "e", Value: "5"}}
	first := MergeFacts(existing, incoming, MergeOptions{MaxFacts: 3, Now: t2})
	for i := 0; i < 50; i++ {
		checkFacts(t, MergeFacts(existing, incoming, MergeOptions{MaxFacts: 3, Now: t2}), first)
	}
}

func TestMergeFactsEmpty(t *testing.T) {
	if got := MergeFacts(nil, nil, MergeOptions{}); len(got) != 0 {
		t.Fatalf("got %v", got)
	}
}
