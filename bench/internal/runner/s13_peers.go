package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"
	lcmemory "github.com/tmc/langchaingo/memory"
	lcschema "github.com/tmc/langchaingo/schema"

	"github.com/strata-go/strata/bench/internal/data"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// peersConversations is how many LoCoMo conversations section 13 replays
// in a full run (all their turns): a cap that keeps the section short on a
// shared machine. A quick run replays the quick run's one short
// conversation.
const peersConversations = 3

// peersDir is the peer harness's module, relative to the repository root.
const peersDir = "bench/peers"

// rootModule is the module path of the repository root.
const rootModule = "github.com/strata-go/strata"

// runPeers is section 13. The peers that live outside the root module's
// dependencies (eino) are compared by the harness module in bench/peers,
// which renders the whole section with RunPeers; it runs as a subprocess
// (go run), so that the root module never depends on eino. When it cannot
// run, the section says so in one line and renders the policies that run
// in this process.
func runPeers(ctx context.Context, r *runner, out *sectionOut) error {
	rep, why := r.peersSubprocess(ctx)
	if rep != nil {
		out.printf("%s", rep.Body)
		for _, h := range rep.Headlines {
			out.headline("%s", h)
		}
		return nil
	}
	out.printf("**eino's summarization middleware did not run:** %s; the policies below ran inside strata-bench without it.\n\n", why)
	_, err := r.peersBody(ctx, nil, out)
	return err
}

// peersSubprocess runs the harness in bench/peers for section 13 and
// returns its report, or nil and why it could not.
func (r *runner) peersSubprocess(ctx context.Context) (*PeersReport, string) {
	raw, why := r.harness(ctx)
	if raw == nil {
		return nil, why
	}
	var rep PeersReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		return nil, fmt.Sprintf("the output of `go run .` in `%s` is not its JSON report (%v)", peersDir, err)
	}
	if rep.Body == "" {
		return nil, fmt.Sprintf("`go run .` in `%s` printed an empty report", peersDir)
	}
	return &rep, ""
}

// harness runs the peer harness in bench/peers (go run . -json with the
// run's data directory, quickness and command, then args) and returns
// what it printed, or nil and why it could not run.
func (r *runner) harness(ctx context.Context, args ...string) ([]byte, string) {
	dir, err := peersModuleDir()
	if err != nil {
		return nil, err.Error()
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, "no go command: " + err.Error()
	}
	dataDir, err := filepath.Abs(r.opts.DataDir)
	if err != nil {
		return nil, err.Error()
	}
	all := []string{"run", ".", "-json", "-data", dataDir, "-command", r.env.Command}
	if r.opts.Quick {
		all = append(all, "-quick")
	}
	all = append(all, args...)
	r.progress("  peers: go run . %s in %s", strings.Join(args, " "), dir)
	cmd := exec.CommandContext(ctx, goBin, all...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stdout bytes.Buffer
	stderr := &tailWriter{fwd: r.out}
	cmd.Stdout = &stdout
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		msg := fmt.Sprintf("`go run .` in `%s` failed (%v", peersDir, err)
		if last := stderr.firstError(); last != "" {
			msg += ": " + last
		}
		return nil, strings.ReplaceAll(msg+")", "`", "'")
	}
	return stdout.Bytes(), ""
}

// peersModuleDir finds bench/peers below the repository root, the first
// directory from the working directory up whose go.mod declares the root
// module.
func peersModuleDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && modulePath(b) == rootModule {
			p := filepath.Join(dir, filepath.FromSlash(peersDir))
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err != nil {
				return "", fmt.Errorf("no peer harness module: %w", err)
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("the repository root (go.mod of " + rootModule + ") is not above the working directory")
		}
		dir = parent
	}
}

// modulePath returns the module path a go.mod declares.
func modulePath(gomod []byte) string {
	for _, l := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// tailWriter forwards a subprocess's standard error and keeps its end for
// an error message.
type tailWriter struct {
	fwd  interface{ Write([]byte) (int, error) }
	mu   sync.Mutex
	tail []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fwd != nil {
		_, _ = w.fwd.Write(p)
	}
	w.tail = append(w.tail, p...)
	if len(w.tail) > 4096 {
		w.tail = w.tail[len(w.tail)-4096:]
	}
	return len(p), nil
}

// firstError returns the first line written that is neither a progress
// line nor a compiler's package header (the last line when every line is
// one), at most 300 bytes.
func (w *tailWriter) firstError() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(w.tail)), "\n")
	pick := strings.TrimSpace(lines[len(lines)-1])
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "strata-bench:") && !strings.HasPrefix(l, "#") {
			pick = l
			break
		}
	}
	if len(pick) > 300 {
		pick = pick[:300] + "…"
	}
	return pick
}

