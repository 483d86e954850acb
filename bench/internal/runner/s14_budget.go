package runner

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/strata-go/strata/agent"
	"github.com/strata-go/strata/internal/calib"
	"github.com/strata-go/strata/internal/standin"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/trimmer"
)

// Section 14: the budget as the provider counts it. Generated chat prompts
// in five languages and with JSON tool results are counted by a stand-in
// OpenAI server exactly (tiktoken, OpenAI's framing); the estimate of each
// prompt is compared with that count before calibration and after three
// calls of the same model, and agent.Run is pressed against a 4 096-token
// window to count refused calls and the share of the window used.

const (
	budgetWindow  = 4096
	budgetReserve = 512
	budgetSeed    = 20261127
)

// budgetLang is one kind of conversation of the section.
type budgetLang struct {
	name  string
	lang  standin.Language
	tools bool
}

var budgetLangs = []budgetLang{
	{"Korean", standin.Korean, false}, {"Japanese", standin.Japanese, false}, {"Chinese", standin.Chinese, false},
	{"German", standin.German, false}, {"English", standin.English, false}, {"Go code", standin.Code, false},
	{"Korean + JSON tool results", standin.Korean, true},
}

// budgetLen is a message length in characters (about three Latin
// characters for one CJK character's tokens).
func budgetLen(lang standin.Language, n int) int {
	if lang == standin.German || lang == standin.English || lang == standin.Code {
		return 3 * n
	}
	return n
}

// budgetPrompt generates one chat prompt: a system prompt and 2–30
// messages, with tool calls and JSON results for tools.
func budgetPrompt(rng *rand.Rand, l budgetLang) []llms.ChatMessage {
	msgs := []llms.ChatMessage{llms.SystemChatMessage{Content: standin.Text(rng, l.lang, 80)}}
	for i := range 1 + rng.IntN(15) {
		msgs = append(msgs, llms.HumanChatMessage{Content: standin.Text(rng, l.lang, budgetLen(l.lang, 20+rng.IntN(300)))})
		if l.tools {
			id := fmt.Sprintf("call_%d", i)
			msgs = append(msgs,
				llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: id, Type: "function",
					FunctionCall: &llms.FunctionCall{Name: "lookup_orders", Arguments: fmt.Sprintf(`{"customer":"C-%d"}`, rng.IntN(1000))}}}},
				llms.ToolChatMessage{ID: id, Content: standin.ToolResult(rng, l.lang, 1+rng.IntN(3))})
		}
		msgs = append(msgs, llms.AIChatMessage{Content: standin.Text(rng, l.lang, budgetLen(l.lang, 20+rng.IntN(300)))})
	}
	return msgs
}

// wireRequest is the stand-in's reading of a prompt, as langchaingo's
// openai client sends it.
func wireRequest(msgs []llms.ChatMessage) standin.Request {
	var r standin.Request
	for _, m := range msgs {
		w := standin.Message{Content: m.GetContent()}
		switch v := m.(type) {
		case llms.SystemChatMessage:
			w.Role = "system"
		case llms.HumanChatMessage:
			w.Role = "user"
		case llms.AIChatMessage:
			w.Role = "assistant"
			for _, c := range v.ToolCalls {
				w.ToolCalls = append(w.ToolCalls, standin.ToolCall{ID: c.ID, Name: c.FunctionCall.Name, Arguments: c.FunctionCall.Arguments})
			}
		case llms.ToolChatMessage:
			w.Role, w.ToolCallID = "tool", v.ID
		}
		r.Messages = append(r.Messages, w)
	}
	return r
}

// relErrors holds |estimate − count| ÷ count of many prompts.
type relErrors []float64

func (e relErrors) q(p float64) float64 {
	if len(e) == 0 {
		return math.NaN()
	}
	s := slices.Clone(e)
	slices.Sort(s)
	return s[min(len(s)-1, int(math.Ceil(p*float64(len(s))))-1)]
}

