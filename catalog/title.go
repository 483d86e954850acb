package catalog

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/summary"
)

// titleFunc names a conversation. s is its summary (the zero Summary while
// it has none) and firstUserMessages are its first user messages, oldest
// first. It returns a short title (a few words); an error or an empty
// title keeps the previous title, or falls back to offlineTitle.
type titleFunc func(ctx context.Context, s summary.Summary, firstUserMessages []string) (string, error)

// offlineTitle is the default titleFunc: deterministic, no model. With a
// summary it titles the summary alone, so that the title follows the
// conversation's focus when it is regenerated after a topic change
// (sketchTitle: the user's first sentence in the narrative, else the
// narrative's first sentence, else its first fact). Without a summary it is
// sketchTitle of the first user messages (which passes over greetings
// alone).
func offlineTitle(_ context.Context, s summary.Summary, firstUserMessages []string) (string, error) {
	if !s.IsEmpty() {
		if t := sketchTitle(&s, nil); t != "" {
			return t, nil
		}
	}
	return sketchTitle(nil, firstUserMessages), nil
}

// offlineTitleRunes caps the offline titles.
const offlineTitleRunes = 60

// sketchTitle returns a short (at most offlineTitleRunes runes),
// deterministic title for a conversation: the first sentence of the first
// user message that has one (greetings skipped, trailing punctuation
// removed, cut at a word boundary with "…"); failing that, the first
// sentence the user said in the summary's narrative (labelled "User: "),
// else the narrative's first sentence; failing that, its first fact as
// "Key: value"; otherwise "".
func sketchTitle(s *summary.Summary, firstUserMessages []string) string {
	const max = offlineTitleRunes
	fallback := "" // a short opener such as "Hi": only when nothing better exists
	for _, m := range firstUserMessages {
		t := firstSentence(m, 1000)
		if len(strings.Fields(t)) >= 4 {
			return shortTitle(t, max)
		}
		if fallback == "" {
			fallback = shortTitle(t, max)
		}
	}
	if s == nil {
		return fallback
	}
	sents := text.Sentences(s.Narrative)
	// The user's own words say best what the conversation is about: the
	// extractive narrative labels its sentences by speaker.
	for _, sent := range sents {
		if said, ok := strings.CutPrefix(strings.TrimSpace(sent), "User: "); ok && strings.TrimSpace(said) != "" {
			return shortTitle(text.Capitalize(strings.TrimSpace(said)), max)
		}
	}
	for _, sent := range sents {
		sent = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(sent, "User: "), "Assistant: "))
		if sent != "" {
			return shortTitle(text.Capitalize(sent), max)
		}
	}
	for _, f := range s.Facts {
		if k := strings.TrimSpace(f.Key); k != "" && strings.TrimSpace(f.Value) != "" {
			name := text.Capitalize(strings.ReplaceAll(summary.NormalizeKey(k), "_", " "))
			return shortTitle(name+": "+strings.TrimSpace(f.Value), max)
		}
	}
	return fallback
}

// firstSentence returns the first informative sentence of s (see
// text.Informative), cut to max runes ("" for blank s). Sentences that are
// only a greeting or a self-introduction, or have fewer than four words,
// are passed over unless no sentence qualifies, in which case the first
// non-empty one is used.
func firstSentence(s string, max int) string {
	fallback := ""
	for _, sent := range text.Sentences(s) {
		rest, ok := text.Informative(sent)
		if !ok {
			continue
		}
		if len(strings.Fields(rest)) >= 4 && !text.SelfIntro(rest) {
			return text.Truncate(rest, max, "…")
		}
		if fallback == "" {
			fallback = rest
		}
	}
	if fallback == "" {
		if sentences := text.Sentences(s); len(sentences) > 0 {
			fallback = sentences[0]
		}
	}
	return text.Truncate(fallback, max, "…")
}

// shortTitle removes trailing sentence punctuation and cuts at a word
// boundary so that the result, "…" included, has at most max runes.
func shortTitle(t string, max int) string {
	return text.Title(strings.TrimRight(text.Collapse(t), ".!?… "), max)
}

