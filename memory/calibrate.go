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
}

func newPricing(defaultEst bool) *pricing {
	return &pricing{cal: calib.New(), defaultEst: defaultEst, exact: map[string]*trimmer.Trimmer{}}
}

// ForModel returns a view of the manager for one model, e.g. "gpt-4o" (as
// passed to llms.WithModel): the same sessions, store and background work,
// with prompts priced as that model's provider counts them. The view's
// Prompt prices with the model's exact offline tokenizer when no
// Config.Estimator was set and trimmer.TiktokenEncodingForModel knows the
// model, and, once ObserveUsage has reported the provider's counts, scales
// its estimates by what it learned, for each script apart (Latin, Korean,
// Japanese, Chinese, other). What it learns is shared by every view of the
// same model, and so by all its sessions; the manager keeps at most a
// bounded number of model and script calibrations, forgetting the least
// recently used. The view's Config().Estimator is the model's estimator as
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
	base, _ := m.baseTrimmer()
	var tally calib.Tally
	n := 0
	for _, msg := range prompt {
		if chatmsg.Value(msg) == nil {
			continue
		}
		tally.Add(msg.GetContent())
		n++
	}
	toolsText := calib.ToolsText(tools)
	tally.Add(toolsText)
	content := base.Cost(prompt) - n*trimmer.MessageOverheadTokens + base.Estimator().Estimate(toolsText)
	err := m.price.cal.Observe(calib.Key{Model: m.model, Script: tally.Script()},
		calib.Sample{Reported: reported, Content: content, Messages: n})
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

// priceFor returns the estimator that prices a prompt for the view's
// model, and whether the provider's framing of the prompt is known (an
// exact tokenizer, or calibrated from reports for the prompt's script):
// then Prompt gives back the difference between the trimmer's per-message
// overhead and the provider's. The prompt's script is read only once the
// model has reports.
func (m *Manager) priceFor(systemPrompt string, history []llms.ChatMessage) (trimmer.Estimator, bool) {
	base, exact := m.baseTrimmer()
	if !m.price.cal.Known(m.model) {
		return base.Estimator(), exact
	}
	ratio, samples := m.price.cal.Ratio(calib.Key{Model: m.model, Script: scriptOf(systemPrompt, history)})
	if samples == 0 {
		return base.Estimator(), exact
	}
	return scaled(base.Estimator(), ratio), true
}

// scaled returns est's counts times ratio, rounded up.
func scaled(est trimmer.Estimator, ratio float64) trimmer.Estimator {
	return trimmer.EstimatorFunc(func(text string) int {
		n := est.Estimate(text)
		if n == 0 {
			return 0
		}
		return int(math.Ceil(float64(n) * ratio))
	})
}

// viewEstimator is the view's estimator for Config: the base estimator
// scaled by the largest ratio learned for the model, if any.
func (m *Manager) viewEstimator() trimmer.Estimator {
	base, exact := m.baseTrimmer()
	if r, ok := m.price.cal.ModelRatio(m.model); ok {
		return scaled(base.Estimator(), r)
	}
	if exact {
		return base.Estimator()
	}
	return m.cfg.Estimator
}

// calibratedPrompt fits history as Prompt does, priced for the view's
// model: with est, and in two passes, the second giving back the
// trimmer's over-counted per-message overhead (MessageOverheadTokens
// against the provider's calib.PerMessage) for the messages the first pass
// kept. The second result is used only when it keeps at least as many
// messages, so that the overhead given back is paid for.
func (m *Manager) calibratedPrompt(est trimmer.Estimator, systemPrompt string, history []llms.ChatMessage, reserve int) ([]llms.ChatMessage, trimmer.Report) {
	window, output := m.cfg.ContextWindowTokens, m.cfg.OutputReserveTokens
	out, rep := trimmer.New(window, output, est).TrimReport(history, systemPrompt, reserve)
	if rep.OverBudget {
		return out, rep
	}
	sys := 0
	if systemPrompt != "" {
		sys = 1
	}
	extra := (trimmer.MessageOverheadTokens-calib.PerMessage)*len(out) - calib.PerMessage*sys - calib.ReplyPriming
	if extra <= 0 {
		return out, rep
	}
	out2, rep2 := trimmer.New(window+extra, output, est).TrimReport(history, systemPrompt, reserve)
	if rep2.OverBudget || len(out2) < len(out) {
		return out, rep
	}
	return out2, rep2
}

// scriptOf returns the script of a prompt's texts: the system prompt and
// the newest history, up to about maxScriptBytes.
func scriptOf(systemPrompt string, history []llms.ChatMessage) calib.Script {
	const maxScriptBytes = 64 << 10
	var t calib.Tally
	t.Add(systemPrompt)
	seen := 0
	for i := len(history) - 1; i >= 0 && seen < maxScriptBytes; i-- {
		if chatmsg.Value(history[i]) == nil {
			continue
		}
		c := history[i].GetContent()
		if len(c) > maxScriptBytes-seen {
			c = c[:maxScriptBytes-seen]
		}
		t.Add(c)
		seen += len(c)
	}
	return t.Script()
}
