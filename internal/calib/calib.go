// Package calib learns, per model, how a provider counts the tokens of a
// prompt, so that the memory manager can price the next prompt as the
// provider will count it.
//
// A prompt is described by a few features: how many characters of each
// class its texts hold (internal/text's classes: ASCII letters, digits,
// spaces, line breaks, punctuation, Hangul, kana, Han, CJK punctuation,
// emoji, other) and their runs, and, with a BPE, how many tokens a real
// byte-pair encoding (o200k_base) spends on its Hangul, its kana, its Han
// and the rest of its texts; or, when prompts are priced by an estimator
// other than the script-aware default (an exact tokenizer, a configured
// one), that estimator's count of its texts; its number of messages; and
// a constant.
// The provider's count is modelled as a weighted sum of the features,
//
//	reported ≈ Σ w_class × characters_class + w_base × base + w_msg × messages + w_0
//
// and the weights are fitted to the model's recent reports by ridge
// regression on relative errors, pulled toward the default estimator's
// rates and OpenAI's chat framing (3 tokens per message plus its role, 3
// more priming the reply), so that one report already moves the weights
// of the classes that prompt is made of, three give a good fit, and a
// class no report has seen keeps its default rate. The BPE features start
// at weight 0: characters of one class cost a tokenizer more or less
// depending on the words they make (a Hangul syllable between two thirds
// of a token and two), which a real encoding's count tells where a
// character count cannot, and the fit weighs the two by how well each
// predicts the provider's reports. Each sample's weight
// is capped by how far it lies from the fit of the others (a Huber
// weight), so that one odd report moves little. The weights that price
// prompts are the fitted ones raised by a margin: a small constant plus a
// high quantile of how much the fit underestimated recent reports before
// it saw them.
//
// One weighted sum prices a mix of scripts that a single ratio cannot: a
// Korean prompt with a long English system prompt and JSON tool results
// is priced by the rate of each of its parts.
package calib

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/chatmsg"
	"github.com/strata-go/strata/internal/text"
)

// Framing of a chat prompt as OpenAI counts it: every message costs its
// content, 3 tokens of separators and its role (1 token); the reply is
// primed with 3 more. They are the prior weights of the messages and
// constant features.
const (
	PerMessage   = 4
	ReplyPriming = 3
)

// The features of a prompt. Indices 0 to text.NumClasses−1 are the
// character counts of the classes, the next text.NumClasses their runs
// (text.Tally).
const (
	// FeatRuns is the index of the first class's runs.
	FeatRuns = int(text.NumClasses)
	// FeatBPE is the index of the first of the BPE features: the tokens
	// o200k_base spends on the prompt's Hangul, kana, Han and the rest of
	// its texts (see BPE), in that order; 0 without a BPE.
	FeatBPE = 2 * int(text.NumClasses)
	// FeatBase is the base estimator's count of the prompt's texts, for
	// a model priced by an estimator other than the script-aware default
	// (its class features are then 0).
	FeatBase = FeatBPE + numBPE
	// FeatMessages is the number of messages.
	FeatMessages = FeatBase + 1
	// FeatConst is 1.
	FeatConst = FeatBase + 2
	// NumFeatures is the length of a Vector.
	NumFeatures = FeatBase + 3
)

// Vector holds one value per feature: a prompt's features, or the weights
// that price them.
type Vector [NumFeatures]float64

// Dot returns Σ v_i × w_i.
func (v Vector) Dot(w Vector) float64 {
	s := 0.0
	for i := range v {
		s += v[i] * w[i]
	}
	return s
}

// Content returns the weighted sum of v's content features (classes and
// base), leaving out the framing (messages and constant).
func (v Vector) Content(w Vector) float64 {
	s := 0.0
	for i := range FeatMessages {
		s += v[i] * w[i]
	}
	return s
}

// Text returns what weights w price one text at before rounding: its
// class features (and, with a BPE, its BPE features) weighted, and at
// least MinRatio of the default estimate (the prior's), whatever the
// weights of its runs and BPE features.
func (w Vector) Text(s string, bpe *BPE) float64 {
	var t text.Tally
	t.Add(s)
	x := tallyVector(t)
	bpe.add(&x, s, t)
	return max(x.Dot(w), MinRatio*x.Dot(Prior()))
}