// maxTitleWords is the most words a model-written title keeps.
const maxTitleWords = 8

// maxTitleRunes caps every title, whatever produced it.
const maxTitleRunes = 80

// WithTitleModel makes a langchaingo model write the titles (default: an
// offline, deterministic title drawn from the summary or the first user
// messages). The model gets one GenerateContent call per new title, with a
// short system prompt and the summary's facts and narrative (or the first
// user messages) as the human message; the reply's first line is used,
// without quotes, a "Title:" label or trailing punctuation, cut to eight
// words. opts are passed to every call (model name, temperature, …). When
// the model fails, the previous title is kept (the offline one for a new
// conversation) and the model is asked again at the next refresh.
func WithTitleModel(model llms.Model, opts ...llms.CallOption) Option {
	return func(c *Catalog) {
		if model != nil {
			c.title = llmTitle(model, opts...)
		}
	}
}

// llmTitle returns the titleFunc of WithTitleModel.
func llmTitle(model llms.Model, opts ...llms.CallOption) titleFunc {
	return func(ctx context.Context, s summary.Summary, firstUserMessages []string) (string, error) {
		var input string
		if !s.IsEmpty() {
			input = summaryText("", s)
		} else {
			input = turnsText("", firstUserMessages)
		}
		if strings.TrimSpace(input) == "" {
			return "", errors.New("catalog: nothing to title")
		}
		msgs := []llms.MessageContent{
			llms.TextParts(llms.ChatMessageTypeSystem, titlePrompt),
			llms.TextParts(llms.ChatMessageTypeHuman, input),
		}
		resp, err := model.GenerateContent(ctx, msgs, opts...)
		if err != nil {
			return "", fmt.Errorf("catalog: title model: %w", err)
		}
		if resp == nil || len(resp.Choices) == 0 || resp.Choices[0] == nil {
			return "", errors.New("catalog: title model returned no choice")
		}
		t := cleanTitle(resp.Choices[0].Content)
		if t == "" {
			return "", errors.New("catalog: title model returned an empty title")
		}
		return t, nil
	}
}

const titlePrompt = `You name conversations so that a user can find them again in a list.
Reply with a title of at most 8 words that says what the conversation is about.
Reply with the title only: no quotes, no "Title:" label, no final punctuation.`

// cleanTitle turns a model's reply into a title: its first non-blank line,
// without Markdown emphasis, a "Title:" label, surrounding quotes or
// trailing punctuation, white space collapsed, cut to maxTitleWords words
// and 80 characters.
func cleanTitle(reply string) string {
	line := ""
	for _, l := range strings.Split(reply, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			line = l
			break
		}
	}
	line = strings.Trim(line, "*#_` ")
	if i := strings.IndexByte(line, ':'); i >= 0 && strings.EqualFold(strings.TrimSpace(line[:i]), "title") {
		line = line[i+1:]
	}
	line = strings.TrimSpace(line)
	line = strings.Trim(line, `"'“”‘’«»`+"`*_ ")
	line = strings.TrimRight(line, ".!?…;:, ")
	words := strings.Fields(line)
	if len(words) > maxTitleWords {
		words = words[:maxTitleWords]
	}
	return capTitle(strings.Join(words, " "))
}

// capTitle collapses t's white space and cuts it to maxTitleRunes runes,
// ending with "…" when cut.
func capTitle(t string) string {
	return text.Truncate(text.Collapse(t), maxTitleRunes, "…")
}

// fingerprintSize is the number of terms a fingerprint keeps.
const fingerprintSize = 16

// fingerprint returns the salient terms of a text (see terms): the
// fingerprintSize most frequent ones, ties broken alphabetically, sorted
// and joined by spaces. It is what the title stability rule compares.
func fingerprint(text string) string {
	counts := map[string]int{}
	for _, t := range terms(text) {
		counts[t]++
	}
	terms := make([]string, 0, len(counts))
	for t := range counts {
		terms = append(terms, t)
	}
	sort.Slice(terms, func(i, j int) bool {
		if counts[terms[i]] != counts[terms[j]] {
			return counts[terms[i]] > counts[terms[j]]
		}
		return terms[i] < terms[j]
	})
	if len(terms) > fingerprintSize {
		terms = terms[:fingerprintSize]
	}
	sort.Strings(terms)
	return strings.Join(terms, " ")
}

