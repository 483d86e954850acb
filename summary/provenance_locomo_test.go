package summary_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/summary"
)

// The extractive summarizer traces what it writes on real dialogue: folded
// incrementally in chunks of 20 messages, the LoCoMo conversations give
// summaries whose facts and narrative sentences all name their messages
// (skipped when the data set is absent).
func TestExtractiveProvenanceLoCoMo(t *testing.T) {
	raw, err := os.ReadFile("../../shared/data/locomo/locomo10.json")
	if err != nil {
		t.Skipf("LoCoMo data set absent: %v", err)
	}
	var convs []struct {
		Conversation map[string]json.RawMessage `json:"conversation"`
	}
	if err := json.Unmarshal(raw, &convs); err != nil {
		t.Fatal(err)
	}
	svc := summary.NewExtractiveService()
	var facts, untracedFacts, sents, untracedSents int
	for ci, c := range convs {
		var a string
		_ = json.Unmarshal(c.Conversation["speaker_a"], &a)
		var msgs []llms.ChatMessage
		for s := 1; s <= 5; s++ {
			var turns []struct{ Speaker, Text string }
			_ = json.Unmarshal(c.Conversation[fmt.Sprintf("session_%d", s)], &turns)
			for _, tr := range turns {
				if tr.Speaker == a {
					msgs = append(msgs, llms.HumanChatMessage{Content: tr.Text})
				} else {
					msgs = append(msgs, llms.AIChatMessage{Content: tr.Text})
				}
			}
		}
		var cur *summary.Summary
		for from := 0; from < len(msgs); from += 20 {
			to := min(from+20, len(msgs))
			seqs := make([]int64, to-from)
			for i := range seqs {
				seqs[i] = int64(from + i + 1)
			}
			res, err := svc.Summarize(context.Background(), summary.Request{SessionID: "s", Messages: msgs[from:to], Seqs: seqs, Existing: cur, Incremental: cur != nil})
			if err != nil {
				continue
			}
			next := summary.Apply(cur, "s", 1, res, int64(to), summary.MergeOptions{})
			cur = &next
		}
		if cur == nil {
			continue
		}
		for _, f := range cur.Facts {
			facts++
			if f.Sources == nil {
				untracedFacts++
				t.Logf("conversation %d: untraced fact %s = %q", ci, f.Key, f.Value)
			}
		}
		sents += len(summary.NarrativeSentences(cur.Narrative))
		if !summary.Traced(cur) {
			untracedSents++
			t.Logf("conversation %d: untraced narrative (%d sources): %s", ci, len(cur.SentenceSources), untracedOf(cur))
		}
	}
	t.Logf("%d facts (%d untraced), %d narratives of %d untraced (%d sentences)", facts, untracedFacts, untracedSents, len(convs), sents)
	if untracedFacts > 0 || untracedSents > 0 {
		t.Errorf("the extractive summarizer left %d facts and %d narratives untraced", untracedFacts, untracedSents)
	}
}

// untracedOf lists the narrative sentences of s without provenance.
func untracedOf(s *summary.Summary) string {
	known := map[string]bool{}
	for _, ss := range s.SentenceSources {
		known[ss.Digest] = true
	}
	var out []string
	for _, sent := range summary.NarrativeSentences(s.Narrative) {
		if !known[summary.SentenceDigest(sent)] {
			out = append(out, fmt.Sprintf("%q", sent))
		}
	}
	return strings.Join(out, " | ")
}