// meteredService wraps a summarizer and records what an LLM summarizer
// would have been sent for every call: the prompt summary.BuildPrompt
// renders (a system and a user message), priced with the section's
// counter, as section 2 prices it.
type meteredService struct {
	inner summary.Service
	count *counter

	mu sync.Mutex
	u  PeerUsage
}

func (m *meteredService) Summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	t0 := time.Now()
	system, user := summary.BuildPrompt(req, 0)
	n := 2*perMessageOverhead + m.count.lines(system) + m.count.lines(user)
	spent := time.Since(t0)
	m.mu.Lock()
	m.u.Calls++
	m.u.InputTokens += n
	m.u.Pricing += spent
	m.mu.Unlock()
	return m.inner.Summarize(ctx, req)
}

func (m *meteredService) usage() PeerUsage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.u
}

// lcMemory is a langchaingo memory (ConversationBuffer,
// ConversationWindowBuffer) used as langchaingo's chains and agents use
// one: SaveContext with the user input and the final answer; the model
// sees the memory's chat history.
type lcMemory struct {
	mem  lcschema.Memory
	hist lcschema.ChatMessageHistory
}

func (l *lcMemory) view(ctx context.Context) ([]llms.ChatMessage, error) {
	return l.hist.Messages(ctx)
}

func (l *lcMemory) save(ctx context.Context, t data.Turn) error {
	return l.mem.SaveContext(ctx, map[string]any{"input": t.User}, map[string]any{"output": t.AssistantText()})
}

func (l *lcMemory) close() {}

func newLCBuffer() *lcMemory {
	b := lcmemory.NewConversationBuffer()
	return &lcMemory{mem: b, hist: b.ChatHistory}
}

func newLCWindow(turns int) *lcMemory {
	w := lcmemory.NewConversationWindowBuffer(turns)
	return &lcMemory{mem: w, hist: w.ChatHistory}
}

// exactInput is a policy whose model input is not its view plus the
// current user message (a policy that may fold the user message away).
type exactInput interface {
	modelInput() []llms.ChatMessage
}

// extPolicy replays a PeerPolicy as a policy: its view is the peer's model
// input for the conversation's next user turn.
type extPolicy struct {
	p     PeerPolicy
	conv  data.Conversation
	next  int
	input []llms.ChatMessage
}

func (e *extPolicy) view(ctx context.Context) ([]llms.ChatMessage, error) {
	if e.next >= len(e.conv.Turns) {
		return nil, fmt.Errorf("%s: view after the last turn", e.conv.ID)
	}
	in, err := e.p.ModelInput(ctx, e.conv.Turns[e.next].User)
	e.input = in
	return in, err
}

func (e *extPolicy) save(ctx context.Context, t data.Turn) error {
	e.next++
	return e.p.Save(ctx, t.Messages())
}

func (e *extPolicy) close() { e.p.Close() }

func (e *extPolicy) modelInput() []llms.ChatMessage { return e.input }

// timedPolicy measures the wall time of a policy's views and saves, summed
// per turn, less the time its summarizer meter spent pricing.
type timedPolicy struct {
	policy
	usage   func() PeerUsage // nil: the policy has no summarizer
	turn    int
	perTurn []time.Duration
}

func (t *timedPolicy) pricing() time.Duration {
	if t.usage == nil {
		return 0
	}
	return t.usage().Pricing
}

func (t *timedPolicy) view(ctx context.Context) ([]llms.ChatMessage, error) {
	before := t.pricing()
	t0 := time.Now()
	v, err := t.policy.view(ctx)
	d := time.Since(t0)
	t.perTurn[t.turn] += d - (t.pricing() - before)
	return v, err
}

func (t *timedPolicy) save(ctx context.Context, turn data.Turn) error {
	before := t.pricing()
	t0 := time.Now()
	err := t.policy.save(ctx, turn)
	d := time.Since(t0)
	t.perTurn[t.turn] += d - (t.pricing() - before)
	t.turn++
	return err
}