func runBudget(ctx context.Context, r *runner, out *sectionOut) error {
	defer silenceStdLog()()
	prompts, turns := 200, 80
	encs := []string{trimmer.EncodingCL100kBase, trimmer.EncodingO200kBase}
	langs := budgetLangs
	if r.opts.Quick {
		// A smoke test: a CJK script, Latin text, and JSON tool results.
		prompts, turns = 20, 12
		langs = []budgetLang{budgetLangs[0], budgetLangs[4], budgetLangs[6]}
	}

	// Part 1: the estimate of a prompt against the provider's count.
	r.progress("  budget: estimator error per language")
	est := trimmer.New(budgetWindow, budgetReserve, nil)
	var rows [][]string
	worstAfter, worstBig, worstAll := 0.0, 0.0, ""
	priceLow, priced, lowest := 0, 0, 0.0
	minCount, maxCount := math.MaxInt, 0
	bpe, err := calib.NewBPE()
	if err != nil {
		return err
	}
	for _, enc := range encs {
		srv, err := standin.New(budgetWindow, enc, nil)
		if err != nil {
			return err
		}
		srv.Close() // only its counter is used
		for li, l := range langs {
			rng := rand.New(rand.NewPCG(budgetSeed, uint64(li)))
			tb := calib.New()
			const model = "m"
			var before, after, afterBig relErrors
			var signedBefore, signedPrice []float64
			prior := calib.Prior()
			for i := range prompts {
				p := budgetPrompt(rng, l)
				count := srv.Count(wireRequest(p))
				minCount, maxCount = min(minCount, count), max(maxCount, count)
				n := len(p)
				content := est.Cost(p) - n*trimmer.MessageOverheadTokens
				x := calib.ClassFeatures(p, "", bpe)
				rel := func(x float64) float64 { return (x - float64(count)) / float64(count) }
				b := rel(float64(content) + x.Dot(prior) - x.Content(prior))
				before, signedBefore = append(before, math.Abs(b)), append(signedBefore, b)
				price, samples := tb.Price(model)
				if fitted, ok := tb.Fitted(model); ok && samples >= 3 {
					a := rel(x.Dot(fitted))
					after = append(after, math.Abs(a))
					if count >= 1000 {
						afterBig = append(afterBig, math.Abs(a))
					}
					pr := rel(x.Dot(price))
					signedPrice = append(signedPrice, pr)
					priced++
					lowest = min(lowest, pr)
					if pr < 0 {
						priceLow++
					}
				}
				if err := tb.Observe(model, calib.Sample{Reported: count, Features: x}); err != nil {
					return fmt.Errorf("%s, %s, prompt %d: %w", l.name, enc, i, err)
				}
			}
			if after.q(0.99) > worstAfter {
				worstAfter, worstAll = after.q(0.99), l.name+" "+enc
			}
			worstBig = max(worstBig, afterBig.q(0.99))
			rows = append(rows, []string{l.name, enc, pctStr(before.q(0.5)), pctStr(before.q(0.99)), signedPct(median(signedBefore)),
				pctStr(after.q(0.5)), pctStr(after.q(0.99)), pctStr(afterBig.q(0.99)), signedPct(median(signedPrice)), signedPct(slices.Min(signedPrice))})
		}
	}
	out.printf("Generated chat prompts (a system prompt and 2–30 messages of 20–300 characters, ×3 for German, English and code; with tools, each user message answered by a tool call and a JSON result of 1–3 orders), %d per language and encoding, seed %d, of %s to %s tokens. The provider's count is the stand-in OpenAI server's: exact tiktoken with OpenAI's framing (3 tokens a message plus its role, 3 priming the reply, tool calls included). **Before** is an uncalibrated manager's estimate: the default script-aware estimator for the texts plus that framing. **After 3 calls** the model has reported three prompts of the language (and every earlier one): the **estimate** weighs the prompt's characters per class (ASCII letters, digits, spaces, line breaks, punctuation, Hangul, kana, Han, CJK punctuation, emoji, other) and their runs, the tokens a real byte-pair encoding (o200k_base, whatever the provider's) spends on its Hangul, its kana, its Han and the rest (weight 0 before any report), its messages and a constant, with weights fitted to the model's last %d reports by ridge regression pulled toward the default estimator's rates (`internal/calib`); the **price**, what `memory.Manager.ForModel(…).Prompt` fits prompts with, raises those weights by a 1/64 margin plus the 90th percentile of how much the fit underestimated recent reports before it saw them, so that it errs high. Errors are |estimate − count| ÷ count over every later prompt; \"≥ 1 000\" restricts them to prompts of at least 1 000 tokens, the ones a budget presses; signed medians say whether it errs low (−) or high (+).\n\n", prompts, budgetSeed, fmtInt(minCount), fmtInt(maxCount), calib.Window)
	out.printf("%s", r.env.provenance(false))
	out.printf("**Estimate of a prompt against the provider's count**\n\n%s\n", mdTable([]string{"conversation", "encoding",
		"before: median error", "before: p99", "before: median signed", "after 3 calls, estimate: median error", "estimate: p99", "estimate: p99, ≥ 1 000 tokens",
		"price: median signed", "price: lowest"}, rows))
	out.headline("Budget (§14): after three calls of a model the calibrated estimate of a prompt of at least 1 000 tokens is within %s of the provider's exact count at p99 (goal ±5%%; over all prompts, the worst p99 is %s, %s), for Korean, Japanese, Chinese, German, English, Go code and JSON tool results under cl100k_base and o200k_base; the price the budget uses is below the count for %d of %s prompts, by at most %s.",
		pctStr(worstBig), pctStr(worstAfter), worstAll, priceLow, fmtInt(priced), pctStr(-lowest))

	// Part 2: agent.Run pressed against a 4 096-token window.
	r.progress("  budget: agent.Run pressed against a %d-token window", budgetWindow)
	out.printf("`agent.Run` for %d turns per conversation on the defaults (no estimator configured, `ContextWindowTokens` %d, `OutputReserveTokens` %d, takeLast 100 messages so that the budget decides), through langchaingo's real openai client (`llms.WithMaxTokens(%d)`) to the stand-in server, which refuses a prompt over the window with OpenAI's `context_length_exceeded` body. The model's name (`standin-chat`) is one the tokenizer table does not know: the budget is learned from the reported `usage.prompt_tokens` alone. **Without usage reports** runs the same conversations with the usage stripped from every reply: the manager then learns only from the count a refusal states (the agent recalibrates from it and retries once, smaller). Share = the provider's count of a call ÷ the usable window (%d), over the calls whose prompt had to leave history out.\n\n",
		turns, budgetWindow, budgetReserve, budgetReserve, budgetWindow-budgetReserve)
	out.printf("%s", r.env.provenance(false))
	rows = rows[:0]
	type job struct {
		l       budgetLang
		enc     string
		reports bool
	}
	var jobs []job
	for _, enc := range encs {
		for _, l := range langs {
			jobs = append(jobs, job{l, enc, true}, job{l, enc, false})
		}
	}
	results := make([]budgetRun, len(jobs))
	err = parallel(len(jobs), 2, func(i int) error {
		res, err := runBudgetConversation(ctx, jobs[i].l, jobs[i].enc, jobs[i].reports, turns, uint64(i/2))
		results[i] = res
		return err
	})
	if err != nil {
		return err
	}
	failedWith, refusedWith, refusedWithout := 0, 0, 0
	minShare := 1.0
	for i, j := range jobs {
		res := results[i]
		mode := "with usage reports"
		if !j.reports {
			mode = "without usage reports"
			refusedWithout += res.refused
		} else {
			failedWith += res.failed
			refusedWith += res.refused
			minShare = min(minShare, res.medianShare())
		}
		rows = append(rows, []string{j.l.name, j.enc, mode, fmt.Sprintf("%d of %d", res.failed, turns), fmt.Sprint(res.refused),
			fmt.Sprint(len(res.shares)), pctStr(res.medianShare()), pctStr(res.quantileShare(0.1)), pctStr(res.quantileShare(1))})
	}
	out.printf("**Refused calls and window share**\n\n%s\n", mdTable([]string{"conversation", "encoding", "run", "failed turns", "refused calls",
		"pressed calls", "median share", "p10 share", "max share"}, rows))
	out.headline("Budget (§14): pressed against a 4k window for %d turns in %d conversations × 2 encodings, agent.Run on the defaults fails %d turns, %d calls are refused (%d without usage reports, learning from refusals only) and the median prompt uses at least %s of the usable window.",
		turns, len(langs), failedWith, refusedWith, refusedWithout, pctStr(minShare))
	return nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func signedPct(f float64) string {
	if f >= 0 {
		return "+" + pctStr(f)
	}
	return "−" + pctStr(-f)
}

// budgetRun is one pressed conversation's outcome.
type budgetRun struct {
	failed, refused int
	shares          []float64
}

func (b budgetRun) medianShare() float64 { return b.quantileShare(0.5) }

func (b budgetRun) quantileShare(p float64) float64 {
	if len(b.shares) == 0 {
		return 0
	}
	s := slices.Clone(b.shares)
	slices.Sort(s)
	return s[min(len(s)-1, max(0, int(math.Ceil(p*float64(len(s))))-1))]
}

// noUsage hides the provider's usage from the agent.
type noUsage struct{ llms.Model }

func (m noUsage) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	resp, err := m.Model.GenerateContent(ctx, msgs, opts...)
	if resp != nil {
		for _, c := range resp.Choices {
			if c != nil {
				c.GenerationInfo = nil
			}
		}
	}
	return resp, err
}

