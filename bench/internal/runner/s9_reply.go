package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/agent"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// slowModel is a chat model whose every call takes delay (returning early
// when its context is cancelled) and answers with the next of its replies.
// It records when each call started and how long it took, so that the time
// a turn spent outside the model can be told from the model's own.
type slowModel struct {
	delay   time.Duration
	replies []string

	mu    sync.Mutex
	calls []modelCall
}

// modelCall is one recorded call of a slowModel.
type modelCall struct {
	start time.Time
	took  time.Duration
}

var _ llms.Model = (*slowModel)(nil)

func (m *slowModel) GenerateContent(ctx context.Context, _ []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	start := time.Now()
	t := time.NewTimer(m.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, modelCall{start: start, took: time.Since(start)})
	reply := m.replies[(len(m.calls)-1)%len(m.replies)]
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: reply, StopReason: "stop"}}}, nil
}

func (m *slowModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// callsSince returns the calls recorded from the i-th on.
func (m *slowModel) callsSince(i int) []modelCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]modelCall(nil), m.calls[i:]...)
}

// replyTurn is one measured turn of section 9.
type replyTurn struct {
	start   time.Time     // when agent.Run was called
	latency time.Duration // agent.Run, end to end
	model   time.Duration // of which inside model calls
	// firstCall is when the turn's first model call started: the load and
	// the prompt were done by then.
	firstCall time.Time
}

// overhead is the turn's time outside the model: loading the memory
// (including any wait for a fold), building the prompt and saving.
func (t replyTurn) overhead() time.Duration { return t.latency - t.model }

// replyRun is one configuration of section 9.
type replyRun struct {
	name  string
	slow  *slowSummarizer // nil: no summarizer
	turns []replyTurn
	// firstFold is the index of the first turn whose model call started
	// after the first summarizer call had started — the first turn whose
	// load could wait for a fold (-1: no summarizer call).
	firstFold int
	// firstStored is when the first summary was stored (zero: never).
	firstStored time.Time
	stats       memory.Stats
	mode        string // how the last turn's history was assembled
	stored      int    // messages stored at the end
	cursor      int64  // the summary's cursor at the end (0: none)
}

// waits describes the turns after the first fold-trigger turn.
type waits struct {
	turns  int           // turns after the first fold-trigger turn
	graced int           // of them, those whose load waited the whole grace (time outside the model >= grace)
	late   int           // of them, those that spent longer than the limit outside the model
	early  int           // of late, those that started before the first summary was stored
	worst  time.Duration // the largest time outside the model among them
}

// waitsAfterFirstFold looks at the turns after the first fold-trigger turn.
func (r replyRun) waitsAfterFirstFold(grace, limit time.Duration) waits {
	var w waits
	if r.firstFold < 0 {
		return w
	}
	for _, t := range r.turns[r.firstFold+1:] {
		w.turns++
		w.worst = max(w.worst, t.overhead())
		if t.overhead() >= grace {
			w.graced++
		}
		if t.overhead() > limit {
			w.late++
			if r.firstStored.IsZero() || t.start.Before(r.firstStored) {
				w.early++
			}
		}
	}
	return w
}

// graceAllowance is how much longer than the load grace a turn may spend
// outside the model before it counts as a late wait: the grace is a timer,
// and the load, prompt and save around it take time too (a tenth of the
// grace, at least 5 ms).
func graceAllowance(grace time.Duration) time.Duration { return max(grace/10, 5*time.Millisecond) }

func (r replyRun) latencies() samples {
	s := make(samples, len(r.turns))
	for i, t := range r.turns {
		s[i] = t.latency
	}
	return s
}

