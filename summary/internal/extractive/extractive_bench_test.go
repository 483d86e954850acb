package extractive_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tmc/langchaingo/llms"

	. "github.com/strata-go/strata/summary"
)

// chatLines are templates of a long personal conversation between two
// friends: names, places, dates and events among small talk. %[1]s is a
// name, %[2]s a place, %[3]s a date, %[4]d a number.
var chatLines = []string{
	"Last weekend I went to the %[2]s pride parade with %[1]s, it was so uplifting!",
	"I finally signed up for the pottery class in %[2]s, it starts on %[3]s.",
	"That sounds amazing! How did it go?",
	"We adopted a puppy named %[1]s on %[3]s and the kids adore him.",
	"Haha, I know what you mean. Thanks for asking!",
	"I've been reading a lot lately, %[1]s recommended a book about %[2]s.",
	"My sister %[1]s is moving to %[2]s next month for a new job.",
	"I ran my first 10k in %[2]s on %[3]s, finished in %[4]d minutes.",
	"Wow, that's so cool. I'm proud of you!",
	"We're planning a camping trip to %[2]s with %[1]s in the summer.",
	"I started volunteering at the youth center, we had %[4]d kids on Friday.",
	"Yeah, it was a tough week but I'm feeling better now.",
	"I painted a sunset over the lake in %[2]s, it took me %[4]d hours.",
	"The support group meeting on %[3]s really helped me open up.",
	"Take care and talk soon!",
}

var (
	chatNames  = []string{"Caroline", "Melanie", "Jon", "Gina", "Oscar", "Luna", "Evan", "Priya", "Tomas", "Aiko"}
	chatPlaces = []string{"Boston", "Lake Tahoe", "Sweden", "Portland", "the Rockies", "Chicago", "Nara", "Lisbon"}
	chatDates  = []string{"May 7, 2023", "June 12", "3 July 2023", "August 20, 2023", "September 2", "2023-10-14"}
)

// chatMessages generates n messages of such a conversation; seed
// makes every batch's text distinct, so no memo serves a later batch.
func chatMessages(seed uint64, n int) []llms.ChatMessage {
	rng := rand.New(rand.NewPCG(seed, 42))
	out := make([]llms.ChatMessage, 0, n)
	for i := range n {
		line := fmt.Sprintf(chatLines[rng.IntN(len(chatLines))], chatNames[rng.IntN(len(chatNames))],
			chatPlaces[rng.IntN(len(chatPlaces))], chatDates[rng.IntN(len(chatDates))], 5+rng.IntN(200))
		// A distinct tail, as real messages differ.
		line += " That was the " + letterCode(seed*1000+uint64(i)) + " episode."
		if i%2 == 0 {
			out = append(out, llms.HumanChatMessage{Content: line})
		} else {
			out = append(out, llms.AIChatMessage{Content: line})
		}
	}
	return out
}

// letterCode spells n in lower-case letters: a distinct word for every n.
func letterCode(n uint64) string {
	var b []byte
	for {
		b = append(b, byte('a'+n%26))
		n /= 26
		if n == 0 {
			return string(b)
		}
	}
}

// foldedConversation folds a conversation of chunks × size messages
// incrementally, as the chunked policy does, and returns the summary.
func foldedConversation(tb testing.TB, svc Service, chunks, size int) *Summary {
	tb.Helper()
	var cur *Summary
	for c := range chunks {
		msgs := chatMessages(uint64(c+1), size)
		res, err := svc.Summarize(context.Background(), Request{SessionID: "bench", Messages: msgs, Existing: cur, Incremental: cur != nil})
		if err != nil {
			tb.Fatal(err)
		}
		next := Apply(cur, "bench", 1, res, int64((c+1)*size), MergeOptions{})
		cur = &next
	}
	return cur
}

// BenchmarkExtractiveIncrementalFold measures one incremental fold of the
// extractive summarizer (Summarize and Apply) of a 16-message chunk onto
// the summary of a long conversation: the work of the background fold
// under the chunked policy. Every iteration folds new text onto the same
// existing summary. Besides wall time it reports the process's CPU time per
// fold (cpu-ns/op, where the platform gives it), which is what limits
// background folding and what a busy machine does not inflate.
func BenchmarkExtractiveIncrementalFold(b *testing.B) {
	for _, history := range []int{40, 400} {
		b.Run(fmt.Sprintf("history=%dchunks", history), func(b *testing.B) {
			svc := NewExtractiveService()
			existing := foldedConversation(b, svc, history, 16)
			batches := make([][]llms.ChatMessage, b.N)
			for i := range batches {
				batches[i] = chatMessages(uint64(1_000_000+i), 16)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU()
			for i := range b.N {
				res, err := svc.Summarize(context.Background(), Request{SessionID: "bench", Messages: batches[i], Existing: existing, Incremental: true})
				if err != nil {
					b.Fatal(err)
				}
				_ = Apply(existing, "bench", 1, res, existing.UpToSeq+16, MergeOptions{})
			}
			if cpu > 0 {
				b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
