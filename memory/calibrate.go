package memory

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/calib"
	"github.com/strata-go/strata/internal/chatmsg"
	"github.com/strata-go/strata/internal/usage"
	"github.com/strata-go/strata/trimmer"
)

// pricing is what a manager and its model views (ForModel) share to price
// prompts as each model's provider counts them.
type pricing struct {
	cal        *calib.Table
	defaultEst bool // Config.Estimator was not set: a model's exact tokenizer may replace it

	mu    sync.Mutex
	exact map[string]*trimmer.Trimmer // tiktoken encoding → trimmer pricing with it

	bpeOnce sync.Once
	bpe     *calib.BPE // the BPE features of models calibrated by class; nil if it could not be loaded
}

func newPricing(defaultEst bool) *pricing {
	return &pricing{cal: calib.New(), defaultEst: defaultEst, exact: map[string]*trimmer.Trimmer{}}
}

// ForModel returns a view of the manager for one model, e.g. "gpt-4o" (as
// passed to llms.WithModel): the same sessions, store and background work,
// with prompts priced as that model's provider counts them. The view's
// Prompt prices with the model's exact offline tokenizer when no
// Config.Estimator was set and trimmer.TiktokenEncodingForModel knows the
// model, and, once ObserveUsage has reported the provider's counts, prices
// as it learned from them: with no Config.Estimator set, at a rate per
// character class (ASCII letters, digits, spaces, punctuation, Hangul,
// kana, Han, …, and the tokens a real byte-pair encoding spends on the
// Hangul, kana, Han and rest of each text, fitted to the recent reports by
// regression pulled toward the default estimator's rates), so that a prompt mixing scripts, JSON
// and code is priced by what each of its parts costs; otherwise the
// estimator's count scaled. What it learns is shared by every view of the
// same model, and so by all its sessions; the manager keeps the
// calibrations of at most a bounded number of models, forgetting the
// least recently used. The view's Config().Estimator is the model's estimator as
// calibrated at the time of the call. The manager itself is the view of
// the model "". A view is not a second manager: closing it closes the
// manager.
func (m *Manager) ForModel(model string) *Manager {
	v := *m
	v.model = model
	return &v
}

// ObserveUsage reports what the provider counted for a prompt this view
// built (Prompt), so that the next prompts of its model are priced as the
// provider counts them: prompt is the message list sent (system prompt
// included), tools the tool definitions sent beside it, and info the
// GenerationInfo of the response's choice (langchaingo's openai, googleai,
// anthropic and bedrock clients report the prompt's tokens there). A
// langchaingo user who calls the model directly calls it after every
// reply; agent.Agent does it for every call it makes.
//
// A report that cannot be about the prompt changes nothing and returns an
// error: no prompt token count in info (absent, zero, negative or not a
// number), a count above ten million or outside a quarter to eight times
// the estimate, an empty prompt, or a model this manager never priced a
// prompt for.
func (m *Manager) ObserveUsage(prompt []llms.ChatMessage, tools []llms.Tool, info map[string]any) error {
	reported, _, _ := usage.Tokens(info)
	if reported <= 0 {
		if n, ok := info["PromptTokens"]; ok {
			return fmt.Errorf("memory: usage of model %q: prompt token count %v is not a positive number", m.model, n)
		}
		return fmt.Errorf("memory: usage of model %q: the report holds no prompt token count", m.model)
	}
	err := m.price.cal.Observe(m.model, calib.Sample{Reported: reported, Features: m.features(prompt, tools)})
	if err != nil {
		if errors.Is(err, calib.ErrUnknownModel) {
			return fmt.Errorf("memory: usage of model %q: no prompt was priced for this model (build it with ForModel(%q).Prompt): %w", m.model, m.model, err)
		}
		return fmt.Errorf("memory: usage of model %q: %w", m.model, err)
	}
	return nil
}

// baseTrimmer returns the trimmer that prices with the model's base
// estimator: its exact tokenizer when it has one and no estimator was
// configured, else the configured (or default) one. exact says which.
func (m *Manager) baseTrimmer() (t *trimmer.Trimmer, exact bool) {
	if !m.price.defaultEst {
		return m.cost, false
	}
	enc := trimmer.TiktokenEncodingForModel(m.model)
	if enc == "" {
		return m.cost, false
	}
	m.price.mu.Lock()
	defer m.price.mu.Unlock()
	if t, ok := m.price.exact[enc]; ok {
		return t, true
	}
	est, err := trimmer.NewTiktokenEstimator(enc)
	if err != nil {
		m.log.Warn("strata memory: exact tokenizer unavailable, pricing with the estimator", "model", m.model, "error", err)
		return m.cost, false
	}
	t = trimmer.New(m.cfg.ContextWindowTokens, m.cfg.OutputReserveTokens, est)
	m.price.exact[enc] = t
	return t, true
}

