package runner

import (
	"context"
	"fmt"
	"runtime"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/bench/internal/data"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// contextPolicyNames names the policies of section 1, in column order;
// index 0 (full history) is the baseline.
func (r *runner) contextPolicyNames() []string {
	return []string{
		"full history",
		fmt.Sprintf("langchaingo ConversationTokenBuffer (%s)", fmtInt(r.p.tokenBufferLimit)),
		"takeLast (last 20 messages)",
		"Strata parity",
		"Strata chunked",
	}
}

// newContextPolicies builds one of each policy of section 1 for a
// conversation; Strata uses the offline extractive summarizer.
func (r *runner) newContextPolicies(session string) ([]policy, error) {
	strata, err := r.newStrataPolicies(session)
	if err != nil {
		return nil, err
	}
	return append([]policy{&fullHistory{}, newTokenBuffer(r.p.tokenBufferLimit)}, strata...), nil
}

// newStrataPolicies builds Strata takeLast, parity and chunked over one
// session, the last two with the offline extractive summarizer.
func (r *runner) newStrataPolicies(session string) ([]policy, error) {
	var out []policy
	for _, p := range []struct {
		cfg memory.Config
		svc summary.Service
	}{{takeLastConfig(), nil}, {parityConfig(), summary.NewExtractiveService()}, {chunkedConfig(), summary.NewExtractiveService()}} {
		pol, err := r.newStrata(p.cfg, p.svc, session)
		if err != nil {
			return nil, err
		}
		out = append(out, pol)
	}
	return out, nil
}

// contextRun is the tokens per turn of every policy over a conversation.
type contextRun struct {
	id     string
	tokens [][]int // [policy][turn]
}

func (r *runner) contextReplay(ctx context.Context, conv data.Conversation) (contextRun, error) {
	pols, err := r.newContextPolicies("s1-" + conv.ID)
	if err != nil {
		return contextRun{}, err
	}
	defer func() {
		for _, p := range pols {
			p.close()
		}
	}()
	run := contextRun{id: conv.ID, tokens: make([][]int, len(pols))}
	for i := range run.tokens {
		run.tokens[i] = make([]int, len(conv.Turns))
	}
	err = replay(ctx, conv, pols, func(turn, pol int, msgs []llms.ChatMessage) {
		run.tokens[pol][turn] = r.count.messages(msgs)
	})
	return run, err
}

func runContextSize(ctx context.Context, r *runner, out *sectionOut) error {
	defer silenceStdLog()()
	locomo, err := r.loadLoCoMo()
	if err != nil {
		return err
	}
	tau, err := r.loadTau()
	if err != nil {
		return err
	}
	names := r.contextPolicyNames()

	out.printf("What the model sees at every user turn — the policy's history plus the current user message — priced with one exact counter for every policy: tiktoken `cl100k_base` (offline BPE) over message contents and tool-call names and arguments, plus %d tokens per message for the chat format. The system prompt is left out (it is the same for every policy).\n\n", perMessageOverhead)
	out.printf("- **full history**: every message so far (the baseline of the ratios).\n")
	out.printf("- **langchaingo ConversationTokenBuffer**: `memory.NewConversationTokenBuffer(llm, %d)`, fed as langchaingo's chains and agents feed a memory — `SaveContext` with the user input and the final answer (agents never pass tool calls or results to memory). Its limit is counted by langchaingo itself as runes/4 (`llms.CountTokens(\"\", …)` falls back to that); its standard-library log warning on every count is silenced (`log.SetOutput(io.Discard)`) for this section.\n", r.p.tokenBufferLimit)
	out.printf("- **takeLast**: Strata with summaries off (`memory.DefaultConfig()`): the last 2 × 10 messages, tool groups kept whole.\n")
	out.printf("- **Strata parity**: `Enabled: true`, defaults (trigger 20 messages, verbatim window 10, fold after every save above the trigger); **Strata chunked**: the same with `Policy: memory.PolicyChunked` (window grows from 10 to 30 messages before a fold; token and safety triggers at their defaults). Both use the offline extractive summarizer (`summary.NewExtractiveService()`), and `Flush` runs after every turn so folds are deterministic.\n\n")
	out.printf("LoCoMo: %d conversations; the speaker of the first message plays the user, the other the assistant, and %d consecutive messages of one speaker were merged so that turns alternate. τ-bench: %d airline transcripts with their tool calls and results (the shared system prompt left out).\n\n",
		len(locomo.Conversations), locomo.Merged, len(tau))

	// Only token counts are measured here, so conversations replay in
	// parallel.
	workers := runtime.NumCPU()
	locRuns := make([]contextRun, len(locomo.Conversations))
	err = parallel(len(locomo.Conversations), workers, func(i int) error {
		c := locomo.Conversations[i]
		r.progress("  context size: LoCoMo %s (%d/%d, %d turns)", c.ID, i+1, len(locomo.Conversations), len(c.Turns))
		run, err := r.contextReplay(ctx, c)
		locRuns[i] = run
		return err
	})
	if err != nil {
		return err
	}
	r.progress("  context size: τ-bench, %d transcripts", len(tau))
	tauRuns := make([]contextRun, len(tau))
	err = parallel(len(tau), workers, func(i int) error {
		run, err := r.contextReplay(ctx, tau[i].Conversation)
		tauRuns[i] = run
		return err
	})
	if err != nil {
		return err
	}

	for _, set := range []struct {
		name string
		runs []contextRun
	}{{"LoCoMo", locRuns}, {"τ-bench airline", tauRuns}} {
		pooled := make([][]int, len(names))
		turns := 0
		for _, run := range set.runs {
			for p := range names {
				pooled[p] = append(pooled[p], run.tokens[p]...)
			}
			turns += len(run.tokens[0])
		}
		out.printf("### %s (%s conversations, %s user turns)\n\n", set.name, fmtInt(len(set.runs)), fmtInt(turns))
		out.printf("%s", r.env.provenance(false))
		baseMean, baseMax := meanInt(pooled[0]), float64(maxInt(pooled[0]))
		rows := [][]string{}
		for p, name := range names {
			m, x := meanInt(pooled[p]), maxInt(pooled[p])
			rows = append(rows, []string{name, fmtFloat(m), fmtInt(x), fmtRatio(ratio(m, baseMean)), fmtRatio(ratio(float64(x), baseMax))})
		}
		out.printf("%s\n", mdTable([]string{"policy", "mean tokens / turn", "max tokens / turn", "mean ÷ full history", "max ÷ full history"}, rows))
		if set.name == "LoCoMo" {
			out.headline("Context size (§1), LoCoMo: Strata parity shows %s tokens per turn on average and chunked %s, vs %s for the full history (%s and %s of it; max %s and %s vs %s).",
				fmtFloat(meanInt(pooled[3])), fmtFloat(meanInt(pooled[4])), fmtFloat(baseMean),
				fmtRatio(ratio(meanInt(pooled[3]), baseMean)), fmtRatio(ratio(meanInt(pooled[4]), baseMean)),
				fmtInt(maxInt(pooled[3])), fmtInt(maxInt(pooled[4])), fmtInt(int(baseMax)))
		}
	}

	// Per-conversation means for LoCoMo.
	rows := [][]string{}
	for _, run := range locRuns {
		row := []string{run.id, fmtInt(len(run.tokens[0]))}
		for p := range names {
			row = append(row, fmtFloat(meanInt(run.tokens[p])))
		}
		rows = append(rows, row)
	}
	out.printf("<details><summary>LoCoMo, mean tokens per turn by conversation</summary>\n\n%s\n%s\n</details>\n\n",
		r.env.provenance(false), mdTable(append([]string{"conversation", "turns"}, names...), rows))

	// Plots: one LoCoMo conversation and the longest τ-bench transcript.
	if len(locRuns) > 0 {
		name := "context-locomo.svg"
		out.file(name, contextPlot(fmt.Sprintf("Tokens per turn, LoCoMo %s", locRuns[0].id), names, locRuns[0]).svg())
		out.printf("![Tokens per turn, LoCoMo %s](%s)\n\n", locRuns[0].id, name)
	}
	if len(tauRuns) > 0 {
		longest := 0
		for i, run := range tauRuns {
			if len(run.tokens[0]) > len(tauRuns[longest].tokens[0]) {
				longest = i
			}
		}
		name := "context-taubench.svg"
		title := fmt.Sprintf("Tokens per turn, τ-bench %s (the longest transcript)", tauRuns[longest].id)
		out.file(name, contextPlot(title, names, tauRuns[longest]).svg())
		out.printf("![%s](%s)\n\n", title, name)
	}
	out.printf("On τ-bench the token buffer is the smallest because it never holds tool calls or tool results (langchaingo agents do not save them); §7 shows what that forgets. ")
	out.printf("Reading the tables: full history grows without bound; the token buffer and takeLast stay flat but forget everything older; Strata's context stays bounded while its facts and narrative carry the older turns (what it keeps is measured in §7). The chunked policy shows more verbatim messages between folds (10 to 30) than parity (10), so it costs more context per turn but far fewer summarizer calls (§2).\n")
	return nil
}

func contextPlot(title string, names []string, run contextRun) plot {
	p := plot{Title: title, XLabel: "user turn", YLabel: "tokens the model sees (cl100k)"}
	for i, name := range names {
		s := series{Name: shortPolicy(name)}
		for t, v := range run.tokens[i] {
			s.X = append(s.X, float64(t+1))
			s.Y = append(s.Y, float64(v))
		}
		p.Series = append(p.Series, s)
	}
	return p
}

// shortPolicy shortens a policy name for a plot legend.
func shortPolicy(name string) string {
	switch {
	case len(name) > 11 && name[:11] == "langchaingo":
		return "lc TokenBuffer"
	case len(name) > 8 && name[:8] == "takeLast":
		return "takeLast"
	}
	return name
}
