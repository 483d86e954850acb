package summary

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"
)

// Prefixes of the two system messages a summary is shown as. They are the
// reference's, so prompts written for it keep working.
const (
	FactsHeader     = "Conversation Facts:"
	NarrativeHeader = "Conversation Summary:"
)

// RenderOptions changes how a summary is rendered for a model.
type RenderOptions struct {
	// ShowPrevious appends a fact's superseded value to its line:
	// "- phone: 555-2222 (previously 555-1111)". Off by default, as in the
	// reference, which shows only the current value.
	ShowPrevious bool
}

// FactsBlock renders facts as arc-reactor does: "Conversation Facts:" and
// one "- key: value" line per fact, in ledger order. Only current values
// are shown (see FactsBlockWith). No facts: "".
func FactsBlock(facts []Fact) string { return FactsBlockWith(facts, RenderOptions{}) }

// FactsBlockWith renders facts like FactsBlock, with options.
func FactsBlockWith(facts []Fact, opt RenderOptions) string {
	if len(facts) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(FactsHeader)
	for _, f := range facts {
		b.WriteString(factLine(f, opt))
	}
	return b.String()
}

// factLine is one fact's line of the facts block, with its leading newline.
func factLine(f Fact, opt RenderOptions) string {
	line := "\n- " + f.Key + ": " + f.Value
	if opt.ShowPrevious && f.Previous != "" {
		line += " (previously " + f.Previous + ")"
	}
	return line
}

// NarrativeBlock renders the narrative block, "" when it is blank.
func NarrativeBlock(narrative string) string {
	if isBlank(narrative) {
		return ""
	}
	return NarrativeHeader + "\n" + narrative
}

// Blocks is the one rendering of a summary for a model: a facts system
// message (when there are facts), then a narrative system message (when the
// narrative is not blank). A nil or empty summary renders as nothing.
func Blocks(s *Summary) []llms.ChatMessage { return BlocksWith(s, RenderOptions{}) }

// BlocksWith renders like Blocks, with options.
func BlocksWith(s *Summary, opt RenderOptions) []llms.ChatMessage {
	if s == nil {
		return nil
	}
	var out []llms.ChatMessage
	if f := FactsBlockWith(s.Facts, opt); f != "" {
		out = append(out, llms.SystemChatMessage{Content: f})
	}
	if n := NarrativeBlock(s.Narrative); n != "" {
		out = append(out, llms.SystemChatMessage{Content: n})
	}
	return out
}

// Apply is how a summary evolves: it returns the summary that follows
// existing (nil for the first fold) once res, a summarizer's answer for the
// messages through upTo, is folded in.
//
// Facts are merged into the ledger with MergeFacts, with opt.Seq = upTo as
// their provenance (facts res leaves out are kept); existing facts without
// provenance count as last seen at existing's cursor. The narrative is res's,
// capped at opt.MaxNarrativeTokens tokens at a sentence boundary (see
// CapNarrative); a blank one keeps the previous narrative. The cursor never
// goes back: when existing (of the same epoch) already covers more than
// upTo — a re-summarization from the originals folded in chunks, whose
// first chunk ends before the stored cursor — the result keeps existing's
// cursor, since its facts are merged in. The narrative's provenance is
// res.SentenceSources for the sentences the cap kept (a sentence the cap
// cut has none). sessionID and epoch name the
// session incarnation the summary is for; the creation time and version
// carry over.
func Apply(existing *Summary, sessionID string, epoch int64, res Result, upTo int64, opt MergeOptions) Summary {
	opt = opt.withDefaults()
	next := Summary{SessionID: sessionID, Epoch: epoch, UpToSeq: upTo}
	next.Narrative = CapNarrative(strings.TrimSpace(res.Narrative), opt.MaxNarrativeTokens, opt.Tokens)
	next.SentenceSources = sentenceSources(next.Narrative, res.SentenceSources)
	var old []Fact
	if existing != nil {
		old = existing.Facts
		if existing.Epoch == epoch && existing.UpToSeq > 0 {
			// A fact without provenance (stored by a store that does not keep
			// it, or before it existed) was current as of the summary's
			// cursor: older re-reads must not supersede it.
			old = slices.Clone(old)
			for i := range old {
				if old[i].LastSeq == 0 {
					old[i].LastSeq = existing.UpToSeq
				}
			}
		}
		next.CreatedAt, next.Version = existing.CreatedAt, existing.Version
		if existing.Epoch == epoch {
			next.Forgotten = slices.Clone(existing.Forgotten)
			next.ForgetKey = slices.Clone(existing.ForgetKey)
		}
		if isBlank(next.Narrative) {
			next.Narrative = existing.Narrative
			next.SentenceSources = sentenceSources(existing.Narrative, existing.SentenceSources)
		}
		if existing.Epoch == epoch && existing.UpToSeq > next.UpToSeq {
			next.UpToSeq = existing.UpToSeq
		}
	}
	opt.Seq = upTo
	next.Facts = MergeFacts(old, res.Facts, opt)
	return next
}

