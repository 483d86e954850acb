package extractive_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	. "github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/summary/internal/extractive"
)

// extractiveNarrativeTokens is the extractive narrative's token cap that
// summary.NewExtractiveService documents.
const extractiveNarrativeTokens = 400

// t1 is the clock of the merges in these tests.
var t1 = time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)

// checkFacts fails t unless got and want hold the same keys, values,
// categories and extraction times, in order.
func checkFacts(t *testing.T, got, want []Fact) {
	t.Helper()
	type kvc struct {
		Key, Value, Category string
		ExtractedAt          time.Time
	}
	project := func(fs []Fact) (out []kvc) {
		for _, f := range fs {
			out = append(out, kvc{f.Key, f.Value, string(f.Category), f.ExtractedAt})
		}
		return out
	}
	if !reflect.DeepEqual(project(got), project(want)) {
		t.Fatalf("got:\n%s\nwant:\n%s", dumpFacts(got), dumpFacts(want))
	}
}

// dumpFacts lists facts one a line, for failure messages.
func dumpFacts(fs []Fact) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %q=%q %s stated=%v\n", f.Key, f.Value, f.Category, f.Stated)
	}
	return b.String()
}

// byKey returns the fact under key (normalised), or false.
func byKey(fs []Fact, key string) (Fact, bool) {
	for _, f := range fs {
		if NormalizeKey(f.Key) == NormalizeKey(key) {
			return f, true
		}
	}
	return Fact{}, false
}

// TestCategoriesAreSummaryCategories: the categories the extractive
// summarizer assigns are summary's, spelled alike.
func TestCategoriesAreSummaryCategories(t *testing.T) {
	for _, c := range []extractive.Category{extractive.Entity, extractive.Condition, extractive.State, extractive.Numeric, extractive.General} {
		if !Category(c).Valid() || ParseCategory(string(c)) != Category(c) {
			t.Errorf("%q is not a summary category", c)
		}
	}
}
