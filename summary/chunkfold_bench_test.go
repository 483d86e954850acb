package summary_test

import (
	"context"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/datasets"
	"github.com/strata-go/strata/summary"
)

// chunkFoldMessages are LoCoMo's first conversations as alternating user
// and assistant messages when ../shared/data holds them, else generated
// sentences.
func chunkFoldMessages(b *testing.B) []llms.ChatMessage {
	b.Helper()
	texts, err := datasets.ReplayTexts("../../shared/data", 3, 400)
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]llms.ChatMessage, len(texts))
	for i, t := range texts {
		if i%2 == 0 {
			msgs[i] = llms.HumanChatMessage{Content: t}
		} else {
			msgs[i] = llms.AIChatMessage{Content: t}
		}
	}
	return msgs
}

// BenchmarkExtractiveChunkFold is what one chunked fold under a heavy
// write load asks of the extractive summarizer: about 100 new messages
// folded incrementally, with provenance, into the summary the previous
// folds left (Apply), chunk after chunk through the conversation. It
// reports the time per fold.
func BenchmarkExtractiveChunkFold(b *testing.B) {
	const chunk = 104
	msgs := chunkFoldMessages(b)
	svc := summary.NewExtractiveService()
	var existing *summary.Summary
	at, seq := 0, int64(0)
	for b.Loop() {
		if at+chunk > len(msgs) {
			at, existing = 0, nil
		}
		req := summary.Request{SessionID: "s", Messages: msgs[at : at+chunk], Existing: existing, Incremental: existing != nil}
		req.Seqs = make([]int64, chunk)
		for i := range req.Seqs {
			seq++
			req.Seqs[i] = seq
		}
		res, err := svc.Summarize(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		next := summary.Apply(existing, "s", 1, res, seq, summary.MergeOptions{})
		existing = &next
		at += chunk
	}
}