// jaccard returns the Jaccard similarity of two fingerprints (sets of
// space-separated terms): |a ∩ b| / |a ∪ b|, 1 when both are empty.
func jaccard(a, b string) float64 {
	sa, sb := strings.Fields(a), strings.Fields(b)
	if len(sa) == 0 && len(sb) == 0 {
		return 1
	}
	set := make(map[string]bool, len(sa))
	for _, t := range sa {
		set[t] = true
	}
	inter, union := 0, len(set)
	seen := map[string]bool{}
	for _, t := range sb {
		if seen[t] {
			continue
		}
		seen[t] = true
		if set[t] {
			inter++
		} else {
			union++
		}
	}
	return float64(inter) / float64(union)
}

// summaryText renders what a summary-based document embeds: the title, the
// facts and the narrative, one block each, in the wording the model sees
// them in (summary.FactsBlock, summary.NarrativeBlock):
//
//	Title: <title>
//	Conversation Facts:
//	- key: value
//	Conversation Summary:
//	<narrative>
func summaryText(title string, s summary.Summary) string {
	var b strings.Builder
	if title = strings.TrimSpace(title); title != "" {
		b.WriteString("Title: " + title + "\n")
	}
	if f := summary.FactsBlock(s.Facts); f != "" {
		b.WriteString(f + "\n")
	}
	if n := summary.NarrativeBlock(s.Narrative); n != "" {
		b.WriteString(n + "\n")
	}
	return strings.TrimSpace(b.String())
}

// turnsText renders what a document of a session without summary embeds:
// the title and the first user messages, one "User: …" line each.
func turnsText(title string, firstUserMessages []string) string {
	var b strings.Builder
	if title = strings.TrimSpace(title); title != "" {
		b.WriteString("Title: " + title + "\n")
	}
	for _, m := range firstUserMessages {
		if m = strings.Join(strings.Fields(m), " "); m != "" {
			b.WriteString("User: " + m + "\n")
		}
	}
	return strings.TrimSpace(b.String())
}

// fingerprintSource is the text a fingerprint is computed from: the facts
// and the narrative (not the title, which would make the fingerprint depend
// on itself), or the first user messages.
func fingerprintSource(s *summary.Summary, firstUserMessages []string) string {
	if s != nil && !s.IsEmpty() {
		return summaryText("", *s)
	}
	return turnsText("", firstUserMessages)
}

// keywords returns the n most frequent content words of texts (see terms),
// most frequent first (ties alphabetically), each in its most frequent
// written form, joined by ", ": a readable digest of what a conversation is
// about.
func keywords(texts []string, n int) string {
	type stat struct {
		count   int
		surface map[string]int
	}
	stats := map[string]*stat{}
	for _, text := range texts {
		eachTerm(text, func(surface, term string) {
			st := stats[term]
			if st == nil {
				st = &stat{surface: map[string]int{}}
				stats[term] = st
			}
			st.count++
			st.surface[surface]++
		})
	}
	terms := make([]string, 0, len(stats))
	for t := range stats {
		terms = append(terms, t)
	}
	sort.Slice(terms, func(i, j int) bool {
		ci, cj := stats[terms[i]].count, stats[terms[j]].count
		if ci != cj {
			return ci > cj
		}
		return terms[i] < terms[j]
	})
	if len(terms) > n {
		terms = terms[:n]
	}
	words := make([]string, len(terms))
	for i, t := range terms {
		best, bestN := "", 0
		for s, c := range stats[t].surface {
			if c > bestN || (c == bestN && s < best) {
				best, bestN = s, c
			}
		}
		words[i] = best
	}
	return strings.Join(words, ", ")
}
