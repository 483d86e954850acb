package runner

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/bench/internal/data"
	"github.com/strata-go/strata/trimmer"
)

// runesOver4 is what langchaingo counts when tiktoken fails, which for
// llms.CountTokens("", …) — ConversationTokenBuffer's call — is always.
func runesOver4(s string) int { return utf8.RuneCountInString(s) / 4 }

// estError is an estimator's error against an exact count over a corpus.
type estError struct {
	total     float64 // Σ estimate ÷ Σ exact
	meanAbs   float64 // mean |estimate − exact| ÷ exact, per text
	p95Abs    float64
	underRate float64 // share of texts under-estimated
}

func measureError(texts []string, est, exact func(string) int) estError {
	var se, sx int
	var rel []float64
	under := 0
	for _, t := range texts {
		e, x := est(t), exact(t)
		se += e
		sx += x
		if x > 0 {
			rel = append(rel, math.Abs(float64(e-x))/float64(x))
		}
		if e < x {
			under++
		}
	}
	slices.Sort(rel)
	out := estError{total: ratio(float64(se), float64(sx)), underRate: ratio(float64(under), float64(len(texts)))}
	if len(rel) > 0 {
		sum := 0.0
		for _, r := range rel {
			sum += r
		}
		out.meanAbs = sum / float64(len(rel))
		out.p95Abs = rel[min(len(rel)-1, int(math.Ceil(0.95*float64(len(rel))))-1)]
	}
	return out
}

// throughput times passes over texts until minTime and returns the time
// per text and the bytes per second.
func throughput(texts []string, minTime time.Duration, fn func(string) int) (perText time.Duration, mbps float64) {
	size := 0
	for _, t := range texts {
		size += len(t)
	}
	sink := 0
	passes := 0
	began := time.Now()
	for passes == 0 || time.Since(began) < minTime {
		for _, t := range texts {
			sink += fn(t)
		}
		passes++
	}
	el := time.Since(began)
	_ = sink
	return el / time.Duration(passes*len(texts)), float64(size*passes) / el.Seconds() / 1e6
}

