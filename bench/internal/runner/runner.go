// Package runner measures Strata against its baselines and writes the
// benchmark report (REPORT.md) and its SVG plots. Every figure is measured
// in the same run as its baseline and reported as a ratio against it.
//
// The sections are: context size per turn, summarizer cost, load latency
// against history length (with the one-round-trip load on PostgreSQL),
// trim cost, token estimation, save latency with a slow summarizer,
// retention of τ-bench action arguments, load under concurrency on
// PostgreSQL, the reply latency of an agent with a slow model and a slow
// summarizer, fact fidelity, write throughput with the in-memory store's
// footprint, strata serve under a bounded HTTP load, and peers
// (langchaingo's memory types, eino's summarization middleware) on the
// same LoCoMo replay, and the budget as the provider counts it (the
// estimate's error per language and encoding before and after
// calibration, refused calls and window share against a stand-in OpenAI
// server), and Strata on Citus beside plain PostgreSQL (loads, durable
// appends and the single-shard plans of its statements). The data sets
// are read in place from the shared data directory. PostgreSQL parts run
// when a database URL is given, the Citus section when a Citus
// coordinator's is too, and are skipped, with a note, otherwise.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/strata-go/strata/bench/internal/data"
)

// ReportFile is the report's file name in the output directory.
const ReportFile = "REPORT.md"

// Sections lists the section numbers in report order.
var Sections = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

// Options configures a run.
type Options struct {
	// OutDir receives REPORT.md and the SVG plots (created if needed).
	OutDir string
	// DataDir holds locomo/ and taubench_airline/ (read in place).
	DataDir string
	// DatabaseURL is a PostgreSQL server for the PostgreSQL parts; empty
	// skips them. The run works in a schema of its own, dropped at the end.
	DatabaseURL string
	// PoolerURL is a connection pooler in transaction mode (PgBouncer) in
	// front of DatabaseURL's server, reaching it as the same user and
	// routing any database name to that server's database of the name;
	// empty skips the pooled measurements.
	PoolerURL string
	// CitusURL is the coordinator of a Citus cluster on the same machine
	// as DatabaseURL's server, for section 16; empty skips it.
	CitusURL string
	// Sections selects sections by number; empty runs all.
	Sections []int
	// Quick runs a tiny subset with short timings: a smoke test of every
	// code path, not a measurement.
	Quick bool
	// Command is the command line shown in the report.
	Command string
	// Progress receives progress lines (nil: discarded).
	Progress io.Writer
}

// Result summarises a run.
type Result struct {
	// Files are the paths written, REPORT.md first.
	Files []string
	// Headlines are the one-line headline numbers, in section order.
	Headlines []string
	// Failed lists the sections that failed (their error is in the report).
	Failed []int
	// Elapsed is the run's wall time.
	Elapsed time.Duration
}

// params holds the sizes and timings of a run (full or quick).
type params struct {
	locomoConvs, locomoTurns int // 0 = all
	tauTrajs                 int // 0 = all
	tokenBufferLimit         int

	loadSizes             []int
	loadWarm, loadMinOps  int
	loadMinTime           time.Duration
	trimTurns             []int
	trimMinTime           time.Duration
	trimMaxOps            int
	estMinTime            time.Duration
	estTexts              int // LoCoMo texts for section 5 (0 = all)
	countTokensTexts      int
	slowDelay             time.Duration
	slowRounds, slowSaves int
	concSessions          int
	concTurns             int
	concWorkers           int
	concThink             []time.Duration // simulated model call between load and save
	concPasses            int             // passes of the order A B C C B A per model call

	// Section 9: agent.Run turns per configuration, the stand-in model's
	// and summarizer's call durations, the user's pause between turns and
	// the manager's load grace.
	replyTurns                                          int
	replyModel, replySummarizer, replyPause, replyGrace time.Duration

	// Section 10: the planted-facts probe's checkpoint lengths (user
	// turns, ascending), runs per filler, and the turns of each LoCoMo
	// conversation replayed for QA evidence retention (0 = all).
	fidLengths []int
	fidSeeds   int
	fidQATurns int
	// ledgerMessages is the length of section 3's full-ledger session.
	ledgerMessages int
}

