package summary_test

import (
	"context"
	"slices"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/summary"
)

// The extractive summarizer records exact provenance: each fact names the
// messages that state it (the message's own seq, not the fold's span),
// each narrative sentence the messages it copies, so a summary made from
// it is Traced; an incremental fold carries the provenance of the
// sentences it keeps.
func TestExtractiveProvenance(t *testing.T) {
	msgs := []llms.ChatMessage{
		llms.HumanChatMessage{Content: "Hi, my order ORD-5512 arrived damaged and I want a refund."},
		llms.AIChatMessage{Content: "Sorry to hear that. I can refund order ORD-5512 for $49.99."},
		llms.HumanChatMessage{Content: "Please email me at ann@example.com when it is done."},
		llms.AIChatMessage{Content: "Done. The refund of $49.99 has been issued."},
	}
	seqs := []int64{11, 12, 13, 14}
	svc := summary.NewExtractiveService()
	res, err := svc.Summarize(context.Background(), summary.Request{SessionID: "s", Messages: msgs, Seqs: seqs})
	if err != nil {
		t.Fatal(err)
	}
	sm := summary.Apply(nil, "s", 1, res, 14, summary.MergeOptions{})
	if !summary.Traced(&sm) {
		t.Fatalf("extractive summary not traced: %+v", sm)
	}
	want := map[string][]int64{"ORD-5512": {11, 12}, "ann@example.com": {13}, "$49.99": {12, 14}}
	for _, f := range sm.Facts {
		if w, ok := want[f.Value]; ok && !slices.Equal(f.Sources, w) {
			t.Errorf("fact %s = %q sources %v, want %v", f.Key, f.Value, f.Sources, w)
		}
	}
	// Erasing the e-mail's message removes it and only it.
	out := summary.Erase(sm, []int64{13})
	for _, f := range out.Facts {
		if f.Value == "ann@example.com" {
			t.Errorf("erased fact kept: %+v", f)
		}
	}
	if len(out.Facts) != len(sm.Facts)-1 {
		t.Errorf("facts %d → %d, want one fewer", len(sm.Facts), len(out.Facts))
	}
	// An incremental fold keeps the provenance of the carried sentences.
	more := []llms.ChatMessage{llms.HumanChatMessage{Content: "Also my new phone number is 555-0142."}}
	res2, err := svc.Summarize(context.Background(), summary.Request{SessionID: "s", Messages: more, Seqs: []int64{15}, Existing: &sm, Incremental: true})
	if err != nil {
		t.Fatal(err)
	}
	sm2 := summary.Apply(&sm, "s", 1, res2, 15, summary.MergeOptions{})
	if !summary.Traced(&sm2) {
		t.Fatalf("incremental summary not traced: %+v", sm2)
	}
	// Without Seqs nothing is traced: such a summary is emptied by Erase.
	res3, _ := svc.Summarize(context.Background(), summary.Request{SessionID: "s", Messages: msgs})
	if sm3 := summary.Apply(nil, "s", 1, res3, 14, summary.MergeOptions{}); summary.Traced(&sm3) {
		t.Fatalf("a summary without provenance is traced: %+v", sm3)
	}
}