// tallyVector returns the class features of t.
func tallyVector(t text.Tally) Vector {
	var v Vector
	for c := range text.NumClasses {
		v[c], v[FeatRuns+int(c)] = float64(t.Chars[c]), float64(t.Runs[c])
	}
	return v
}

// Prior returns the weights before any report: the script-aware default
// estimator's rates per class (a quarter token per ASCII character, two
// thirds per CJK character, one per emoji, a third per other character)
// and nothing per run or BPE token, the base estimator's count as it is, and OpenAI's
// framing.
func Prior() Vector {
	var p Vector
	for c := range text.NumClasses {
		switch {
		case c.ASCII():
			p[c] = 1.0 / 4
		case c.CJK():
			p[c] = 2.0 / 3
		case c == text.ClassEmoji:
			p[c] = 1
		default:
			p[c] = 1.0 / 3
		}
	}
	p[FeatBase], p[FeatMessages], p[FeatConst] = 1, PerMessage, ReplyPriming
	return p
}

// scale is the size of a plausible change of each weight.
func scale() Vector {
	s := Prior()
	for c := range text.NumClasses {
		s[FeatRuns+int(c)] = runScale
	}
	for i := range numBPE {
		s[FeatBPE+i] = bpeScale
	}
	return s
}

// ClassFeatures returns the features of a prompt priced by character
// class: the class counts of every text the trimmer prices in it (each
// message's content and, for an assistant message, each tool call's name
// and arguments) and of toolsText (see ToolsText), with a BPE the BPE
// features of those texts, its number of messages (nil ones left out) and
// the constant.
func ClassFeatures(prompt []llms.ChatMessage, toolsText string, bpe *BPE) Vector {
	var v Vector
	addText := func(s string) {
		var t text.Tally
		t.Add(s)
		x := tallyVector(t)
		bpe.add(&x, s, t)
		for i := range v {
			v[i] += x[i]
		}
	}
	n := 0
	for _, m := range prompt {
		if m = chatmsg.Value(m); m == nil {
			continue
		}
		n++
		addText(m.GetContent())
		for _, fc := range chatmsg.ToolCalls(m) {
			addText(fc.Name + fc.Arguments)
		}
	}
	addText(toolsText)
	v[FeatMessages], v[FeatConst] = float64(n), 1
	return v
}

// BaseFeatures returns the features of a prompt priced by a base
// estimator: its count of the prompt's texts (tool definitions included)
// and the number of messages.
func BaseFeatures(content, messages int) Vector {
	var v Vector
	v[FeatBase], v[FeatMessages], v[FeatConst] = float64(content), float64(messages), 1
	return v
}

// Bounds and constants of a Table.
const (
	// MaxModels bounds the models a Table remembers; the least recently
	// used is forgotten beyond it.
	MaxModels = 256
	// Window is the number of recent reports kept per model.
	Window = 64
	// Margin is the least the price exceeds the fit by: a sixty-fourth,
	// so that a prompt whose texts differ a little from the recent ones
	// still fits.
	Margin = 1.0 / 64
	// Quantile of the fit's recent underestimates added to Margin.
	Quantile = 0.9
	// MaxModelLen bounds a model name (longer names are cut).
	MaxModelLen = 128
	// MinRatio and MaxRatio bound a plausible report: a provider counting
	// a prompt's texts less than a quarter or more than eight times the
	// default estimate is reporting something else (a cached or
	// aggregated count, another request). They also bound each fitted
	// weight against its prior.
	MinRatio = 0.25
	MaxRatio = 8.0
	// MaxReported bounds a plausible prompt count.
	MaxReported = 10_000_000
)

// Fitting constants. Each weight moves in units of its scale (its prior,
// or runScale tokens per run for the runs, whose prior is 0); the ridge
// penalties are in relative terms: a weight moving by one unit costs as
// much as a report missed by √ridge of its count. huberMin is the floor
// of the residual beyond which a report weighs less; irlsRounds the
// rounds of reweighting.
const (
	ridgeContent = 1.0 / 256
	ridgeFraming = 1.0 / 16
	runScale     = 0.5
	bpeScale     = 4
	huberMin     = 0.03
	irlsRounds   = 3
)