func fullParams() params {
	return params{
		tokenBufferLimit: 2000,
		loadSizes:        []int{100, 1_000, 10_000, 100_000},
		ledgerMessages:   20_000,
		loadWarm:         50, loadMinOps: 600, loadMinTime: 900 * time.Millisecond,
		trimTurns:   []int{100, 500, 2_000},
		trimMinTime: 500 * time.Millisecond, trimMaxOps: 2_000,
		estMinTime: 300 * time.Millisecond, countTokensTexts: 20,
		slowDelay: 2 * time.Second, slowRounds: 5, slowSaves: 100,
		concSessions: 200, concTurns: 30, concWorkers: 50,
		concThink: []time.Duration{0, 50 * time.Millisecond}, concPasses: 2,
		replyTurns: 40, replyModel: time.Second, replySummarizer: 2 * time.Second,
		replyPause: 300 * time.Millisecond, replyGrace: 300 * time.Millisecond,
		fidLengths: []int{50, 100, 200, 400}, fidSeeds: 2, fidQATurns: 160,
	}
}

func quickParams() params {
	return params{
		locomoConvs: 1, locomoTurns: 40, tauTrajs: 4,
		tokenBufferLimit: 2000,
		loadSizes:        []int{100, 1_000},
		ledgerMessages:   1_000,
		loadWarm:         2, loadMinOps: 10, loadMinTime: 5 * time.Millisecond,
		trimTurns:   []int{10, 30},
		trimMinTime: time.Millisecond, trimMaxOps: 3,
		estMinTime: time.Millisecond, estTexts: 200, countTokensTexts: 2,
		slowDelay: 50 * time.Millisecond, slowRounds: 2, slowSaves: 15,
		concSessions: 4, concTurns: 12, concWorkers: 2,
		concThink: []time.Duration{0, time.Millisecond}, concPasses: 1,
		replyTurns: 24, replyModel: 40 * time.Millisecond, replySummarizer: 80 * time.Millisecond,
		replyPause: 12 * time.Millisecond, replyGrace: 12 * time.Millisecond,
		fidLengths: []int{24, 40}, fidSeeds: 1,
	}
}

// runner carries what the sections share.
type runner struct {
	opts   Options
	p      params
	env    environment
	count  *counter
	quiet  *slog.Logger
	logMu  sync.Mutex
	out    io.Writer
	locomo *data.LoCoMo
	tau    []data.Trajectory
	pg     *pgEnv
	pgErr  error
}

// section is one part of the report.
type section struct {
	num   int
	title string
	run   func(ctx context.Context, r *runner, out *sectionOut) error
}

// sectionOut collects a section's Markdown, headlines and plots.
type sectionOut struct {
	body      strings.Builder
	headlines []string
	files     map[string][]byte
}

func (o *sectionOut) printf(format string, args ...any) { fmt.Fprintf(&o.body, format, args...) }

func (o *sectionOut) headline(format string, args ...any) {
	o.headlines = append(o.headlines, fmt.Sprintf(format, args...))
}

func (o *sectionOut) file(name string, content []byte) {
	if o.files == nil {
		o.files = map[string][]byte{}
	}
	o.files[name] = content
}

