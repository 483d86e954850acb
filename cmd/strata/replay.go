package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/autoconfig"
	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/internal/msgjson"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

const replayUsage = `Usage: strata replay [flags] FILE|-

Feeds a transcript through a memory manager built from the configuration
(default: in-memory stores and the offline extractive summarizer; unlike
the other commands, replay does not fall back on $DATABASE_URL) and shows,
before each user message, what the model would receive: the system prompt,
the memory (facts, narrative, verbatim window or takeLast) and the user
message, trimmed to the context window, with token counts, the number of
stored messages and folds. A final summary shows the facts and narrative.

Replay waits for each background fold to finish before the next turn
(Manager.Flush), so reports are deterministic; a live application never
waits.

Summaries are ON in replay unless the configuration sets
arc.reactor.memory.summary.enabled (the library default is off): replay is
for seeing folds. Use --set arc.reactor.memory.summary.enabled=false to
replay takeLast only.

FILE - reads the transcript from standard input.

Formats (--format, auto-detected from the extension and first bytes):
  jsonl     one {"role","content"} object per line; roles system, user,
            assistant (with "tool_calls") and tool (with "tool_call_id");
            a field replay does not know (say "text" for "content") is an
            error, as is a tool result that does not follow the assistant
            message whose call it answers (an orphan)
  json      a JSON array of such messages, or an OpenAI-style object with
            them in "messages" (other fields, like "model", are ignored)
  locomo    LoCoMo (locomo10.json): speaker_a is the user, speaker_b the
            assistant; --sample conv-26 | INDEX | all (default: the first)
  taubench  τ-bench trajectories (gpt-4o-airline.json); the system message is
            the system prompt; --sample INDEX | task:N | task:N/trial:T | all

Leading system messages become the system prompt (not stored).

A tool call left without a result (a dangling tool call) is stored as it is
and left out of the prompt, which providers would reject; the report says so.

Replay fails (exit status 1) when every fold failed, for example because
the summarizer is unreachable, and prints the last error.

Output: a readable report on stdout, or with --json one JSON object per turn
  {"turn":N,"context":[{"role":…,"content":…}],"context_tokens":N,"stored_messages":N,"folds":N,"mode":…}
followed by {"summary":{…}} with the facts and narrative. A progress bar is
drawn on stderr for long replays when stderr is a terminal.

Flags:
`

type replayOptions struct {
	format    string
	sample    string
	json      bool
	full      bool
	session   string
	user      string
	encoding  string
	progress  bool
	reset     bool
	verbose   bool
	width     int
	configSrc commonFlags
}