// ErrImplausible is wrapped by the error Observe returns for a report it
// refuses: a count that is not positive, absurdly large, or too far from
// the estimate to be about the same prompt.
var ErrImplausible = errors.New("calib: implausible usage report")

// ErrUnknownModel is wrapped by the error Observe returns for a model that
// was never priced through the Table (see Price).
var ErrUnknownModel = errors.New("calib: usage reported for a model never priced")

// Sample is what one report says about a prompt: the provider's count
// and the prompt's features.
type Sample struct {
	Reported int
	Features Vector
}

// check returns an error when the sample is not plausible.
func (s Sample) check() error {
	x := s.Features
	for _, f := range x {
		if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%w: feature %v", ErrImplausible, f)
		}
	}
	p := Prior()
	content := x.Content(p)
	switch {
	case s.Reported <= 0:
		return fmt.Errorf("%w: prompt count %d", ErrImplausible, s.Reported)
	case s.Reported > MaxReported:
		return fmt.Errorf("%w: prompt count %d over %d", ErrImplausible, s.Reported, MaxReported)
	case content <= 0:
		return fmt.Errorf("%w: empty prompt", ErrImplausible)
	}
	r := (float64(s.Reported) - p[FeatMessages]*x[FeatMessages] - p[FeatConst]*x[FeatConst]) / content
	if r < MinRatio || r > MaxRatio {
		return fmt.Errorf("%w: %d tokens reported for a prompt estimated at %.0f tokens of text in %.0f messages",
			ErrImplausible, s.Reported, content, x[FeatMessages])
	}
	return nil
}

// Table holds the calibrations of a manager: safe for concurrent use, and
// bounded: at most MaxModels models, each with its last Window reports
// (about 15 KB a model).
type Table struct {
	mu     sync.Mutex
	models *simplelru.LRU[string, *fit]
}

// fit is one model's recent reports and the weights fitted to them.
type fit struct {
	ring  [Window]Sample
	n     int             // reports so far (the ring holds min(n, Window))
	under [Window]float64 // relative underestimates of the fit before each report, once fitted
	nu    int
	w     Vector // fitted weights (Prior before any report)
	price Vector // w raised by the margin
}

// New returns an empty Table.
func New() *Table {
	lru, err := simplelru.NewLRU[string, *fit](MaxModels, nil)
	if err != nil {
		panic("calib: invalid size") // unreachable: MaxModels > 0
	}
	return &Table{models: lru}
}

func norm(model string) string {
	if len(model) > MaxModelLen {
		return model[:MaxModelLen]
	}
	return model
}

// Price returns the weights to price model's prompts with (Prior before
// any report) and how many reports they rest on. It registers model, so
// that reports for it are accepted afterwards.
func (t *Table) Price(model string) (Vector, int) {
	model = norm(model)
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.models.Get(model)
	if !ok {
		f = &fit{w: Prior(), price: Prior()}
		t.models.Add(model, f)
	}
	return f.price, f.n
}

// Fitted returns the weights fitted to model's recent reports: the best
// guess of how the provider counts, without the margin of the price
// (Price); false before any report. Price, not Fitted, prices prompts.
func (t *Table) Fitted(model string) (Vector, bool) {
	model = norm(model)
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.models.Peek(model)
	if !ok || f.n == 0 {
		return Vector{}, false
	}
	return f.w, true
}

// Observe records one report for model, which must have been priced
// (Price) and not forgotten since, and fits the model's weights again; a
// refused report (ErrImplausible, ErrUnknownModel) changes nothing.
func (t *Table) Observe(model string, s Sample) error {
	model = norm(model)
	if err := s.check(); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.models.Get(model)
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownModel, model)
	}
	f.add(s)
	return nil
}

// Len reports how many models the table holds.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.models.Len()
}

// add records s and fits again.
func (f *fit) add(s Sample) {
	if f.n > 0 {
		y := float64(s.Reported)
		f.under[f.nu%Window] = max(0, (y-s.Features.Dot(f.w))/y)
		f.nu++
	}
	f.ring[f.n%Window] = s
	f.n++
	f.w = solve(f.ring[:min(f.n, Window)])
	m := Margin
	if k := min(f.nu, Window); k > 0 {
		u := slices.Clone(f.under[:k])
		slices.Sort(u)
		m += u[int(math.Ceil(Quantile*float64(k)))-1]
	}
	for i := range f.price {
		f.price[i] = f.w[i] * (1 + m)
	}
}