// peerStats pools one policy's measurements over the conversations.
type peerStats struct {
	tokens []int
	times  samples
	usage  PeerUsage
}

// peersBody replays the capped LoCoMo set through the built-in policies of
// section 13 and the given peers, one conversation after the other (time
// per turn is measured), and renders the section.
func (r *runner) peersBody(ctx context.Context, peers []Peer, out *sectionOut) ([]PeerRow, error) {
	defer silenceStdLog()()
	locomo, err := r.loadLoCoMo()
	if err != nil {
		return nil, err
	}
	convs := locomo.Conversations
	if n := peersConversations; !r.opts.Quick && len(convs) > n {
		convs = convs[:n]
	}
	if r.opts.Quick && len(convs) > 1 {
		convs = convs[:1]
	}
	parity, chunked := parityConfig(), chunkedConfig()
	windowTurns := max(1, parity.RecentMessageCount/2)

	names := []string{
		"full history",
		"langchaingo ConversationBuffer",
		fmt.Sprintf("langchaingo ConversationWindowBuffer (%d turns = %d messages)", windowTurns, 2*windowTurns),
		fmt.Sprintf("langchaingo ConversationTokenBuffer (%s)", fmtInt(r.p.tokenBufferLimit)),
	}
	for _, p := range peers {
		names = append(names, p.Name)
	}
	names = append(names, "Strata parity", "Strata chunked")
	chunkedIdx := len(names) - 1
	env := PeerEnv{CountMessages: r.count.messages, NewSummarizer: summary.NewExtractiveService, Strata: chunked}

	stats := make([]peerStats, len(names))
	summarizes := make([]bool, len(names))
	turns := 0
	for ci, conv := range convs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r.progress("  peers: LoCoMo %s (%d/%d, %d turns)", conv.ID, ci+1, len(convs), len(conv.Turns))
		pols := []policy{&fullHistory{}, newLCBuffer(), newLCWindow(windowTurns), newTokenBuffer(r.p.tokenBufferLimit)}
		usage := make([]func() PeerUsage, len(pols), len(names))
		closeAll := func() {
			for _, p := range pols {
				p.close()
			}
		}
		for _, p := range peers {
			pp, err := p.New(env)
			if err != nil {
				closeAll()
				return nil, fmt.Errorf("%s: %w", p.Name, err)
			}
			pols = append(pols, &extPolicy{p: pp, conv: conv})
			usage = append(usage, pp.Usage)
		}
		for _, s := range []struct {
			name string
			cfg  memory.Config
		}{{"parity", parity}, {"chunked", chunked}} {
			m := &meteredService{inner: summary.NewExtractiveService(), count: r.count}
			sp, err := r.newStrata(s.cfg, m, "s13-"+s.name+"-"+conv.ID)
			if err != nil {
				closeAll()
				return nil, err
			}
			pols = append(pols, sp)
			usage = append(usage, m.usage)
		}
		timed := make([]*timedPolicy, len(pols))
		asPolicies := make([]policy, len(pols))
		for i, p := range pols {
			timed[i] = &timedPolicy{policy: p, usage: usage[i], perTurn: make([]time.Duration, len(conv.Turns))}
			asPolicies[i] = timed[i]
			summarizes[i] = usage[i] != nil
		}
		tokens := make([][]int, len(pols))
		for i := range tokens {
			tokens[i] = make([]int, len(conv.Turns))
		}
		err := replay(ctx, conv, asPolicies, func(turn, pol int, msgs []llms.ChatMessage) {
			if e, ok := timed[pol].policy.(exactInput); ok {
				msgs = e.modelInput()
			}
			tokens[pol][turn] = r.count.messages(msgs)
		})
		for i := range pols {
			st := &stats[i]
			st.tokens = append(st.tokens, tokens[i]...)
			st.times = append(st.times, timed[i].perTurn...)
			if usage[i] != nil {
				u := usage[i]()
				st.usage.Calls += u.Calls
				st.usage.InputTokens += u.InputTokens
			}
		}
		closeAll()
		if err != nil {
			return nil, err
		}
		turns += len(conv.Turns)
	}

	rows := make([]PeerRow, len(names))
	for i, name := range names {
		st := stats[i]
		rows[i] = PeerRow{
			Name: name, Turns: turns,
			MeanTokens: meanInt(st.tokens), MaxTokens: maxInt(st.tokens),
			Summarizes: summarizes[i], SummarizerCalls: st.usage.Calls, SummarizerInputTokens: st.usage.InputTokens,
			TurnMean: st.times.mean(), TurnP50: st.times.pct(50), TurnP99: st.times.pct(99),
		}
	}
	r.renderPeers(out, peers, rows, convs, len(locomo.Conversations), windowTurns, chunkedIdx)
	return rows, nil
}