// replyRunOne plays turns agent.Run turns of one session through a fresh
// in-memory manager and agent.
func (r *runner) replyRunOne(ctx context.Context, name string, cfg memory.Config, slow *slowSummarizer, pairs [][2]string) (replyRun, error) {
	run := replyRun{name: name, slow: slow, firstFold: -1}
	cfg.LoadGrace = r.p.replyGrace
	opts := []memory.Option{memory.WithLogger(r.quiet)}
	var firstStored atomic.Pointer[time.Time]
	if slow != nil {
		opts = append(opts, memory.WithSummaries(summary.NewInMemoryStore(0), slow),
			memory.WithFoldObserver(func(context.Context, memory.FoldEvent) {
				now := time.Now()
				firstStored.CompareAndSwap(nil, &now)
			}))
	}
	m, err := memory.NewManager(memory.NewInMemoryStore(), cfg, opts...)
	if err != nil {
		return run, err
	}
	defer m.Close()
	replies := make([]string, len(pairs))
	for i, p := range pairs {
		replies[i] = p[1]
	}
	model := &slowModel{delay: r.p.replyModel, replies: replies}
	bot, err := agent.New(model, m, agent.WithSystemPrompt("You are a friendly assistant. Answer briefly."))
	if err != nil {
		return run, err
	}
	const session = "s9"
	for i := range r.p.replyTurns {
		if i > 0 {
			time.Sleep(r.p.replyPause) // the user reads and types
		}
		seen := len(model.callsSince(0))
		t0 := time.Now()
		if _, err := bot.Run(ctx, session, benchUser, pairs[i%len(pairs)][0]); err != nil {
			return run, fmt.Errorf("turn %d: %w", i+1, err)
		}
		turn := replyTurn{start: t0, latency: time.Since(t0)}
		for j, c := range model.callsSince(seen) {
			if j == 0 {
				turn.firstCall = c.start
			}
			turn.model += c.took
		}
		run.turns = append(run.turns, turn)
		if run.firstFold < 0 && slow != nil {
			if first, ok := slow.first(); ok && first.Before(turn.firstCall) {
				run.firstFold = i
			}
		}
	}
	run.stats = m.Stats()
	if t := firstStored.Load(); t != nil {
		run.firstStored = *t
	}
	s, err := m.Summary(ctx, session, benchUser)
	if err != nil {
		return run, err
	}
	if s != nil {
		run.cursor = s.UpToSeq
	}
	// What the next turn would be shown, without waiting for a fold: a
	// deadline far below the load grace, but not so short that the read
	// itself misses it on a busy machine (1ms did, under the race detector).
	peek, cancel := context.WithTimeout(ctx, 25*time.Millisecond)
	h, err := m.Load(peek, session, benchUser)
	cancel()
	if err != nil {
		return run, err
	}
	run.mode, run.stored = string(h.Mode), h.Total
	return run, nil
}