var allSections = []section{
	{1, "Context size per turn", runContextSize},
	{2, "Summarizer cost", runSummarizerCost},
	{3, "Load latency vs history length", runLoadLatency},
	{4, "Trim cost", runTrimCost},
	{5, "Token estimation", runTokenEstimation},
	{6, "Save latency with a slow summarizer", runSlowSave},
	{7, "Retention of τ-bench action arguments", runRetention},
	{8, "Load under concurrency (PostgreSQL)", runConcurrency},
	{9, "Reply latency with a slow summarizer (agent.Run)", runReplyLatency},
	{10, "Fact fidelity: planted facts and LoCoMo QA evidence", runFidelity},
	{11, "Write throughput and in-memory footprint", runWrites},
	{12, "strata serve under load (PostgreSQL, loopback)", runServeLoad},
	{13, "Peers on the same LoCoMo replay", runPeers},
	{14, "The budget as the provider counts it", runBudget},
	{15, "Beside langchaingo's PostgreSQL chat history", runPGHistory},
	{16, "Strata on Citus beside plain PostgreSQL", runCitus},
}

// Run measures the selected sections and writes the report and plots to
// opts.OutDir. A failing section is reported in REPORT.md and in
// Result.Failed; Run's error is for failures to start or to write.
func Run(ctx context.Context, opts Options) (*Result, error) {
	began := time.Now()
	if opts.OutDir == "" {
		return nil, errors.New("runner: no output directory")
	}
	if opts.Command == "" {
		opts.Command = "go run ./bench/cmd/strata-bench"
	}
	for _, n := range opts.Sections {
		if !slices.Contains(Sections, n) {
			return nil, fmt.Errorf("runner: unknown section %d (want 1–%d)", n, len(Sections))
		}
	}
	r, err := newRunner(opts, began)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	defer r.closePG()

	res := &Result{}
	var bodies strings.Builder
	files := map[string][]byte{}
	for _, s := range allSections {
		if len(opts.Sections) > 0 && !slices.Contains(opts.Sections, s.num) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r.progress("section %d: %s", s.num, s.title)
		t0 := time.Now()
		out := &sectionOut{}
		runtime.GC()
		err := s.run(ctx, r, out)
		fmt.Fprintf(&bodies, "\n## %d. %s\n\n", s.num, s.title)
		bodies.WriteString(out.body.String())
		if err != nil {
			res.Failed = append(res.Failed, s.num)
			fmt.Fprintf(&bodies, "\n**This section failed:** `%s`\n", strings.ReplaceAll(err.Error(), "`", "'"))
			r.progress("section %d FAILED: %v", s.num, err)
		}
		fmt.Fprintf(&bodies, "\n<sub>section %d took %s</sub>\n", s.num, fmtDur(time.Since(t0).Round(time.Millisecond)))
		res.Headlines = append(res.Headlines, out.headlines...)
		for name, content := range out.files {
			files[name] = content
		}
		r.progress("section %d done in %s", s.num, time.Since(t0).Round(time.Millisecond))
	}
	res.Elapsed = time.Since(began)

	report := r.header(res) + bodies.String()
	path := filepath.Join(opts.OutDir, ReportFile)
	if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	res.Files = append(res.Files, path)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := filepath.Join(opts.OutDir, name)
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return nil, fmt.Errorf("runner: %w", err)
		}
		res.Files = append(res.Files, p)
	}
	return res, nil
}