// moduleVersion returns the version of a module the running program was
// built with ("" when unknown).
func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, m := range bi.Deps {
		if m.Path == path {
			if m.Replace != nil && m.Replace.Version != "" {
				return m.Replace.Version
			}
			return m.Version
		}
	}
	return ""
}

// renderPeers writes section 13's text, tables and headline.
func (r *runner) renderPeers(out *sectionOut, peers []Peer, rows []PeerRow, convs []data.Conversation, allConvs, windowTurns, chunkedIdx int) {
	parity := parityConfig()
	turns := 0
	if len(rows) > 0 {
		turns = rows[0].Turns
	}
	lcVersion := moduleVersion("github.com/tmc/langchaingo")
	if lcVersion == "" {
		lcVersion = "(version of go.mod)"
	}
	peerList := "and "
	if len(peers) > 0 {
		peerList = "CloudWeGo eino's summarization middleware and "
	}
	ids := make([]string, len(convs))
	for i, c := range convs {
		ids[i] = c.ID
	}

	out.printf("The LoCoMo replay of section 1 — what the model is sent at every user turn, priced with the same counter (tiktoken `cl100k_base` over contents and tool-call names and arguments, plus %d tokens per message; the system prompt left out) — through langchaingo's memory types, %sStrata. Every summarizing policy uses the same offline extractive summarizer (`summary.NewExtractiveService()`), so only the memory policy differs.\n\n", perMessageOverhead, peerList)
	if r.opts.Quick {
		out.printf("Replay: %d conversation (%s), cut to %s user turns (quick mode).\n\n", len(convs), strings.Join(ids, ", "), fmtInt(turns))
	} else {
		out.printf("Replay: the first %d of the %d LoCoMo conversations (%s), all their turns — %s user turns; capped to keep the section short on a shared machine. Conversations replay one after the other; within a turn every policy loads, then every policy saves, in table order.\n\n", len(convs), allConvs, strings.Join(ids, ", "), fmtInt(turns))
	}
	out.printf("- **full history**: every message so far — arc-reactor of the token ratios.\n")
	out.printf("- **langchaingo** `github.com/tmc/langchaingo/memory` %s, fed as langchaingo's chains and agents feed a memory: `SaveContext` with the user input and the final answer; the model sees the memory's chat history. **ConversationBuffer** (`NewConversationBuffer()`) keeps everything, so on LoCoMo (no tool calls) it holds exactly the full history. **ConversationWindowBuffer** (`NewConversationWindowBuffer(%d)`) keeps the last %d exchanges = %d messages, Strata's verbatim window, and nothing older. **ConversationTokenBuffer** (`NewConversationTokenBuffer(nil, %s)`, as in section 1) drops the oldest messages beyond %s tokens, which langchaingo counts as runes/4 (its log warning per count silenced). This version of langchaingo has no summarizing memory (its `memory` package holds only these buffers and chat-history stores), so no langchaingo row calls a summarizer.\n",
		lcVersion, windowTurns, windowTurns, 2*windowTurns, fmtInt(r.p.tokenBufferLimit), fmtInt(r.p.tokenBufferLimit))
	for _, p := range peers {
		out.printf("- **%s**: %s\n", p.Name, p.Description)
	}
	out.printf("- **Strata parity**: `memory.DefaultConfig()` with `Enabled: true` — trigger %d messages, verbatim window %d, everything before the window re-summarized from the original messages after every save above the trigger, in several calls when it exceeds `MaxFoldInputTokens` (%s input tokens); **Strata chunked**: the same with `Policy: memory.PolicyChunked` — the window grows from %d to %d messages before the oldest are folded incrementally (existing summary plus the new messages; token and %d-turn safety triggers at their defaults). In-memory stores, `Flush` after every turn so folds are deterministic, as in sections 1 and 2.\n\n",
		parity.TriggerMessageCount, parity.RecentMessageCount, fmtInt(parity.MaxFoldInputTokens), parity.RecentMessageCount, parity.RecentMessageCount+chunkedConfig().BufferMessageCount, chunkedConfig().SafetyTurns)
	out.printf("Summarizer input tokens are what a summarizer model is sent, priced with the same counter: for Strata, the prompt `summary.BuildPrompt` renders for the call (section 2's pricing); for eino, the messages the middleware passes to its summarizer model. Time per turn is the wall time of a policy's load and save for one turn — for eino the middleware's `BeforeModelRewriteState` and keeping the turn's messages — summarizer included and the pricing of its input left out, measured in this run with every policy interleaved turn by turn. The extractive summarizer is fast and offline: with an LLM summarizer, each summarizer call would add a model call's latency and cost, so the call counts are the figures that carry over.\n\n")

	base, ch := rows[0], rows[chunkedIdx]
	var ctxRows, costRows [][]string
	per100 := func(v int) float64 { return ratio(100*float64(v), float64(turns)) }
	for _, row := range rows {
		ctxRows = append(ctxRows, []string{row.Name, fmtFloat(row.MeanTokens), fmtInt(row.MaxTokens),
			fmtRatio(ratio(row.MeanTokens, base.MeanTokens)), fmtRatio(ratio(float64(row.MaxTokens), float64(base.MaxTokens))),
			fmtRatio(ratio(row.MeanTokens, ch.MeanTokens))})
		calls, input, perCall, callsR, inputR := "—", "—", "—", "—", "—"
		if row.Summarizes {
			calls, input = fmtFloat(per100(row.SummarizerCalls)), fmtInt(int(per100(row.SummarizerInputTokens)+0.5))
			perCall = fmtInt(int(ratio(float64(row.SummarizerInputTokens), float64(row.SummarizerCalls)) + 0.5))
			if row.SummarizerCalls == 0 {
				perCall = "—"
			}
			callsR = fmtRatio(ratio(float64(row.SummarizerCalls), float64(ch.SummarizerCalls)))
			inputR = fmtRatio(ratio(float64(row.SummarizerInputTokens), float64(ch.SummarizerInputTokens)))
		}
		costRows = append(costRows, []string{row.Name, calls, input, perCall, callsR, inputR,
			fmtDur(row.TurnMean), fmtDur(row.TurnP50), fmtDur(row.TurnP99),
			fmtRatio(ratio(float64(row.TurnMean), float64(ch.TurnMean)))})
	}
	out.printf("### Context tokens per user turn (%s turns)\n\n%s%s\n", fmtInt(turns), r.env.provenance(false),
		mdTable([]string{"policy", "mean tokens / turn", "max tokens / turn", "mean ÷ full history", "max ÷ full history", "mean ÷ Strata chunked"}, ctxRows))
	out.printf("### Summarizer use and time per turn\n\n%s%s\n", r.env.provenance(false),
		mdTable([]string{"policy", "summarizer calls / 100 turns", "summarizer input tokens / 100 turns", "input tokens / call", "calls ÷ Strata chunked", "input tokens ÷ Strata chunked", "time / turn (mean)", "p50", "p99", "mean time ÷ Strata chunked"}, costRows))
	out.printf("A dash (—) marks a policy that never calls a summarizer. Times are those of one process on a shared machine: compare them within the table, not across reports; a mean includes the rare pauses (garbage collection, scheduling) that land in a turn, which can put it above the p99 of the cheapest policies.\n")

	var parts []string
	for i, row := range rows {
		if !row.Summarizes || i == chunkedIdx {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s tokens (%s of the full history) with %s calls and %s input tokens per 100 turns",
			row.Name, fmtFloat(row.MeanTokens), fmtRatio(ratio(row.MeanTokens, base.MeanTokens)),
			fmtFloat(per100(row.SummarizerCalls)), fmtInt(int(per100(row.SummarizerInputTokens)+0.5))))
	}
	h := fmt.Sprintf("Peers (§13), LoCoMo (%s turns): Strata chunked shows %s tokens per turn on average (%s of the full history's %s) with %s summarizer calls and %s input tokens per 100 turns",
		fmtInt(turns), fmtFloat(ch.MeanTokens), fmtRatio(ratio(ch.MeanTokens, base.MeanTokens)), fmtFloat(base.MeanTokens),
		fmtFloat(per100(ch.SummarizerCalls)), fmtInt(int(per100(ch.SummarizerInputTokens)+0.5)))
	if len(parts) > 0 {
		h += "; " + strings.Join(parts, "; ")
	}
	out.headline("%s.", h)
}
