package runner

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/strata-go/strata/bench/internal/data"
	"github.com/strata-go/strata/summary"
)

// fixedResult is the constant output of the fixed summarizer: a narrative
// and a fact ledger of constant size, so that a policy's input tokens
// depend only on what it sends.
var fixedResult = summary.Result{
	Narrative: strings.TrimSpace(strings.Repeat("The user and the assistant talked about plans, family, work and hobbies; dates and names were agreed. ", 4)),
	Facts: []summary.Fact{
		{Key: "user_name", Value: "Alex Example", Category: summary.Entity},
		{Key: "topic", Value: "weekend plans and a new hobby", Category: summary.General},
		{Key: "next_meeting", Value: "2023-05-20", Category: summary.Condition},
		{Key: "budget", Value: "$1,200", Category: summary.Numeric},
		{Key: "decision", Value: "book the cabin by the lake", Category: summary.Decision},
		{Key: "status", Value: "waiting for the confirmation e-mail", Category: summary.State},
	},
}

// costMeter is a deterministic summarizer with a fixed-size output that
// records every call: the input it would send to an LLM is priced exactly
// as summary.BuildPrompt renders it (instructions, transcript, existing
// facts and, for incremental folds, the existing narrative).
type costMeter struct {
	count *counter

	mu          sync.Mutex
	calls       int
	inputTokens int
	transcript  int // of inputTokens: the messages' lines
	messages    int
}

func (c *costMeter) Summarize(_ context.Context, req summary.Request) (summary.Result, error) {
	system, user := summary.BuildPrompt(req, 0)
	in := c.count.lines(system) + c.count.lines(user)
	tr := 0
	for _, m := range req.Messages {
		tr += c.count.lines(m.GetContent())
	}
	c.mu.Lock()
	c.calls++
	c.inputTokens += in
	c.transcript += tr
	c.messages += len(req.Messages)
	c.mu.Unlock()
	return fixedResult, nil
}

// costRun is one policy's summarizer usage over a set of conversations.
type costRun struct {
	turns                                  int
	calls, inputTokens, transcript, folded int
}

func (r *runner) summarizerCost(ctx context.Context, convs []data.Conversation, chunked bool) (costRun, error) {
	// Only calls and tokens are measured here, so conversations replay in
	// parallel.
	runs := make([]costRun, len(convs))
	err := parallel(len(convs), runtime.NumCPU(), func(i int) error {
		c := convs[i]
		meter := &costMeter{count: r.count}
		cfg := parityConfig()
		if chunked {
			cfg = chunkedConfig()
		}
		p, err := r.newStrata(cfg, meter, "s2-"+c.ID)
		if err != nil {
			return err
		}
		defer p.close()
		for j, t := range c.Turns {
			if err := p.save(ctx, t); err != nil {
				return fmt.Errorf("%s turn %d: %w", c.ID, j, err)
			}
		}
		runs[i] = costRun{turns: len(c.Turns), calls: meter.calls, inputTokens: meter.inputTokens,
			transcript: meter.transcript, folded: meter.messages}
		return nil
	})
	var run costRun
	for _, x := range runs {
		run.turns += x.turns
		run.calls += x.calls
		run.inputTokens += x.inputTokens
		run.transcript += x.transcript
		run.folded += x.folded
	}
	if err != nil {
		return run, err
	}
	return run, nil
}

func runSummarizerCost(ctx context.Context, r *runner, out *sectionOut) error {
	locomo, err := r.loadLoCoMo()
	if err != nil {
		return err
	}
	tau, err := r.loadTau()
	if err != nil {
		return err
	}
	tauConvs := make([]data.Conversation, len(tau))
	for i, t := range tau {
		tauConvs[i] = t.Conversation
	}
	narrTokens := r.count.lines(fixedResult.Narrative)
	outTokens := narrTokens
	for _, f := range fixedResult.Facts {
		outTokens += r.count.text(f.Key) + r.count.text(f.Value)
	}

	out.printf("Every turn of every conversation is saved through a Strata manager (in-memory stores, `Flush` after each turn) whose summarizer is a deterministic stand-in with a **fixed-size output** (a narrative of %d tokens and %d facts, %d tokens in all, on every call), so the input a policy sends depends on the policy alone. Input tokens are what `summary.BuildPrompt` renders for the call — instructions, transcript, the existing facts and, for incremental folds, the existing narrative — counted exactly with tiktoken `cl100k_base` (line by line). Parity re-summarizes everything before the verbatim window from the original messages after every save above the trigger; chunked/incremental folds only when the window exceeds 10 + 20 messages (or a token or 15-turn safety trigger fires), sending the existing summary plus the new messages.\n\n",
		narrTokens, len(fixedResult.Facts), outTokens)

	for _, set := range []struct {
		name  string
		convs []data.Conversation
	}{{"LoCoMo", locomo.Conversations}, {"τ-bench airline", tauConvs}} {
		r.progress("  summarizer cost: %s, parity", set.name)
		par, err := r.summarizerCost(ctx, set.convs, false)
		if err != nil {
			return err
		}
		r.progress("  summarizer cost: %s, chunked", set.name)
		ch, err := r.summarizerCost(ctx, set.convs, true)
		if err != nil {
			return err
		}
		per100 := func(v, turns int) float64 { return ratio(100*float64(v), float64(turns)) }
		out.printf("### %s (%s conversations, %s turns)\n\n", set.name, fmtInt(len(set.convs)), fmtInt(par.turns))
		out.printf("%s", r.env.provenance(false))
		rows := [][]string{}
		for _, row := range []struct {
			name string
			f    func(costRun) float64
		}{
			{"summarizer calls / 100 turns", func(c costRun) float64 { return per100(c.calls, c.turns) }},
			{"input tokens / 100 turns", func(c costRun) float64 { return per100(c.inputTokens, c.turns) }},
			{"… of which message contents", func(c costRun) float64 { return per100(c.transcript, c.turns) }},
			{"output tokens / 100 turns", func(c costRun) float64 { return per100(c.calls*outTokens, c.turns) }},
			{"messages sent / 100 turns", func(c costRun) float64 { return per100(c.folded, c.turns) }},
			{"input tokens / call", func(c costRun) float64 { return ratio(float64(c.inputTokens), float64(c.calls)) }},
		} {
			a, b := row.f(par), row.f(ch)
			rows = append(rows, []string{row.name, fmtFloat(a), fmtFloat(b), fmtRatio(ratio(b, a))})
		}
		out.printf("%s\n", mdTable([]string{"per policy", "parity", "chunked / incremental", "chunked ÷ parity"}, rows))
		if set.name == "LoCoMo" {
			out.headline("Summarizer cost (§2), LoCoMo: chunked/incremental makes %s summarizer calls and sends %s input tokens per 100 turns vs %s and %s for parity — %s the calls and %s the input tokens.",
				fmtFloat(per100(ch.calls, ch.turns)), fmtInt(int(per100(ch.inputTokens, ch.turns))),
				fmtFloat(per100(par.calls, par.turns)), fmtInt(int(per100(par.inputTokens, par.turns))),
				fmtRatio(ratio(float64(ch.calls), float64(par.calls))), fmtRatio(ratio(float64(ch.inputTokens), float64(par.inputTokens))))
		}
	}
	return nil
}
