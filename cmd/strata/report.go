package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/summary"
)

// maxFactsShown caps the fact lines of a shortened report.
const maxFactsShown = 12

// msgKind says what a message of the prompt is, for the readable report.
type msgKind int

const (
	kindMessage      msgKind = iota // a conversation message (or a stored system message)
	kindSystemPrompt                // the transcript's system prompt
	kindFacts                       // the summary's facts block
	kindNarrative                   // the summary's narrative block
)

// kinds tells the messages of a prompt apart: the first sysPrompt messages
// are the system prompt, and a system message is the summary's facts or
// narrative block when it is that block as rendered from s (the summary the
// load showed). Nothing is parsed back out of the text.
func kinds(prompt []llms.ChatMessage, sysPrompt int, s *summary.Summary) []msgKind {
	var facts, narrative string
	if s != nil {
		facts, narrative = summary.FactsBlock(s.Facts), summary.NarrativeBlock(s.Narrative)
	}
	out := make([]msgKind, len(prompt))
	for i, m := range prompt {
		switch {
		case i < sysPrompt:
			out[i] = kindSystemPrompt
		case m.GetType() != llms.ChatMessageTypeSystem || s == nil:
		case facts != "" && m.GetContent() == facts:
			out[i] = kindFacts
		case narrative != "" && m.GetContent() == narrative:
			out[i] = kindNarrative
		}
	}
	return out
}

// turnReport prints one turn of the readable report: a header line, then
// every message the model receives, the current user message last (▶).
// kind tells the messages apart; s is the summary the load showed.
// dropped messages were left out to fit the context window; dangling ones
// belong to tool calls without results, which no provider accepts.
func (r *replayer) turnReport(rec turnRecord, kind []msgKind, s *summary.Summary, dropped, dangling int) {
	w := r.out
	fmt.Fprintf(w, "\n── turn %d · %s · stored %d · folds %d · context %d messages, %d tokens ──\n",
		rec.Turn, rec.Mode, rec.StoredMessages, rec.Folds, len(rec.Context), rec.ContextTokens)
	for i, m := range rec.Context {
		marker := "  "
		if i == len(rec.Context)-1 {
			marker = "▶ "
		}
		label, text := r.describe(m, kind[i], s)
		lines := strings.Split(text, "\n")
		fmt.Fprintf(w, "%s%-10s %s\n", marker, label, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "  %-10s %s\n", "", l)
		}
	}
	if dangling > 0 {
		fmt.Fprintf(w, "  (left out %d message(s) of a dangling tool call: an assistant tool call with no tool result after it, which providers reject)\n", dangling)
	}
	if dropped > 0 {
		fmt.Fprintf(w, "  (the prompt builder dropped %d message(s) to fit the context window)\n", dropped)
	}
}

// describe returns a message's label and the text to print. The facts and
// narrative are printed from the summary itself.
func (r *replayer) describe(m jsonMessage, kind msgKind, s *summary.Summary) (string, string) {
	switch {
	case kind == kindSystemPrompt:
		return "system", r.short(m.Content)
	case kind == kindFacts:
		facts := make([]string, 0, len(s.Facts))
		for _, f := range s.Facts {
			facts = append(facts, r.shortLine("- "+f.Key+": "+f.Value))
		}
		if !r.opts.full && len(facts) > maxFactsShown {
			n := len(facts) - maxFactsShown
			facts = append(facts[:maxFactsShown], fmt.Sprintf("… %d more (--full shows all)", n))
		}
		return "facts", strings.Join(facts, "\n")
	case kind == kindNarrative:
		return "narrative", r.short(strings.TrimSpace(s.Narrative))
	case m.Role == "assistant" && len(m.ToolCalls) > 0:
		var parts []string
		if strings.TrimSpace(m.Content) != "" {
			parts = append(parts, r.short(m.Content))
		}
		for _, tc := range m.ToolCalls {
			parts = append(parts, r.short("→ "+tc.Name+"("+tc.Arguments+")"))
		}
		return "assistant", strings.Join(parts, "\n")
	case m.Role == "tool":
		return "tool", r.short("← " + m.Content)
	}
	return m.Role, r.short(m.Content)
}

// short shortens a message to one line of at most --width characters,
// unless --full.
func (r *replayer) short(s string) string {
	if r.opts.full {
		return s
	}
	return r.shortLine(s)
}

func (r *replayer) shortLine(s string) string {
	if r.opts.full {
		return s
	}
	return text.Truncate(text.Collapse(s), max(r.opts.width, 20), "…")
}

// foldLine reports folds that happened since the previous turn.
func (r *replayer) foldLine(n int64, s *summary.Summary, prevCursor int64) {
	what := "fold"
	if n > 1 {
		what = fmt.Sprintf("%d folds", n)
	}
	covered := fmt.Sprintf("messages up to #%d", s.UpToSeq)
	if prevCursor > 0 {
		covered = fmt.Sprintf("messages up to #%d (was #%d)", s.UpToSeq, prevCursor)
	}
	fmt.Fprintf(r.out, "\n  ↳ %s: the summary now covers %s — %d facts, %d-character narrative\n",
		what, covered, len(s.Facts), utf8.RuneCountInString(s.Narrative))
}

// finalReport prints the facts and narrative at the end of a replay.
func (r *replayer) finalReport(b summaryBody, s *summary.Summary) {
	w := r.out
	fmt.Fprintf(w, "\n══ final: %d turns · %d stored messages · %d folds", b.Turns, b.StoredMessages, b.Folds)
	if s == nil {
		if !r.cfg.Memory.Enabled {
			fmt.Fprintln(w, " · summaries off: no facts or narrative ══")
		} else {
			fmt.Fprintln(w, " · no summary yet (the conversation never passed the trigger) ══")
		}
		return
	}
	fmt.Fprintf(w, " · summary covers messages up to #%d ══\n", s.UpToSeq)
	printFactsAndNarrative(w, s.Facts, s.Narrative)
}

// printFactsAndNarrative prints a summary's facts, one "- key: value
// [CATEGORY]" line each, then its narrative, indented.
func printFactsAndNarrative(w io.Writer, facts []summary.Fact, narrative string) {
	fmt.Fprintf(w, "facts (%d):\n", len(facts))
	for _, f := range facts {
		fmt.Fprintf(w, "  - %s: %s [%s]\n", f.Key, f.Value, f.Category)
	}
	fmt.Fprintln(w, "narrative:")
	for _, l := range strings.Split(strings.TrimSpace(narrative), "\n") {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// chatText is a chat message's content plus its tool calls, for inspect.
func chatText(m llms.ChatMessage) string {
	jm := toJSONMessages([]llms.ChatMessage{m})[0]
	parts := []string{}
	if strings.TrimSpace(jm.Content) != "" {
		parts = append(parts, jm.Content)
	}
	for _, tc := range jm.ToolCalls {
		parts = append(parts, "→ "+tc.Name+"("+tc.Arguments+")")
	}
	return strings.Join(parts, " ")
}