func cmdReplay(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	var o replayOptions
	o.configSrc.register(fs)
	// A DATABASE_URL set for other tools must not turn the README's first
	// command into writes to that database: replay uses PostgreSQL only
	// when the configuration names it.
	o.configSrc.ignoreDatabaseURL = true
	fs.StringVar(&o.format, "format", "auto", "transcript `FORMAT`: auto, jsonl, json, locomo or taubench")
	fs.StringVar(&o.sample, "sample", "", "LoCoMo/τ-bench sample: an `ID`, an index, task:N[/trial:T] or all (default: the first)")
	fs.BoolVar(&o.json, "json", false, "write one JSON object per turn instead of the report")
	fs.BoolVar(&o.full, "full", false, "report: print messages in full instead of one shortened line each")
	fs.StringVar(&o.session, "session", "", "session `ID` to replay into (default replay:<sample name>)")
	fs.StringVar(&o.user, "user", "replay", "user `ID` owning the replayed session")
	fs.StringVar(&o.encoding, "encoding", "", "token counting `ENCODING`: cl100k_base or o200k_base (exact, offline); empty: the configuration's token-encoding (default Strata's estimator)")
	fs.BoolVar(&o.progress, "progress", true, "draw a progress bar on stderr when it is a terminal")
	fs.BoolVar(&o.reset, "reset", false, "delete the session first if the configured store already holds it")
	fs.BoolVar(&o.verbose, "verbose", false, "log summarizer calls and folds on stderr")
	fs.IntVar(&o.width, "width", 160, "report: shorten messages to this many characters")
	pos, err := parseFlags(fs, args, replayUsage, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("replay: want exactly one FILE, got %d arguments (see strata replay --help)", len(pos))
	}
	format, ok := normalizeFormat(o.format)
	if !ok {
		return usagef("replay: unknown format %q (want %s)", o.format, strings.Join(formatNames, ", "))
	}
	if o.session != "" && strings.EqualFold(o.sample, "all") {
		return usagef("replay: --session cannot be used with --sample all")
	}

	if !o.verbose { // --verbose logs at debug level: the build lists the unused keys
		o.configSrc.stderr = stderr
	}
	cfg, err := o.configSrc.load()
	if err != nil {
		return err
	}
	summariesDefault := false
	if !cfg.IsSet("arc.reactor.memory.summary.enabled") {
		cfg.Memory.Enabled = true
		summariesDefault = true
		if err := cfg.Validate(); err != nil {
			return err
		}
	}

	ts, format, err := loadTranscripts(pos[0], format, o.sample, cfg.Memory.MaxMessageBytes, stdin)
	if err != nil {
		return err
	}

	if o.encoding != "" {
		if o.encoding != trimmer.EncodingCL100kBase && o.encoding != trimmer.EncodingO200kBase {
			return usagef("replay: --encoding %q: want cl100k_base or o200k_base", o.encoding)
		}
		// The manager fits prompts with the exact tokenizer too.
		cfg.TokenEncoding = o.encoding
	}

	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelDebug
	}
	folds := &foldErrors{}
	logger := slog.New(folds.wrap(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})))
	build := []autoconfig.BuildOption{autoconfig.WithLogger(logger)}
	rt, err := autoconfig.BuildRuntime(ctx, cfg, build...)
	if err != nil {
		return err
	}
	defer rt.Close()
	if rt.DB != nil {
		if err := db.CheckSchema(ctx, rt.DB); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
	}

	mc := rt.Manager.Config()
	r := &replayer{
		ctx: ctx,
		rt:  rt,
		cfg: cfg,
		// Only prices what the manager's prompt builder returns, with the
		// manager's own estimator: it never trims.
		price: trimmer.New(mc.ContextWindowTokens, mc.OutputReserveTokens, rt.Manager.Config().Estimator),
		opts:  o,
		out:   stdout,
		multi: len(ts) > 1,
	}
	total := 0
	for _, t := range ts {
		total += t.userTurns()
	}
	r.progress = newProgress(stderr, stdout, total, o.progress && total >= progressMinTurns)
	defer r.progress.finish()

	if !o.json {
		shown := pos[0]
		if shown == stdinPath {
			shown = stdinName
		}
		r.header(shown, format, ts, summariesDefault)
	}
	start := time.Now()
	for _, t := range ts {
		if err := r.replay(t); err != nil {
			return err
		}
	}
	r.progress.finish()
	if !o.json && r.multi {
		fmt.Fprintf(stdout, "\nreplayed %d conversations, %d user turns in %s\n", len(ts), total, time.Since(start).Round(time.Millisecond))
	}
	if st := rt.Manager.Stats(); st.FoldFailures > 0 && st.Folds == 0 {
		why := folds.last()
		if why == "" {
			why = "the summarizer returned errors or empty replies"
		}
		return fmt.Errorf("replay: every fold failed (%d failed, none stored a summary): %s; check the summarizer (%s) or replay with --set arc.reactor.memory.summarizer.provider=extractive",
			st.FoldFailures, why, summarizerName(cfg))
	}
	return nil
}

// summarizerName describes the configured summarizer for an error.
func summarizerName(cfg *autoconfig.Config) string {
	name := "provider " + cfg.EffectiveProvider()
	if model, keyEnv := summarizerDetails(cfg); model != "" {
		name += ", model " + model + ", API key from $" + keyEnv
	}
	if cfg.Summarizer.BaseURL != "" {
		name += ", base URL " + cfg.Summarizer.BaseURL
	}
	return name
}

