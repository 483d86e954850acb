// Package inspector renders one session as a self-contained HTML page for
// the people running an agent: its stored messages with their sequence
// numbers (the numbers erasure takes), what the model was shown on a
// chosen turn against the token budget — the facts and narrative blocks,
// the verbatim window, what the trimmer dropped or cut — a chart of the
// context's size against the budget over the turns, the folds on a
// timeline with what they cost, and each fact's history, from the
// session's fold journal (memory.Manager.Journal).
//
// The page needs no network: its styles are inline, its charts are SVG,
// and it runs no script. strata serve answers it at
// GET /v1/sessions/{id}/inspect (?turn=N picks the turn) and strata
// inspect --html writes it to a file.
package inspector

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

// Bounds of a page: it shows at most maxMessages messages (the newest),
// each cut at maxText bytes, and charts at most maxTurns turns (the
// newest).
const (
	maxMessages = 5000
	maxText     = 4000
	maxTurns    = 400
)

//go:embed page.html.tmpl
var pageSource string

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"inc": func(i int) int { return i + 1 },
}).Parse(pageSource))

// ErrNoSuchTurn: Options.Turn names a turn the session does not have.
var ErrNoSuchTurn = errors.New("inspector: no such turn")

// Options choose what a page shows.
type Options struct {
	// Turn is the user turn (1 for the first user message) whose prompt
	// the page shows; 0 means the newest. A turn past the newest is an
	// error.
	Turn int
	// Now stamps the page (the zero time: time.Now).
	Now time.Time
}

