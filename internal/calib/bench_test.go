package calib

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/standin"
	"github.com/strata-go/strata/trimmer"
)

// BenchmarkCalibratedTrim trims a 60-message history to half its price
// with calibrated weights, as a manager's Prompt does for a model
// calibrated by class (a fresh trimmer, so a cold per-trim cache, each
// time): by character class alone ("chars"), with BPE features whose
// counts are memoised from an earlier trim ("bpe-warm", every later turn
// but for its new messages), and with an empty memo ("bpe-cold", the
// first trim, or every message forgotten).
func BenchmarkCalibratedTrim(b *testing.B) {
	bpe, err := NewBPE()
	if err != nil {
		b.Fatal(err)
	}
	w := Prior()
	w[FeatBPE+numBPE-1] = 0.1
	for _, lang := range []standin.Language{standin.Korean, standin.Japanese, standin.English} {
		rng := rand.New(rand.NewPCG(1, 2))
		var msgs []llms.ChatMessage
		for i := range 60 {
			t := standin.Text(rng, lang, chars(lang, 40+rng.IntN(260)))
			if i%2 == 0 {
				msgs = append(msgs, llms.HumanChatMessage{Content: t})
			} else {
				msgs = append(msgs, llms.AIChatMessage{Content: t})
			}
		}
		est := func(bpe *BPE) trimmer.Estimator {
			return trimmer.EstimatorFunc(func(s string) int {
				if s == "" {
					return 0
				}
				return max(1, int(math.Ceil(w.Text(s, bpe))))
			})
		}
		window := trimmer.New(0, 0, est(nil)).Cost(msgs) / 2
		trim := func(bpe *BPE) { trimmer.New(window, 0, est(bpe)).Trim(msgs, "You are a helpful assistant.", 0) }
		b.Run(fmt.Sprintf("%v/chars", lang), func(b *testing.B) {
			for b.Loop() {
				trim(nil)
			}
		})
		b.Run(fmt.Sprintf("%v/bpe-warm", lang), func(b *testing.B) {
			trim(bpe)
			for b.Loop() {
				trim(bpe)
			}
		})
		b.Run(fmt.Sprintf("%v/bpe-cold", lang), func(b *testing.B) {
			for b.Loop() {
				cold, _ := NewBPE()
				trim(cold)
			}
		})
	}
}
