package memory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/strata-go/strata/summary"
)

// A phone number changed after the first fold: the facts block shows only
// the new value by default, and the old one on the same line, "(previously
// …)", when Config.ShowPreviousValues is on — never as a fact of its own.
func TestShowPreviousValues(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := hierConfig()
		cfg.ShowPreviousValues = on
		f := newFixture(t, cfg)
		f.svc.set(func(_ context.Context, call int64, req summary.Request) (summary.Result, error) {
			phone := "555-1111"
			if call > 1 {
				phone = "555-2222"
			}
			return summary.Result{Narrative: "The user gave a phone number.",
				Facts: []summary.Fact{{Key: "phone", Value: phone, Category: summary.Entity}}}, nil
		})
		ctx := context.Background()
		saveTurns(t, f.mgr, "s", 1, 11)
		if err := f.mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		saveTurns(t, f.mgr, "s", 12, 12)
		if err := f.mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		h, err := f.mgr.Load(ctx, "s", "alice")
		if err != nil || h.Mode != "hierarchical" {
			t.Fatalf("mode %s, err %v", h.Mode, err)
		}
		facts := h.Messages[0].GetContent()
		want := "- phone: 555-2222"
		if on {
			want += " (previously 555-1111)"
		}
		if !strings.Contains(facts, want+"\n") && !strings.HasSuffix(facts, want) {
			t.Fatalf("ShowPreviousValues=%v: facts block\n%s\nwant the line %q", on, facts, want)
		}
		if strings.Count(facts, "555-1111") != map[bool]int{false: 0, true: 1}[on] {
			t.Fatalf("ShowPreviousValues=%v: old value shown wrongly:\n%s", on, facts)
		}
	}
}