func runReplyLatency(ctx context.Context, r *runner, out *sectionOut) error {
	locomo, err := r.loadLoCoMo()
	if err != nil {
		return err
	}
	pairs := locomo.Pairs()
	configs := []struct {
		name string
		cfg  memory.Config
		slow bool
	}{
		{"no summarizer (baseline)", takeLastConfig(), false},
		{"parity", parityConfig(), true},
		{"chunked", chunkedConfig(), true},
	}
	r.progress("  reply latency: %d agent.Run turns per configuration, %d configurations at once (≈ %s)",
		r.p.replyTurns, len(configs), (time.Duration(r.p.replyTurns) * (r.p.replyModel + r.p.replyPause)).Round(time.Second))
	// The configurations are independent sessions on independent managers:
	// run them at the same time, so that they share the machine alike.
	runs := make([]replyRun, len(configs))
	errs := make([]error, len(configs))
	var wg sync.WaitGroup
	for i, c := range configs {
		wg.Go(func() {
			var slow *slowSummarizer
			if c.slow {
				slow = &slowSummarizer{delay: r.p.replySummarizer}
			}
			runs[i], errs[i] = r.replyRunOne(ctx, c.name, c.cfg, slow, pairs)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%s: %w", c.name, errs[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}

	grace := r.p.replyGrace
	limit := grace + graceAllowance(grace)
	out.printf("One conversation of %d turns per configuration through `agent.Run` (load the memory, build the prompt with `Manager.Prompt`, call the model, save the turn), over a fresh in-memory manager each. The model is a stand-in whose every call takes %s; the summarizer one whose every call takes %s (returning early when cancelled); the user pauses %s between turns. The three configurations run at the same time, in the same process. Summaries use the defaults (trigger 20 messages, verbatim window 10) and a load grace of %s: a load that finds its summary stale waits that long for the running fold, then shows the stale summary and every message after its cursor.\n\n",
		r.p.replyTurns, fmtDur(r.p.replyModel), fmtDur(r.p.replySummarizer), fmtDur(r.p.replyPause), fmtDur(grace))
	out.printf("*Turn latency* is `agent.Run` end to end. *Time outside the model* is that latency minus the time spent inside model calls (measured by the stand-in): loading, waiting for a fold, building the prompt and saving. The *first fold-trigger turn* is the first turn whose model call started after the first summarizer call had started — the first turn whose load could wait for a fold; with no summary yet it may wait for the first one (up to `FoldWait`, default 10 s). Every later turn has a summary to show and should never wait longer than the load grace: *waited the grace* counts the later turns that spent at least the grace outside the model (their load waited the whole grace, then showed the stale summary), and *late waits* those that spent more than the grace plus %s of timer and store slack (target 0) — of which those that started before the first summary was stored, whose load had no summary to show and could wait for the first. The ratio compares each p95 with the baseline's (target ≤ 1.2×).\n\n", fmtDur(graceAllowance(grace)))
	out.printf("%s", r.env.provenance(false))
	base := runs[0].latencies()
	rows := [][]string{}
	pl := plot{Title: "agent.Run latency per turn", XLabel: "turn", YLabel: "turn latency, ms"}
	for _, run := range runs {
		lat := run.latencies()
		first, graced, late, worst, calls, cancelled := "—", "—", "—", "—", "—", "—"
		if run.slow != nil {
			calls, cancelled = fmt.Sprint(run.slow.started.Load()), fmt.Sprint(run.slow.aborted.Load())
			if run.firstFold >= 0 {
				w := run.waitsAfterFirstFold(grace, limit)
				first = fmt.Sprintf("%d (%s outside the model)", run.firstFold+1, fmtDur(run.turns[run.firstFold].overhead()))
				graced, late, worst = fmt.Sprintf("%d of %d", w.graced, w.turns), fmt.Sprintf("%d (%d before the first summary)", w.late, w.early), fmtDur(w.worst)
			} else {
				first = "none"
			}
		}
		cursor := "—"
		if run.cursor > 0 {
			cursor = fmt.Sprintf("#%d of %d", run.cursor, run.stored)
		}
		rows = append(rows, []string{run.name, fmt.Sprint(len(run.turns)), fmtDur(lat.pct(50)), fmtDur(lat.pct(95)), fmtDur(lat.pct(100)),
			fmtRatio(ratio(float64(lat.pct(95)), float64(base.pct(95)))), first, graced, late, worst,
			calls, cancelled, fmt.Sprint(run.stats.Folds), fmt.Sprint(run.stats.Fallbacks), cursor, string(run.mode)})
		s := series{Name: run.name}
		for i, t := range run.turns {
			s.X = append(s.X, float64(i+1))
			s.Y = append(s.Y, float64(t.latency)/1e6)
		}
		pl.Series = append(pl.Series, s)
	}
	out.printf("%s\n", mdTable([]string{"configuration", "turns", "p50", "p95", "max", "p95 ÷ baseline p95", "first fold-trigger turn",
		fmt.Sprintf("turns after it that waited the grace (≥ %s)", fmtDur(grace)), fmt.Sprintf("late waits (> %s)", fmtDur(limit)), "largest time outside the model after it",
		"summarizer calls started", "cancelled", "summaries stored", "stale or degraded loads", "summary cursor at the end", "last view"}, rows))
	perTurn := [][]string{}
	for i := range r.p.replyTurns {
		row := []string{fmt.Sprint(i + 1)}
		for _, run := range runs {
			t := run.turns[i]
			cell := fmtDur(t.latency) + " / " + fmtDur(t.overhead())
			if i == run.firstFold {
				cell += " (first fold-trigger turn)"
			}
			row = append(row, cell)
		}
		perTurn = append(perTurn, row)
	}
	headers := []string{"turn"}
	for _, run := range runs {
		headers = append(headers, run.name)
	}
	out.printf("<details><summary>Every turn: latency / time outside the model</summary>\n\n%s\n%s\n</details>\n\n", r.env.provenance(false), mdTable(headers, perTurn))
	out.file("reply-latency.svg", pl.svg())
	out.printf("![agent.Run latency per turn](reply-latency.svg)\n\n")
	out.printf("Reading the table: a reply costs the model call plus the memory's own work, and the folds run in the background. A load waits for a fold only when the policy wants one before showing the history: for the session's first summary it may wait up to `FoldWait`; with a stale summary, at most the load grace — and not at all when the running fold cannot give it what it needs in time (it folds to an older cursor, or this manager's folds take longer than the grace) — after which it shows the stale summary and every message after its cursor verbatim. ")
	out.printf("A save that arrives while a fold runs never cancels it: the fold finishes and runs once more for the newer messages, so with a summarizer slower than a turn the summary still advances, a fold behind (see the cursor). Under chunked folds come in chunks and a load wants one only when the unfolded tail has outgrown the buffer.\n\n")

	verdict := []string{}
	for _, run := range runs[1:] {
		rt := ratio(float64(run.latencies().pct(95)), float64(base.pct(95)))
		w := run.waitsAfterFirstFold(grace, limit)
		v := "meets"
		if rt > 1.2 {
			v = "misses"
		}
		late := "no later turn waited past the grace"
		if w.late > 0 {
			late = fmt.Sprintf("%d later turn(s) waited past the grace, %d of them for the first summary", w.late, w.early)
		}
		verdict = append(verdict, fmt.Sprintf("**%s** %s the p95 target (%s) and %s", run.name, v, fmtRatio(rt), late))
	}
	out.printf("In this run: %s.\n", strings.Join(verdict, "; "))

	var parts []string
	for _, run := range runs[1:] {
		lat := run.latencies()
		w := run.waitsAfterFirstFold(grace, limit)
		parts = append(parts, fmt.Sprintf("%s p95 %s (%s the baseline's %s), %d of %d later turns waiting the whole grace, %d longer (%d of them for the first summary)",
			run.name, fmtDur(lat.pct(95)), fmtRatio(ratio(float64(lat.pct(95)), float64(base.pct(95)))), fmtDur(base.pct(95)), w.graced, w.turns, w.late, w.early))
	}
	out.headline("Reply latency with a %s summarizer (§9): %d `agent.Run` turns with a %s model — %s (targets: ≤ 1.20× and no turn after the first fold-trigger turn waiting past the %s grace).",
		fmtDur(r.p.replySummarizer), r.p.replyTurns, fmtDur(r.p.replyModel), strings.Join(parts, "; "), fmtDur(grace))
	return nil
}
