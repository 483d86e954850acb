package summary

import (
	"testing"

	"github.com/tmc/langchaingo/llms"
)

func TestBlocksRenderFactsThenNarrative(t *testing.T) {
	s := &Summary{Narrative: "The user wants a refund.", Facts: []Fact{
		{Key: "order_id", Value: "#1234"}, {Key: "name", Value: "Ana"},
	}}
	got := Blocks(s)
	want := []string{
		"Conversation Facts:\n- order_id: #1234\n- name: Ana",
		"Conversation Summary:\nThe user wants a refund.",
	}
	if len(got) != len(want) {
		t.Fatalf("Blocks() = %d messages, want %d", len(got), len(want))
	}
	for i, m := range got {
		sm, ok := m.(llms.SystemChatMessage)
		if !ok || sm.Content != want[i] {
			t.Errorf("block %d = %#v, want system message %q", i, m, want[i])
		}
	}
	if b := Blocks(&Summary{Narrative: " \n"}); len(b) != 0 {
		t.Errorf("blank summary rendered %d blocks", len(b))
	}
	var none *Summary
	if b := Blocks(none); b != nil {
		t.Errorf("nil summary rendered %v", b)
	}
}

func TestApplyKeepsLedgerAndNarrative(t *testing.T) {
	first := Apply(nil, "s", 7, Result{Narrative: "n1", Facts: []Fact{{Key: "order_id", Value: "#1"}}}, 10, MergeOptions{})
	if first.SessionID != "s" || first.Epoch != 7 || first.UpToSeq != 10 || first.Narrative != "n1" || len(first.Facts) != 1 {
		t.Fatalf("first = %+v", first)
	}
	// A blank narrative keeps the old one; facts left out are kept; a new
	// value of a key replaces the old one.
	next := Apply(&first, "s", 7, Result{Facts: []Fact{{Key: "Order ID", Value: "#2"}, {Key: "name", Value: "Ana"}}}, 20, MergeOptions{})
	if next.Narrative != "n1" || next.UpToSeq != 20 {
		t.Fatalf("next = %+v", next)
	}
	vals := map[string]string{}
	for _, f := range next.Facts {
		vals[NormalizeKey(f.Key)] = f.Value
	}
	if vals["order_id"] != "#2" || vals["name"] != "Ana" || len(next.Facts) != 2 {
		t.Fatalf("facts = %+v", next.Facts)
	}
}