// header renders the top of the report.
func (r *runner) header(res *Result) string {
	var b strings.Builder
	b.WriteString("# Strata benchmark report\n\n")
	b.WriteString("<!-- Generated by bench/cmd/strata-bench. Do not edit by hand: regenerate it. -->\n\n")
	b.WriteString("Generated file. Regenerate it and the SVG plots beside it from the repository root with\n\n")
	b.WriteString("```sh\nmake bench        # = go run ./bench/cmd/strata-bench -out bench\n```\n\n")
	b.WriteString("(see [README.md](README.md) for flags and for PostgreSQL). ")
	b.WriteString("Every figure is measured in this run next to its baseline and reported as a ratio against it.\n\n")
	if r.opts.Quick {
		b.WriteString("> **Quick mode (`-quick`)**: tiny subsets and short timings — a smoke test of the code paths; the numbers mean nothing.\n\n")
	}
	b.WriteString(mdTable([]string{"", ""}, [][]string{
		{"machine", r.env.machine()},
		{"Go", r.env.Go},
		{"date", r.env.Date.Format("2006-01-02 15:04 MST")},
		{"command", "`" + r.env.Command + "`"},
		{"PostgreSQL", r.pgSummary()},
		{"total runtime", fmtDur(res.Elapsed.Round(time.Millisecond))},
		{"load average (1 min) at start / end", r.env.LoadAvg + " / " + loadAverage() + fmt.Sprintf(" (on %d cores; other processes running during the run skew timings — ratios are measured with baseline and candidate interleaved or back to back to limit that)", r.env.Cores)},
		{"data", "LoCoMo (`locomo/locomo10.json`, CC BY-NC 4.0) and τ-bench airline (`taubench_airline/gpt-4o-airline.json`, MIT), read in place from `" + r.opts.DataDir + "`"},
	}))
	if len(res.Failed) > 0 {
		fmt.Fprintf(&b, "\n**Failed sections:** %v (see below).\n", res.Failed)
	}
	if len(res.Headlines) > 0 {
		b.WriteString("\n## Headline numbers\n\n")
		for _, h := range res.Headlines {
			b.WriteString("- " + h + "\n")
		}
	}
	return b.String()
}

// progress prints one progress line.
func (r *runner) progress(format string, args ...any) {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	fmt.Fprintf(r.out, "strata-bench: "+format+"\n", args...)
}

// loadLoCoMo reads LoCoMo once, cut to the run's size.
func (r *runner) loadLoCoMo() (*data.LoCoMo, error) {
	if r.locomo != nil {
		return r.locomo, nil
	}
	l, err := data.LoadLoCoMo(r.opts.DataDir)
	if err != nil {
		return nil, err
	}
	if n := r.p.locomoConvs; n > 0 && len(l.Conversations) > n {
		l.Conversations = l.Conversations[:n]
	}
	for i := range l.Conversations {
		l.Conversations[i] = l.Conversations[i].Truncate(r.p.locomoTurns)
	}
	if n := r.p.estTexts; n > 0 && len(l.Texts) > n {
		l.Texts = l.Texts[:n]
	}
	r.locomo = l
	return l, nil
}

// loadTau reads τ-bench once, cut to the run's size.
func (r *runner) loadTau() ([]data.Trajectory, error) {
	if r.tau != nil {
		return r.tau, nil
	}
	t, err := data.LoadTauBench(r.opts.DataDir)
	if err != nil {
		return nil, err
	}
	if n := r.p.tauTrajs; n > 0 && len(t) > n {
		t = t[:n]
	}
	r.tau = t
	return t, nil
}

// silenceStdLog discards the standard logger's output (langchaingo's
// llms.CountTokens writes a warning per call) until the returned function
// is called.
func silenceStdLog() (restore func()) {
	prev := log.Writer()
	log.SetOutput(io.Discard)
	return func() { log.SetOutput(prev) }
}

// newRunner returns a runner for opts, with the exact token counter
// installed. The counter installs tiktoken-go's offline BPE loader, a
// process-wide setting: it comes first, before anything else (langchaingo's
// llms.CountTokens included) touches tiktoken-go, so nothing downloads.
func newRunner(opts Options, began time.Time) (*runner, error) {
	r := &runner{
		opts:  opts,
		p:     fullParams(),
		env:   detectEnvironment(opts.Command, began),
		quiet: slog.New(slog.NewTextHandler(io.Discard, nil)),
		out:   opts.Progress,
	}
	if r.out == nil {
		r.out = io.Discard
	}
	if opts.Quick {
		r.p = quickParams()
	}
	c, err := newCounter()
	if err != nil {
		return nil, fmt.Errorf("runner: tiktoken: %w", err)
	}
	r.count = c
	return r, nil
}
