package summary_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/summary"
)

// BenchmarkExtractiveProvenance compares an extractive fold of 200
// messages without provenance (no Request.Seqs) and with it.
func BenchmarkExtractiveProvenance(b *testing.B) {
	var msgs []llms.ChatMessage
	var seqs []int64
	for i := range 100 {
		msgs = append(msgs, llms.HumanChatMessage{Content: fmt.Sprintf("My order ORD-%04d arrived late, email me at u%d@example.com, I'd like a refund of $%d.50 please.", i, i, i)},
			llms.AIChatMessage{Content: fmt.Sprintf("I have issued the refund of $%d.50 for order ORD-%04d.", i, i)})
		seqs = append(seqs, int64(2*i+1), int64(2*i+2))
	}
	svc := summary.NewExtractiveService()
	for _, traced := range []bool{false, true} {
		b.Run(fmt.Sprintf("traced=%v", traced), func(b *testing.B) {
			req := summary.Request{SessionID: "s", Messages: msgs}
			if traced {
				req.Seqs = seqs
			}
			for range b.N {
				if _, err := svc.Summarize(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParityRefold measures what the parity policy asks of the
// extractive summarizer after every save above its trigger: the whole
// conversation before the verbatim window (n messages) summarized again
// from the original messages, with provenance, against the ledger of the
// previous fold, the per-message scans memoised by earlier folds. It
// reports the time per folded message: a parity session of n messages
// costs that n times per save, so its folds cost O(n²) over its life.
func BenchmarkParityRefold(b *testing.B) {
	for _, n := range []int{200, 2_000} {
		b.Run(fmt.Sprint("messages=", n), func(b *testing.B) {
			var msgs []llms.ChatMessage
			var seqs []int64
			for i := range n / 2 {
				msgs = append(msgs, llms.HumanChatMessage{Content: fmt.Sprintf("Last weekend I went to the pottery class in Lisbon with Anna %d, it starts on %d May 2023. My order ORD-%04d arrived late.", i, i%28+1, i)},
					llms.AIChatMessage{Content: fmt.Sprintf("That sounds amazing! I have issued the refund of $%d.50 for order ORD-%04d.", i, i)})
				seqs = append(seqs, int64(2*i+1), int64(2*i+2))
			}
			svc := summary.NewExtractiveService()
			req := summary.Request{SessionID: "s", Messages: msgs, Seqs: seqs}
			res, err := svc.Summarize(context.Background(), req) // the first fold: scans memoised
			if err != nil {
				b.Fatal(err)
			}
			prev := summary.Apply(nil, "s", 1, res, seqs[len(seqs)-1], summary.MergeOptions{})
			req.Existing = &prev
			for b.Loop() {
				if _, err := svc.Summarize(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/message")
		})
	}
}