// solve fits weights to samples: w = p + s ⊙ δ, δ minimising
//
//	Σ h_i (r_i − z_i·δ)² + Σ λ_j δ_j²
//
// where r_i = (y_i − p·x_i) ÷ y_i is the prior's relative error on sample
// i, z_ij = s_j x_ij ÷ y_i the share of the count a unit of δ_j gives feature
// j, λ_j the ridge penalty and h_i a Huber weight (1 within a threshold of
// the fit's residual, less beyond it), refined over a few rounds; s is
// the weights' scale (scale). Each weight stays within [MinRatio,
// MaxRatio] of its prior, a run's within ± MaxRatio × runScale (Text
// keeps every text's price above MinRatio of the default estimate).
func solve(samples []Sample) Vector {
	p, sc := Prior(), scale()
	n := len(samples)
	z := make([]Vector, n)
	r := make([]float64, n)
	h := make([]float64, n)
	for i, s := range samples {
		y := float64(s.Reported)
		for j := range NumFeatures {
			z[i][j] = sc[j] * s.Features[j] / y
		}
		r[i] = (y - s.Features.Dot(p)) / y
		h[i] = 1
	}
	var delta Vector
	for round := range irlsRounds {
		var a [NumFeatures][NumFeatures]float64
		var b Vector
		for i := range z {
			for j := range NumFeatures {
				if z[i][j] == 0 {
					continue
				}
				b[j] += h[i] * z[i][j] * r[i]
				for k := range NumFeatures {
					a[j][k] += h[i] * z[i][j] * z[i][k]
				}
			}
		}
		for j := range NumFeatures {
			a[j][j] += ridgeContent
			if j >= FeatMessages {
				a[j][j] += ridgeFraming - ridgeContent
			}
		}
		delta = cholesky(a, b)
		if round == irlsRounds-1 || n < 3 {
			break
		}
		// Huber weights from the residuals of this fit.
		e := make([]float64, n)
		for i := range z {
			e[i] = math.Abs(r[i] - z[i].Dot(delta))
		}
		s := slices.Clone(e)
		slices.Sort(s)
		k := max(huberMin, 3*1.4826*s[n/2])
		for i := range h {
			h[i] = 1
			if e[i] > k {
				h[i] = k / e[i]
			}
		}
	}
	var w Vector
	for j := range NumFeatures {
		lo, hi := p[j]*MinRatio, p[j]*MaxRatio
		if j >= FeatRuns && j < FeatBase { // runs and BPE tokens, prior 0
			lo, hi = -sc[j]*MaxRatio, sc[j]*MaxRatio
		}
		if j < FeatRuns && slices.Contains(bpeClasses[:], text.Class(j)) {
			lo = 0 // its BPE tokens may price it instead
		}
		w[j] = min(max(p[j]+sc[j]*delta[j], lo), hi)
	}
	return w
}

// cholesky solves a·x = b for a symmetric positive definite a (the ridge
// makes it so).
func cholesky(a [NumFeatures][NumFeatures]float64, b Vector) Vector {
	var l [NumFeatures][NumFeatures]float64
	for i := range NumFeatures {
		for j := range i + 1 {
			s := a[i][j]
			for k := range j {
				s -= l[i][k] * l[j][k]
			}
			if i == j {
				l[i][i] = math.Sqrt(max(s, 1e-12))
			} else {
				l[i][j] = s / l[j][j]
			}
		}
	}
	var y, x Vector
	for i := range NumFeatures {
		s := b[i]
		for k := range i {
			s -= l[i][k] * y[k]
		}
		y[i] = s / l[i][i]
	}
	for i := NumFeatures - 1; i >= 0; i-- {
		s := y[i]
		for k := i + 1; k < NumFeatures; k++ {
			s -= l[k][i] * x[k]
		}
		x[i] = s / l[i][i]
	}
	return x
}

// ToolsText is the text of tool definitions that is estimated for them:
// their JSON, as OpenAI-style clients send it.
func ToolsText(tools []llms.Tool) string {
	if len(tools) == 0 {
		return ""
	}
	b, err := json.Marshal(tools)
	if err != nil {
		return fmt.Sprint(tools)
	}
	return string(b)
}
