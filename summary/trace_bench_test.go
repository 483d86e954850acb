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
