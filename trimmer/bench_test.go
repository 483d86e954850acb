package trimmer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

// benchHistory is a conversation of n turns behind two memory messages:
// every third turn runs a two-call tool group.
func benchHistory(n int) []llms.ChatMessage {
	msgs := []llms.ChatMessage{
		sys("Conversation Facts:\n- customer: ACME\n- order: #1234"),
		sys("Conversation Summary:\nThe customer asked about a delayed order."),
	}
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 8)
	for i := range n {
		msgs = append(msgs, user(fmt.Sprintf("question %d: %s", i, filler)))
		if i%3 == 0 {
			a, b := fmt.Sprintf("t%d-a", i), fmt.Sprintf("t%d-b", i)
			msgs = append(msgs,
				calls("", a, b),
				result(b, fmt.Sprintf(`{"status":"shipped","turn":%d}`, i)),
				result(a, fmt.Sprintf(`{"eta":"2 days","turn":%d}`, i)),
			)
		}
		msgs = append(msgs, ai(fmt.Sprintf("answer %d: %s", i, filler)))
	}
	return append(msgs, user("and now?"))
}

func BenchmarkTrim(b *testing.B) {
	for _, turns := range []int{100, 500, 2000} {
		msgs := benchHistory(turns)
		window := New(0, 0, nil).Cost(msgs) / 2
		b.Run(fmt.Sprintf("turns=%d/warm", turns), func(b *testing.B) {
			tr := New(window, 0, nil)
			tr.Trim(msgs, "You are a helpful assistant.", 0) // fill the cache
			b.ReportAllocs()
			for b.Loop() {
				tr.Trim(msgs, "You are a helpful assistant.", 0)
			}
		})
		b.Run(fmt.Sprintf("turns=%d/cold", turns), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				New(window, 0, nil).Trim(msgs, "You are a helpful assistant.", 0)
			}
		})
	}
}

func BenchmarkEstimator(b *testing.B) {
	texts := map[string]string{
		"short": "Could you check whether order #1234 has shipped yet? Thanks!",
		"4KB":   strings.Repeat("The parcel left the warehouse 倉庫 on Monday 😀 ", 80),
	}
	exact, err := NewTiktokenEstimator(EncodingCL100kBase)
	if err != nil {
		b.Fatal(err)
	}
	estimators := []struct {
		name string
		est  Estimator
	}{
		{"script-uncached", EstimatorFunc(EstimateScript)},
		{"script-cached", NewEstimator()},
		{"tiktoken-cl100k", exact},
		{"tiktoken-cl100k-cached", NewCachedEstimator(exact)},
	}
	for _, size := range []string{"short", "4KB"} {
		for _, e := range estimators {
			b.Run(size+"/"+e.name, func(b *testing.B) {
				text := texts[size]
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				for b.Loop() {
					e.est.Estimate(text)
				}
			})
		}
	}
}

// BenchmarkCachedEstimatorParallel prices a window of 40 distinct messages
// of about 200 bytes, already cached, from every P at once: what the loads
// of many sessions do with one manager's shared estimator.
func BenchmarkCachedEstimatorParallel(b *testing.B) {
	texts := make([]string, 40)
	for i := range texts {
		texts[i] = fmt.Sprintf("message %d: %s", i, strings.Repeat("we talked about the trip to Lisbon and the museum ", 4))
	}
	est := NewEstimator()
	for _, t := range texts {
		est.Estimate(t)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			est.Estimate(texts[i%len(texts)])
			i++
		}
	})
}