// bpe returns the counter of the BPE features of the models calibrated by
// character class, loading it on first use (nil, logged, when it cannot
// be loaded: the fit then does without those features).
func (m *Manager) bpe() *calib.BPE {
	m.price.bpeOnce.Do(func() {
		b, err := calib.NewBPE()
		if err != nil {
			m.log.Warn("strata memory: BPE features unavailable, calibrating by character class alone", "error", err)
			return
		}
		m.price.bpe = b
	})
	return m.price.bpe
}

// byClass reports whether the view's model is calibrated by character
// class: when its prompts are priced by the script-aware default
// estimator (no Config.Estimator set, no exact tokenizer for the model);
// otherwise the calibration scales the base estimator's count.
func (m *Manager) byClass() bool {
	_, exact := m.baseTrimmer()
	return m.price.defaultEst && !exact
}

// features returns the calibration's features of a prompt sent with tools
// (see calib.ClassFeatures and calib.BaseFeatures).
func (m *Manager) features(prompt []llms.ChatMessage, tools []llms.Tool) calib.Vector {
	toolsText := calib.ToolsText(tools)
	if m.byClass() {
		return calib.ClassFeatures(prompt, toolsText, m.bpe())
	}
	base, _ := m.baseTrimmer()
	n := 0
	for _, msg := range prompt {
		if chatmsg.Value(msg) != nil {
			n++
		}
	}
	return calib.BaseFeatures(base.Cost(prompt)-n*trimmer.MessageOverheadTokens+base.Estimator().Estimate(toolsText), n)
}

// framing is the provider's per-message and per-prompt tokens, as
// calibrated.
type framing struct{ perMessage, priming int }

// priceFor returns the estimator that prices a prompt for the view's
// model, and, when the provider's framing of the prompt is known (an
// exact tokenizer, or calibrated from reports), that framing: then Prompt
// gives back the difference between the trimmer's per-message overhead
// and the provider's.
func (m *Manager) priceFor() (trimmer.Estimator, *framing) {
	base, exact := m.baseTrimmer()
	w, samples := m.price.cal.Price(m.model)
	switch {
	case samples > 0:
		return m.weighted(w), &framing{perMessage: int(math.Ceil(w[calib.FeatMessages])), priming: int(math.Ceil(w[calib.FeatConst]))}
	case exact:
		return base.Estimator(), &framing{perMessage: calib.PerMessage, priming: calib.ReplyPriming}
	default:
		return base.Estimator(), nil
	}
}

// weighted returns the estimator pricing texts with weights w: by
// character class (byClass), or the base estimator's count scaled by w's
// base weight; rounded up, at least 1 for a text that is not empty.
func (m *Manager) weighted(w calib.Vector) trimmer.Estimator {
	if m.byClass() {
		bpe := m.bpe()
		return trimmer.EstimatorFunc(func(text string) int {
			if text == "" {
				return 0
			}
			return max(1, int(math.Ceil(w.Text(text, bpe))))
		})
	}
	base, _ := m.baseTrimmer()
	est, ratio := base.Estimator(), w[calib.FeatBase]
	return trimmer.EstimatorFunc(func(text string) int {
		n := est.Estimate(text)
		if n == 0 {
			return 0
		}
		return int(math.Ceil(float64(n) * ratio))
	})
}

// viewEstimator is the view's estimator for Config: the calibrated one
// once the model has reports, else its exact tokenizer or the configured
// (or default) estimator.
func (m *Manager) viewEstimator() trimmer.Estimator {
	if w, samples := m.price.cal.Price(m.model); samples > 0 {
		return m.weighted(w)
	}
	if base, exact := m.baseTrimmer(); exact {
		return base.Estimator()
	}
	return m.cfg.Estimator
}

// calibratedPrompt fits history as Prompt does, priced for the view's
// model: with est, and in two passes, the second giving back the
// difference between the trimmer's per-message overhead
// (MessageOverheadTokens) and the provider's framing f for the messages
// the first pass kept (or taking it, should the provider's framing be the
// larger). A second pass that gives back is used only when it keeps at
// least as many messages, so that the overhead given back is paid for.
func (m *Manager) calibratedPrompt(est trimmer.Estimator, f framing, systemPrompt string, history []llms.ChatMessage, reserve int) ([]llms.ChatMessage, trimmer.Report) {
	window, output := m.cfg.ContextWindowTokens, m.cfg.OutputReserveTokens
	out, rep := trimmer.New(window, output, est).TrimReport(history, systemPrompt, reserve)
	if rep.OverBudget {
		return out, rep
	}
	sys := 0
	if systemPrompt != "" {
		sys = 1
	}
	extra := (trimmer.MessageOverheadTokens-f.perMessage)*len(out) - f.perMessage*sys - f.priming
	if extra == 0 {
		return out, rep
	}
	out2, rep2 := trimmer.New(window+extra, output, est).TrimReport(history, systemPrompt, reserve)
	if extra > 0 && (rep2.OverBudget || len(out2) < len(out)) {
		return out, rep
	}
	return out2, rep2
}