// Write renders the session sessionID, read as userID through mgr (which
// checks ownership as everywhere: store.ErrNotFound, memory.ErrNotOwner),
// as one HTML page into w. The page is built whole before the first byte
// is written, so an error writes nothing.
func Write(ctx context.Context, w io.Writer, mgr *memory.Manager, sessionID, userID string, opt Options) error {
	p, err := build(ctx, mgr, sessionID, userID, opt)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		return fmt.Errorf("inspector: render: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// page is what the template shows.
type page struct {
	Session, Owner    string
	Generated         string
	Window, Reserve   int
	Count, Shown      int
	Cursor            int64
	Messages          []pageMessage
	Turns, Turn       int
	TurnSeq           int64
	View              turnView
	Chart             chart
	Folds             []foldRow
	Timeline          timeline
	Totals, Rolled    store.JournalTotals
	Facts             []factHistory
	JournalRecords    int
	JournalKept       int
	TurnChoices       []int
	HasJournal        bool
	NarrativeCurrent  bool
	SummaryNarrative  string
	SummaryFactsCount int
}

type pageMessage struct {
	Seq            int64
	Role, Author   string
	At             string
	Text           string
	Folded, InTurn bool
	Turn           int // the user turn it opens, 0 otherwise
}

// turnView is the prompt of one turn: its messages in order, each kept,
// cut or dropped by the trimmer, and the trimmer's report.
type turnView struct {
	Messages []viewMessage
	Report   trimmer.Report
	Cursor   int64 // the summary's cursor at that turn
	Facts    int
}

type viewMessage struct {
	Kind   string // "facts", "narrative", "message"
	Seq    int64
	Role   string
	Text   string
	Fate   string // "kept", "cut", "dropped"
	Tokens int
}

// build reads the session and lays the page out.
func build(ctx context.Context, mgr *memory.Manager, sessionID, userID string, opt Options) (*page, error) {
	msgs, err := mgr.Messages(ctx, sessionID, userID, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("inspector: %w", err)
	}
	sum, err := mgr.Summary(ctx, sessionID, userID)
	if err != nil {
		return nil, fmt.Errorf("inspector: summary: %w", err)
	}
	j, err := mgr.Journal(ctx, sessionID, userID)
	hasJournal := err == nil
	if err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return nil, fmt.Errorf("inspector: %w", err)
	}
	cfg := mgr.Config()
	now := opt.Now
	if now.IsZero() {
		now = time.Now()
	}
	p := &page{Session: sessionID, Owner: userID, Generated: now.UTC().Format(time.RFC3339),
		Window: cfg.ContextWindowTokens, Reserve: cfg.OutputReserveTokens, Count: len(msgs),
		Totals: j.Totals, Rolled: j.Rolled, JournalRecords: int(j.Totals.Records), JournalKept: len(j.Records), HasJournal: hasJournal}
	if sum != nil {
		p.Cursor, p.SummaryNarrative, p.SummaryFactsCount = sum.UpToSeq, sum.Narrative, len(sum.Facts)
	}
	var turnSeqs []int64
	for _, m := range msgs {
		if m.Role == store.RoleUser {
			turnSeqs = append(turnSeqs, m.Seq)
		}
	}
	p.Turns = len(turnSeqs)
	switch {
	case opt.Turn < 0 || opt.Turn > p.Turns && p.Turns > 0 || opt.Turn > 0 && p.Turns == 0:
		return nil, fmt.Errorf("%w: turn %d of a session with %d user turns", ErrNoSuchTurn, opt.Turn, p.Turns)
	case opt.Turn == 0:
		p.Turn = p.Turns
	default:
		p.Turn = opt.Turn
	}
	if p.Turn > 0 {
		p.TurnSeq = turnSeqs[p.Turn-1]
	}
	for i := range p.Turns {
		p.TurnChoices = append(p.TurnChoices, i+1)
	}
	render := render{opt: summary.RenderOptions{ShowPrevious: cfg.ShowPreviousValues}}
	if !cfg.Enabled {
		render.takeLast = 2 * cfg.MaxConversationTurns
	}
	if p.Turn > 0 {
		p.View = view(mgr, msgs, j, sum, p.TurnSeq, render)
	}
	p.Chart = chartOf(mgr, msgs, j, sum, turnSeqs, render)
	p.Messages = pageMessages(msgs, p.Cursor, p.View.Cursor, p.TurnSeq)
	p.Shown = len(p.Messages)
	p.Folds, p.Timeline = folds(j, msgs)
	p.Facts = factHistories(j, sum)
	return p, nil
}

// pageMessages lists the newest maxMessages messages.
func pageMessages(msgs []store.Message, cursor, turnCursor, turnSeq int64) []pageMessage {
	turn := 0
	var out []pageMessage
	for _, m := range msgs {
		pm := pageMessage{Seq: m.Seq, Role: string(m.Role), Author: m.UserID, At: m.CreatedAt.UTC().Format("2006-01-02 15:04:05"),
			Text: cut(messageText(m)), Folded: m.Seq <= cursor, InTurn: m.Seq > turnCursor && m.Seq <= turnSeq}
		if m.Role == store.RoleUser {
			turn++
			pm.Turn = turn
		}
		out = append(out, pm)
	}
	if len(out) > maxMessages {
		out = out[len(out)-maxMessages:]
	}
	return out
}

// ledgerAt replays the journal's fact changes, in order, up to the first
// fold that read a message at or after seq (it ran after that turn was
// stored): the facts as the model had them on that turn, in the order
// they were first added, and the summary's cursor then.
func ledgerAt(j store.Journal, seq int64) ([]summary.Fact, int64) {
	var keys []string
	vals := map[string]string{}
	var cursor int64
	for _, r := range j.Records {
		if (r.Kind == "fold" || r.Kind == "import") && r.ToSeq >= seq {
			break
		}
		if r.Kind == "fold" && r.Outcome != "saved" && len(r.Changes) == 0 {
			continue
		}
		if r.ToSeq > cursor && r.Kind != "forget" {
			cursor = r.ToSeq
		}
		for _, c := range r.Changes {
			switch c.Op {
			case "added", "changed":
				if _, ok := vals[c.Key]; !ok {
					keys = append(keys, c.Key)
				}
				vals[c.Key] = c.To
			default:
				if _, ok := vals[c.Key]; ok {
					delete(vals, c.Key)
					keys = slices.DeleteFunc(keys, func(k string) bool { return k == c.Key })
				}
			}
		}
	}
	facts := make([]summary.Fact, 0, len(keys))
	for _, k := range keys {
		facts = append(facts, summary.Fact{Key: k, Value: vals[k]})
	}
	return facts, cursor
}

// render is how the manager renders a session's prompt: its summary's
// blocks, or with summaries off (takeLast > 0) the newest messages only.
type render struct {
	opt      summary.RenderOptions
	takeLast int
}

// promptAt is the history the memory assembles for the turn stored at
// seq, as far as the journal tells it: the facts then, the narrative when
// the summary's cursor has not moved since (the journal keeps no
// narrative), and the messages after the cursor through the turn.
func promptAt(msgs []store.Message, j store.Journal, sum *summary.Summary, seq int64, render render) ([]llms.ChatMessage, []viewMessage, int64, int) {
	if render.takeLast > 0 {
		// Summaries off: the newest messages through the turn.
		var hist []llms.ChatMessage
		var vm []viewMessage
		var upTo []store.Message
		for _, m := range msgs {
			if m.Seq <= seq {
				upTo = append(upTo, m)
			}
		}
		for _, m := range upTo[max(0, len(upTo)-render.takeLast):] {
			hist = append(hist, m.ChatMessage())
			vm = append(vm, viewMessage{Kind: "message", Seq: m.Seq, Role: string(m.Role), Text: messageText(m)})
		}
		return hist, vm, 0, 0
	}
	facts, cursor := ledgerAt(j, seq)
	s := &summary.Summary{Facts: facts}
	if sum != nil && sum.UpToSeq == cursor && cursor > 0 {
		s.Narrative = sum.Narrative
	}
	var hist []llms.ChatMessage
	var vm []viewMessage
	if !s.IsEmpty() {
		for i, b := range summary.BlocksWith(s, render.opt) {
			kind := "narrative" // Blocks: the facts (when any), then the narrative
			if i == 0 && len(facts) > 0 {
				kind = "facts"
			}
			hist = append(hist, b)
			vm = append(vm, viewMessage{Kind: kind, Role: "system", Text: b.GetContent()})
		}
	}
	for _, m := range msgs {
		if m.Seq > cursor && m.Seq <= seq {
			hist = append(hist, m.ChatMessage())
			vm = append(vm, viewMessage{Kind: "message", Seq: m.Seq, Role: string(m.Role), Text: messageText(m)})
		}
	}
	return hist, vm, cursor, len(facts)
}

// view is the prompt of the turn stored at seq, fitted as Manager.Prompt
// fits it, each message marked kept, cut or dropped.
func view(mgr *memory.Manager, msgs []store.Message, j store.Journal, sum *summary.Summary, seq int64, render render) turnView {
	hist, vm, cursor, nfacts := promptAt(msgs, j, sum, seq, render)
	kept, rep := mgr.Prompt("", hist, 0)
	// The trimmer keeps an ordered subsequence, some cut: match it.
	k := 0
	for i := range vm {
		_, one := mgr.Prompt("", hist[i:i+1], 0)
		vm[i].Tokens = one.TokensBefore
		vm[i].Fate = "dropped"
		if k < len(kept) && sameMessage(hist[i], kept[k]) {
			vm[i].Fate = "kept"
			if kept[k].GetContent() != hist[i].GetContent() {
				vm[i].Fate = "cut"
			}
			k++
		}
		vm[i].Text = cut(vm[i].Text)
	}
	return turnView{Messages: vm, Report: rep, Cursor: cursor, Facts: nfacts}
}

// sameMessage reports whether kept is in, possibly cut by the trimmer.
func sameMessage(in, kept llms.ChatMessage) bool {
	if in.GetType() != kept.GetType() {
		return false
	}
	a, b := in.GetContent(), kept.GetContent()
	if a == b {
		return true
	}
	stem := strings.TrimSuffix(b, trimmer.TruncationMarker)
	return stem != b && strings.HasPrefix(a, strings.TrimRight(stem, " "))
}

// chart is the context's size over the turns against the budget.
type chart struct {
	W, H, Left, Bottom int
	PlotW, PlotH       int
	Budget             int
	BudgetY            int
	Max                int
	Before, After      string // SVG polyline points
	Points             []chartPoint
	Ticks              []chartTick
	Empty              bool
}

type chartPoint struct {
	X, Y, YAfter int
	Turn         int
	Before       int
	After        int
}

type chartTick struct {
	Y     int
	Label string
}

func chartOf(mgr *memory.Manager, msgs []store.Message, j store.Journal, sum *summary.Summary, turnSeqs []int64, render render) chart {
	c := chart{W: 760, H: 240, Left: 64, Bottom: 28}
	if len(turnSeqs) == 0 {
		c.Empty = true
		return c
	}
	first := max(0, len(turnSeqs)-maxTurns)
	type pt struct{ turn, before, after, budget int }
	var pts []pt
	for i := first; i < len(turnSeqs); i++ {
		hist, _, _, _ := promptAt(msgs, j, sum, turnSeqs[i], render)
		_, rep := mgr.Prompt("", hist, 0)
		pts = append(pts, pt{i + 1, rep.TokensBefore, rep.TokensAfter, rep.Budget})
		c.Budget = rep.Budget
		c.Max = max(c.Max, rep.TokensBefore, rep.Budget)
	}
	c.Max = max(1, c.Max*11/10)
	plotW, plotH := c.W-c.Left-12, c.H-c.Bottom-12
	c.PlotW, c.PlotH = plotW, plotH
	y := func(v int) int { return 12 + plotH - v*plotH/c.Max }
	x := func(i int) int {
		if len(pts) == 1 {
			return c.Left + plotW/2
		}
		return c.Left + i*plotW/(len(pts)-1)
	}
	var before, after []string
	for i, p := range pts {
		cp := chartPoint{X: x(i), Y: y(p.before), YAfter: y(p.after), Turn: p.turn, Before: p.before, After: p.after}
		c.Points = append(c.Points, cp)
		before = append(before, fmt.Sprintf("%d,%d", cp.X, cp.Y))
		after = append(after, fmt.Sprintf("%d,%d", cp.X, cp.YAfter))
	}
	c.Before, c.After = strings.Join(before, " "), strings.Join(after, " ")
	c.BudgetY = y(c.Budget)
	for _, v := range []int{0, c.Max / 2, c.Max} {
		c.Ticks = append(c.Ticks, chartTick{Y: y(v), Label: fmt.Sprint(v)})
	}
	return c
}

// foldRow is one journal record.
type foldRow struct {
	store.JournalRecord
	When     string
	Range    string
	Tokens   string
	Duration string
	Changes  int
}

// timeline draws the folds over the message sequence numbers.
type timeline struct {
	W, H  int
	Bars  []timelineBar
	MaxSq int64
	Empty bool
}

type timelineBar struct {
	X, W, Y, H int
	Class      string
	Title      string
}

func folds(j store.Journal, msgs []store.Message) ([]foldRow, timeline) {
	var rows []foldRow
	tl := timeline{W: 760, H: 90}
	for _, m := range msgs {
		tl.MaxSq = max(tl.MaxSq, m.Seq)
	}
	var maxTok int
	for _, r := range j.Records {
		tl.MaxSq = max(tl.MaxSq, r.ToSeq)
		maxTok = max(maxTok, r.InputTokens+r.OutputTokens+r.EstimatedInputTokens+r.EstimatedOutputTokens)
	}
	for _, r := range j.Records {
		row := foldRow{JournalRecord: r, When: r.At.UTC().Format("2006-01-02 15:04:05"), Changes: len(r.Changes)}
		switch {
		case r.ToSeq > 0:
			row.Range = fmt.Sprintf("#%d–#%d", r.FromSeq, r.ToSeq)
		case len(r.Seqs) > 0:
			row.Range = "erased " + seqList(r.Seqs)
		}
		row.Tokens = fmt.Sprintf("%d in / %d out", r.InputTokens, r.OutputTokens)
		if est := r.EstimatedInputTokens + r.EstimatedOutputTokens; est > 0 {
			row.Tokens += fmt.Sprintf(" (+%d estimated)", est)
		}
		if r.Duration > 0 {
			row.Duration = r.Duration.Round(time.Millisecond).String()
		}
		rows = append(rows, row)
		if r.Kind == "fold" && r.ToSeq > 0 && tl.MaxSq > 0 {
			tok := r.InputTokens + r.OutputTokens + r.EstimatedInputTokens + r.EstimatedOutputTokens
			h := 10
			if maxTok > 0 {
				h = max(6, tok*60/maxTok)
			}
			x0 := int(int64(tl.W-20) * (r.FromSeq - 1) / tl.MaxSq)
			x1 := int(int64(tl.W-20) * r.ToSeq / tl.MaxSq)
			class := r.Outcome
			if r.Fallback != "" {
				class = "fallback"
			}
			tl.Bars = append(tl.Bars, timelineBar{X: 10 + x0, W: max(2, x1-x0), Y: 70 - h, H: h, Class: class,
				Title: fmt.Sprintf("record %d: %s %s, %s, %s", r.N, r.Kind, r.Outcome, row.Range, row.Tokens)})
		}
	}
	tl.Empty = len(tl.Bars) == 0
	return rows, tl
}

// factHistory is one fact key's changes across the journal.
type factHistory struct {
	Key     string
	Current string
	Present bool
	Events  []factEvent
}

type factEvent struct {
	N          int64
	When, Kind string
	Op         string
	From, To   string
}

func factHistories(j store.Journal, sum *summary.Summary) []factHistory {
	byKey := map[string]*factHistory{}
	var order []string
	get := func(k string) *factHistory {
		if h := byKey[k]; h != nil {
			return h
		}
		h := &factHistory{Key: k}
		byKey[k] = h
		order = append(order, k)
		return h
	}
	for _, r := range j.Records {
		for _, c := range r.Changes {
			h := get(c.Key)
			h.Events = append(h.Events, factEvent{N: r.N, When: r.At.UTC().Format("2006-01-02 15:04"), Kind: r.Kind, Op: c.Op, From: c.From, To: c.To})
		}
	}
	if sum != nil {
		for _, f := range sum.Facts {
			h := get(f.Key)
			h.Current, h.Present = f.Value, true
		}
	}
	out := make([]factHistory, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	return out
}

// messageText is a stored message's content with its tool calls.
func messageText(m store.Message) string {
	var b strings.Builder
	b.WriteString(m.Content)
	for _, c := range m.ToolCalls {
		if c.FunctionCall != nil {
			fmt.Fprintf(&b, "\n→ %s(%s)", c.FunctionCall.Name, c.FunctionCall.Arguments)
		}
	}
	return b.String()
}

// cut shortens s to maxText bytes at a rune boundary.
func cut(s string) string {
	if len(s) <= maxText {
		return s
	}
	i := maxText
	for i > 0 && !utf8RuneStart(s[i]) {
		i--
	}
	return s[:i] + " …"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

func seqList(seqs []int64) string {
	parts := make([]string, 0, len(seqs))
	for i, q := range seqs {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("… (%d)", len(seqs)))
			break
		}
		parts = append(parts, fmt.Sprintf("#%d", q))
	}
	return strings.Join(parts, ", ")
}