// sentenceBoundary returns the span of the first end of a sentence in s —
// terminal punctuation (".", "!", "?", "…", "。", "！", "？"), optional
// closing quotes or brackets, then ASCII white space (tab, newline, form
// feed, carriage return, space) or the end of s — and ok false when there
// is none: what the expression [.!?…。！？]+["'”’)\]]*(\s+|$) finds, by
// one scan. (That expression cannot match by backtracking into a run of
// terminals or closers: the byte after a shorter run is a terminal or a
// closer, never white space; so a run either ends a sentence as a whole
// or not at all.)
func sentenceBoundary(s string) (lo, hi int, ok bool) {
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if !isTerminal(r) {
			i += w
			continue
		}
		j := i + w
		for j < len(s) {
			r, w := utf8.DecodeRuneInString(s[j:])
			if !isTerminal(r) {
				break
			}
			j += w
		}
		for j < len(s) {
			r, w := utf8.DecodeRuneInString(s[j:])
			if !isCloser(r) {
				break
			}
			j += w
		}
		if j == len(s) {
			return i, j, true
		}
		if isSpaceByte(s[j]) {
			for j < len(s) && isSpaceByte(s[j]) {
				j++
			}
			return i, j, true
		}
		i = j
	}
	return 0, 0, false
}

// isTerminal reports whether r ends a sentence.
func isTerminal(r rune) bool {
	switch r {
	case '.', '!', '?', '…', '。', '！', '？':
		return true
	}
	return false
}

// isCloser reports whether r is a closing quote or bracket that may follow
// the end of a sentence.
func isCloser(r rune) bool {
	switch r {
	case '"', '\'', '”', '’', ')', ']':
		return true
	}
	return false
}

// isSpaceByte reports whether b is ASCII white space as regular
// expressions' \s means it: tab, newline, form feed, carriage return or
// space.
func isSpaceByte(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\f' || b == '\r'
}

// CapNarrative returns narrative cut to at most maxTokens tokens as counted
// by tokens (nil: trimmer.EstimateScript): the longest run of whole
// sentences from the start that fits. When even the first sentence does
// not fit, it is cut at a word boundary and ends with "…". maxTokens <= 0
// means no cap.
func CapNarrative(narrative string, maxTokens int, tokens func(string) int) string {
	if tokens == nil {
		tokens = MergeOptions{}.withDefaults().Tokens
	}
	if maxTokens <= 0 || tokens(narrative) <= maxTokens {
		return narrative
	}
	best := ""
	for at := 0; ; {
		_, hi, ok := sentenceBoundary(narrative[at:])
		if !ok {
			break
		}
		at += hi
		cand := strings.TrimSpace(narrative[:at])
		if tokens(cand) > maxTokens {
			break
		}
		best = cand
	}
	if best != "" {
		return best
	}
	// No whole sentence fits: cut words off the end.
	words := strings.Fields(narrative)
	lo, hi := 0, len(words)-1 // keep words[:n] for the largest fitting n in [lo, hi]
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if tokens(strings.Join(words[:mid], " ")+"…") <= maxTokens {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo == 0 {
		return ""
	}
	return strings.Join(words[:lo], " ") + "…"
}