func runTokenEstimation(_ context.Context, r *runner, out *sectionOut) error {
	defer silenceStdLog()()
	locomo, err := r.loadLoCoMo()
	if err != nil {
		return err
	}
	cl, err := trimmer.NewTiktokenEstimator(trimmer.EncodingCL100kBase)
	if err != nil {
		return err
	}
	o2, err := trimmer.NewTiktokenEstimator(trimmer.EncodingO200kBase)
	if err != nil {
		return err
	}
	loc := locomo.Texts
	cjk := data.CJKTexts()

	out.printf("Estimators against exact tiktoken counts (offline BPE files, `trimmer.NewTiktokenEstimator`) on every LoCoMo message text (%s texts) and on a small hand-written CJK sample (%d chat messages in Chinese, Japanese and Korean, `bench/internal/data/cjk.go`). **Strata script-aware** is `trimmer.EstimateScript`, the default estimator behind `trimmer.NewEstimator()`; **runes/4** is what langchaingo counts whenever tiktoken fails — always for `llms.CountTokens(\"\", …)`, the call `ConversationTokenBuffer` makes. Total = Σ estimate ÷ Σ exact; the per-message columns are |estimate − exact| ÷ exact.\n\n",
		fmtInt(len(loc)), len(cjk))

	type est struct {
		name string
		fn   func(string) int
	}
	ests := []est{
		{"Strata script-aware", trimmer.EstimateScript},
		{"runes/4 (langchaingo fallback)", runesOver4},
	}
	refs := []est{{"cl100k_base", cl.Estimate}, {"o200k_base", o2.Estimate}}
	out.printf("%s", r.env.provenance(false))
	rows := [][]string{}
	for _, corpus := range []struct {
		name  string
		texts []string
	}{{"LoCoMo", loc}, {"CJK", cjk}} {
		for _, ref := range refs {
			for _, e := range ests {
				m := measureError(corpus.texts, e.fn, ref.fn)
				rows = append(rows, []string{corpus.name, ref.name, e.name, fmtRatio(m.total), pctStr(m.meanAbs), pctStr(m.p95Abs), pctStr(m.underRate)})
				if corpus.name == "CJK" && ref.name == "cl100k_base" && e.name == "Strata script-aware" {
					rn := measureError(corpus.texts, runesOver4, ref.fn)
					out.headline("Token estimation (§5): on CJK text Strata's script-aware estimate totals %s of exact cl100k (mean per-message error %s) where langchaingo's runes/4 totals %s (error %s).",
						fmtRatio(m.total), pctStr(m.meanAbs), fmtRatio(rn.total), pctStr(rn.meanAbs))
				}
			}
		}
	}
	out.printf("**Error against exact counts**\n\n%s\n", mdTable([]string{"text", "exact reference", "estimator", "total ÷ exact", "mean per-message error", "p95 per-message error", "under-estimated messages"}, rows))

	// Speed over the LoCoMo texts.
	r.progress("  token estimation: speed")
	cached := trimmer.NewEstimator()
	for _, t := range loc {
		cached.Estimate(t) // warm: every text cached
	}
	speeds := []est{
		{"tiktoken cl100k_base, cached encoder (exact; baseline)", cl.Estimate},
		{"tiktoken o200k_base, cached encoder (exact)", o2.Estimate},
		{"Strata script-aware (`trimmer.EstimateScript`)", trimmer.EstimateScript},
		{"Strata default (`trimmer.NewEstimator()`), every text cached", cached.Estimate},
		{"runes/4", runesOver4},
		{"`llms.CountTokens(\"\", …)` (runes/4 + a silenced log call)", func(s string) int { return llms.CountTokens("", s) }},
	}
	rows = rows[:0]
	var base time.Duration
	for i, s := range speeds {
		per, mbps := throughput(loc, r.p.estMinTime, s.fn)
		if i == 0 {
			base = per
		}
		rows = append(rows, []string{s.name, fmtDur(per), fmt.Sprintf("%.1f", mbps), fmtRatio(ratio(float64(base), float64(per)))})
	}
	out.printf("**Speed** over the LoCoMo texts (mean %d bytes each), repeated for at least %s per estimator:\n\n%s\n", meanLen(loc), r.p.estMinTime, mdTable([]string{"estimator", "time per text", "MB/s", "speed-up over exact cl100k"}, rows))

	// The exact counter: cached encoder vs llms.CountTokens with a model name.
	r.progress("  token estimation: llms.CountTokens(\"gpt-4\", …) on %d texts", r.p.countTokensTexts)
	sample := loc[:min(r.p.countTokensTexts, len(loc))]
	mismatch := 0
	lcTimes := make(samples, 0, len(sample))
	for _, t := range sample {
		t0 := time.Now()
		n := llms.CountTokens("gpt-4", t)
		lcTimes = append(lcTimes, time.Since(t0))
		if n != cl.Estimate(t) {
			mismatch++
		}
	}
	cachedPer, _ := throughput(sample, r.p.estMinTime, cl.Estimate)
	lcPer := lcTimes.mean()
	out.printf("**The exact counter's cost**: langchaingo's `llms.CountTokens(\"gpt-4\", text)` gets the encoding anew on every call (tiktoken-go rebuilds its BPE tables each time) while Strata's `trimmer.NewTiktokenEstimator` builds the encoder once and shares it. Same %d texts, same counts (%d mismatches):\n\n", len(sample), mismatch)
	out.printf("%s", r.env.provenance(false))
	out.printf("%s\n", mdTable([]string{"exact counter", "time per call", "÷ cached encoder"}, [][]string{
		{"Strata `trimmer.NewTiktokenEstimator(cl100k_base)` (cached encoder; baseline)", fmtDur(cachedPer), "1.00×"},
		{"langchaingo `llms.CountTokens(\"gpt-4\", …)`", fmtDur(lcPer), fmtRatio(ratio(float64(lcPer), float64(cachedPer)))},
	}))
	out.headline("Exact counting (§5): `llms.CountTokens(\"gpt-4\", …)` costs %s per call vs %s with Strata's cached tiktoken encoder — %s slower, same counts.",
		fmtDur(lcPer), fmtDur(cachedPer), fmtRatio(ratio(float64(lcPer), float64(cachedPer))))
	if mismatch > 0 {
		return fmt.Errorf("llms.CountTokens(\"gpt-4\") and the cached cl100k encoder disagree on %d of %d texts", mismatch, len(sample))
	}
	return nil
}

func meanLen(texts []string) int {
	if len(texts) == 0 {
		return 0
	}
	n := 0
	for _, t := range texts {
		n += len(t)
	}
	return n / len(texts)
}