// foldErrors is a slog handler wrapper that remembers the error of the
// last failed fold the manager logged ("strata: fold" with outcome error),
// so that replay can say why every fold failed.
type foldErrors struct {
	mu  sync.Mutex
	err string
}

func (f *foldErrors) wrap(h slog.Handler) slog.Handler { return &foldHandler{Handler: h, rec: f} }

func (f *foldErrors) last() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

type foldHandler struct {
	slog.Handler
	rec *foldErrors
}

// Enabled also lets warnings through to Handle, whatever the level of
// the wrapped handler, so that fold failures are seen.
func (h *foldHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.Handler.Enabled(ctx, l)
}

func (h *foldHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "strata: fold" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "error" {
				h.rec.mu.Lock()
				h.rec.err = a.Value.String()
				h.rec.mu.Unlock()
				return false
			}
			return true
		})
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h *foldHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &foldHandler{Handler: h.Handler.WithAttrs(attrs), rec: h.rec}
}

func (h *foldHandler) WithGroup(name string) slog.Handler {
	return &foldHandler{Handler: h.Handler.WithGroup(name), rec: h.rec}
}

type replayer struct {
	ctx      context.Context
	rt       *autoconfig.Runtime
	cfg      *autoconfig.Config
	price    *trimmer.Trimmer
	opts     replayOptions
	out      io.Writer
	multi    bool
	progress *progress
	turnsAll int
}

// turnRecord is one --json line.
type turnRecord struct {
	Sample         string        `json:"sample,omitempty"`
	Turn           int           `json:"turn"`
	Context        []jsonMessage `json:"context"`
	ContextTokens  int           `json:"context_tokens"`
	StoredMessages int           `json:"stored_messages"`
	Folds          int64         `json:"folds"`
	Mode           string        `json:"mode"`
}

// summaryRecord is the final --json line.
type summaryRecord struct {
	Summary summaryBody `json:"summary"`
}

type summaryBody struct {
	Sample         string         `json:"sample,omitempty"`
	Session        string         `json:"session"`
	Turns          int            `json:"turns"`
	StoredMessages int            `json:"stored_messages"`
	Folds          int64          `json:"folds"`
	Cursor         int64          `json:"cursor"`
	Facts          []summary.Fact `json:"facts"`
	Narrative      string         `json:"narrative"`
}