func runBudgetConversation(ctx context.Context, l budgetLang, enc string, reports bool, turns int, seed uint64) (budgetRun, error) {
	const model = "standin-chat"
	var mu sync.Mutex
	brainRng := rand.New(rand.NewPCG(budgetSeed, seed*2+1))
	calls := 0
	srv, err := standin.New(budgetWindow, enc, func(req standin.Request) standin.Reply {
		mu.Lock()
		defer mu.Unlock()
		if l.tools && req.Messages[len(req.Messages)-1].Role == "user" {
			calls++
			return standin.Reply{Calls: []standin.ToolCall{{ID: fmt.Sprintf("call_%d", calls), Name: "lookup_orders",
				Arguments: fmt.Sprintf(`{"customer":"C-%d"}`, brainRng.IntN(1000))}}}
		}
		return standin.Reply{Text: standin.Text(brainRng, l.lang, budgetLen(l.lang, 60+brainRng.IntN(300)))}
	})
	if err != nil {
		return budgetRun{}, err
	}
	defer srv.Close()
	var llm llms.Model
	llm, err = openai.New(openai.WithToken("sk-bench"), openai.WithBaseURL(srv.URL), openai.WithModel(model))
	if err != nil {
		return budgetRun{}, err
	}
	if !reports {
		llm = noUsage{llm}
	}
	cfg := memory.DefaultConfig()
	cfg.ContextWindowTokens, cfg.OutputReserveTokens = budgetWindow, budgetReserve
	cfg.MaxConversationTurns = 50
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg)
	if err != nil {
		return budgetRun{}, err
	}
	defer func() { _ = mgr.Close() }()
	rng := rand.New(rand.NewPCG(budgetSeed, seed*2))
	opts := []agent.Option{
		agent.WithSystemPrompt(standin.Text(rng, l.lang, 80)),
		agent.WithCallOptions(llms.WithModel(model), llms.WithMaxTokens(budgetReserve)),
		agent.WithProvider(agent.ProviderOpenAI),
	}
	if l.tools {
		def := llms.FunctionDefinition{Name: "lookup_orders", Description: "Looks up a customer's recent orders and returns them as JSON.",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"customer": map[string]any{"type": "string"}}, "required": []string{"customer"}}}
		opts = append(opts, agent.WithFunctions([]llms.FunctionDefinition{def}, func(context.Context, string, string) (string, error) {
			return standin.ToolResult(rng, l.lang, 1+rng.IntN(3)), nil
		}))
	}
	a, err := agent.New(llm, mgr, opts...)
	if err != nil {
		return budgetRun{}, err
	}
	var res budgetRun
	for range turns {
		before := len(srv.Accepted())
		out, err := a.Run(ctx, "s", "u", standin.Text(rng, l.lang, budgetLen(l.lang, 40+rng.IntN(360))))
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			res.failed++
			continue
		}
		if acc := srv.Accepted(); out.Dropped > 0 && len(acc) > before {
			res.shares = append(res.shares, float64(acc[len(acc)-1])/float64(budgetWindow-budgetReserve))
		}
	}
	res.refused = len(srv.Refused())
	return res, nil
}