// jsonMessage is a message of a --json context: the report's view of what
// the model receives (no name, no metadata, flat tool calls).
type jsonMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	ToolCalls  []jsonToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// jsonToolCall is a tool call of a jsonMessage.
type jsonToolCall struct {
	ID        string `json:"id,omitempty"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func (r *replayer) header(path, format string, ts []transcript, summariesDefault bool) {
	c := r.cfg
	msgs := 0
	for _, t := range ts {
		msgs += len(t.Msgs)
	}
	turns := 0
	for _, t := range ts {
		turns += t.userTurns()
	}
	what := fmt.Sprintf("%d user turns, %d messages", turns, msgs)
	if len(ts) > 1 {
		what = fmt.Sprintf("%d conversations, ", len(ts)) + what
	} else if ts[0].Name != "" && format != formatJSONL && format != formatJSON {
		what = ts[0].Name + ", " + what
	}
	fmt.Fprintf(r.out, "strata replay %s (%s: %s)\n", path, format, what)
	sum := "off (takeLast: last " + fmt.Sprint(2*c.Memory.MaxConversationTurns) + " messages)"
	if c.Memory.Enabled {
		sum = fmt.Sprintf("on — trigger > %d messages, verbatim window %d, policy %s, summarizer %s",
			c.Memory.TriggerMessageCount, c.Memory.RecentMessageCount, c.Memory.Policy, c.EffectiveProvider())
		if model, _ := summarizerDetails(c); model != "" {
			sum += " (" + model + ")"
		}
		if summariesDefault {
			sum += " [replay default; set arc.reactor.memory.summary.enabled to choose]"
		}
	}
	store := "in-memory"
	if r.rt.DB != nil {
		store = "PostgreSQL"
	}
	mc := r.rt.Manager.Config()
	fmt.Fprintf(r.out, "summaries: %s\n", sum)
	fmt.Fprintf(r.out, "store: %s · window %d tokens − %d output reserve\n", store, mc.ContextWindowTokens, mc.OutputReserveTokens)
}

// replay feeds one transcript through the manager.
func (r *replayer) replay(t transcript) error {
	ctx := r.ctx
	mgr := r.rt.Manager
	session := r.opts.session
	if session == "" {
		session = "replay:" + t.Name
	}
	user := r.opts.user
	if err := r.prepareSession(session, user); err != nil {
		return err
	}
	foldsBefore := mgr.Stats().Folds
	sample := ""
	if r.multi {
		sample = t.Name
		if !r.opts.json {
			fmt.Fprintf(r.out, "\n══════ %s ══════\n", t.Name)
		}
	}
	// Messages before the first user message (a greeting) are stored first.
	i := 0
	for i < len(t.Msgs) && t.Msgs[i].Role != store.RoleUser {
		i++
	}
	if err := r.save(session, user, t.Msgs[:i]); err != nil {
		return err
	}
	turn := 0
	var lastFolds int64
	var cursor int64
	for i < len(t.Msgs) {
		j := i + 1
		for j < len(t.Msgs) && t.Msgs[j].Role != store.RoleUser {
			j++
		}
		turn++
		h, err := mgr.Load(ctx, session, user)
		if err != nil {
			return fmt.Errorf("replay: %s: turn %d: %w", t.Name, turn, err)
		}
		// What the model would receive: the manager's one prompt builder
		// fits the system prompt, the memory and the user message into its
		// budget.
		history := append(slices.Clip(h.Messages), t.Msgs[i].ChatMessage())
		full, _ := mgr.Prompt(t.System, history, 0)
		sysPrompt := 0
		if t.System != "" {
			sysPrompt = 1
		}
		folds := mgr.Stats().Folds - foldsBefore
		rec := turnRecord{
			Sample:         sample,
			Turn:           turn,
			Context:        toJSONMessages(full),
			ContextTokens:  r.price.Cost(full),
			StoredMessages: h.Total,
			Folds:          folds,
			Mode:           string(h.Mode),
		}
		r.progress.clear()
		if r.opts.json {
			if err := r.writeJSON(rec); err != nil {
				return err
			}
		} else {
			if folds > lastFolds && h.Summary != nil {
				r.foldLine(folds-lastFolds, h.Summary, cursor)
				cursor = h.Summary.UpToSeq
			} else if folds > lastFolds {
				fmt.Fprintf(r.out, "  ↳ %d fold(s) since the last turn\n", folds-lastFolds)
			}
			dropped := len(history) - (len(full) - sysPrompt)
			dangling := min(danglingMessages(history), dropped)
			r.turnReport(rec, kinds(full, sysPrompt, h.Summary), h.Summary, dropped-dangling, dangling)
		}
		lastFolds = folds
		if err := r.save(session, user, t.Msgs[i:j]); err != nil {
			return fmt.Errorf("replay: %s: turn %d: %w", t.Name, turn, err)
		}
		r.turnsAll++
		r.progress.update(r.turnsAll, t.Name)
		i = j
	}
	return r.final(t, session, user, turn, foldsBefore, sample)
}

// prepareSession makes sure the session is new (a PostgreSQL store may
// already hold it); with --reset it deletes the user's session first.
func (r *replayer) prepareSession(session, user string) error {
	mgr := r.rt.Manager
	held, err := mgr.Messages(r.ctx, session, user, 0, 1)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case errors.Is(err, memory.ErrNotOwner):
		return fmt.Errorf("replay: session %q belongs to another user in the configured store; pass its owner with --user (and --reset to delete it), or choose another --session NAME", session)
	case err != nil:
		return fmt.Errorf("replay: %w", err)
	case len(held) == 0:
		return nil
	case !r.opts.reset:
		all, err := mgr.Messages(r.ctx, session, user, 0, 0)
		if err != nil {
			return fmt.Errorf("replay: %w", err)
		}
		return fmt.Errorf("replay: session %q already holds %d messages in the configured store; pass --reset to delete it first, or --session NAME", session, len(all))
	}
	if err := mgr.DeleteSession(r.ctx, session, user); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("replay: %w", err)
	}
	return nil
}

// save stores msgs and waits for the background fold they trigger.
func (r *replayer) save(session, user string, msgs []store.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	if _, err := r.rt.Manager.Append(r.ctx, session, user, true, msgs...); err != nil {
		return err
	}
	return r.rt.Manager.Flush(r.ctx)
}

func (r *replayer) final(t transcript, session, user string, turns int, foldsBefore int64, sample string) error {
	mgr := r.rt.Manager
	// A last load applies the final state (and any lazy fold), as the next
	// turn of a live conversation would.
	h, err := mgr.Load(r.ctx, session, user)
	if err != nil {
		return fmt.Errorf("replay: %s: %w", t.Name, err)
	}
	if err := mgr.Flush(r.ctx); err != nil {
		return err
	}
	s, err := mgr.Summary(r.ctx, session, user)
	if err != nil {
		return fmt.Errorf("replay: %s: summary: %w", t.Name, err)
	}
	body := summaryBody{
		Sample:         sample,
		Session:        session,
		Turns:          turns,
		StoredMessages: h.Total,
		Folds:          mgr.Stats().Folds - foldsBefore,
		Facts:          []summary.Fact{},
	}
	if s != nil {
		body.Cursor = s.UpToSeq
		body.Narrative = s.Narrative
		for _, f := range s.Facts {
			f.ExtractedAt = time.Time{}
			body.Facts = append(body.Facts, f)
		}
	}
	r.progress.clear()
	if r.opts.json {
		return r.writeJSON(summaryRecord{Summary: body})
	}
	r.finalReport(body, s)
	return nil
}

func (r *replayer) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = r.out.Write(b)
	return err
}

// danglingMessages counts the messages of history the prompt builder
// leaves out whatever the budget: an assistant message whose tool calls do
// not all have their results right after it (a dangling tool call), with
// the results it has.
func danglingMessages(history []llms.ChatMessage) int {
	n := 0
	for i := 0; i < len(history); {
		calls := toolCallIDs(history[i])
		j := i + 1
		if len(calls) == 0 {
			i = j
			continue
		}
		for j < len(history) && history[j].GetType() == llms.ChatMessageTypeTool {
			id := toolResultID(history[j])
			k := slices.Index(calls, id)
			if k < 0 {
				break
			}
			calls = slices.Delete(calls, k, k+1)
			j++
		}
		if len(calls) > 0 {
			n += j - i
		}
		i = j
	}
	return n
}

func toolCallIDs(m llms.ChatMessage) []string {
	var tcs []llms.ToolCall
	switch v := m.(type) {
	case llms.AIChatMessage:
		tcs = v.ToolCalls
	case *llms.AIChatMessage:
		if v != nil {
			tcs = v.ToolCalls
		}
	}
	ids := make([]string, 0, len(tcs))
	for _, tc := range tcs {
		ids = append(ids, tc.ID)
	}
	return ids
}

func toolResultID(m llms.ChatMessage) string {
	switch v := m.(type) {
	case llms.ToolChatMessage:
		return v.ID
	case *llms.ToolChatMessage:
		if v != nil {
			return v.ID
		}
	}
	return ""
}

// toJSONMessages converts what the model receives to the --json shape:
// each message as msgjson.FromChat gives it to API clients, its tool calls
// flattened to {"id","name","arguments"} (the flat form transcripts may
// use too).
func toJSONMessages(msgs []llms.ChatMessage) []jsonMessage {
	out := make([]jsonMessage, 0, len(msgs))
	for _, cm := range msgs {
		w := msgjson.FromChat(cm)
		jm := jsonMessage{Role: w.Role, Content: w.Content, ToolCallID: w.ToolCallID}
		for _, tc := range w.ToolCalls {
			c := jsonToolCall{ID: tc.ID}
			if tc.Function != nil {
				c.Name, c.Arguments = tc.Function.Name, tc.Function.Arguments
			}
			jm.ToolCalls = append(jm.ToolCalls, c)
		}
		out = append(out, jm)
	}
	return out
}
