package extractive

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/chatmsg"
	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/trimmer"
)

// maxNarrativeSentence caps one sentence of the extractive narrative, in
// runes, so a single long sentence cannot take the whole narrative.
const maxNarrativeSentence = 160

// minNarrativeScore is the least score a sentence needs to enter the
// narrative (the user's goal enters regardless): small talk and filler stay
// out even when there is room.
const minNarrativeScore = 1

// nearCap is, per sentence, how far below the narrative's token cap the
// sum of per-sentence estimates must stay for the narrative to fit without
// estimating it whole: more than the rounding an estimate per script can
// lose on one sentence.
const nearCap = 4

// candidate is a sentence that may go into the extractive narrative.
type candidate struct {
	who   string // "User", "Assistant" or "" (a narrative sentence without a speaker)
	text  string // the sentence, without its speaker prefix
	shape string // sentenceShape(text)
	order int    // position in the conversation; carried sentences come first
	score int
	goal  bool // the user's goal: always kept, first
	// topic: the newest sentence in which the user states a new aim ("now
	// I am planning a trip…"), kept after the goal so that the narrative —
	// and what is derived from it, such as a title — follows a change of
	// subject even when the new one carries no facts yet.
	topic bool
	aim   bool // a user's sentence that states an aim (isAim)
}

// isAim reports whether a user's sentence states an aim ("I need …",
// "now I am planning …") and is not small talk.
func isAim(text string) bool { return aimWords.MatchString(text) && !smallTalk.MatchString(text) }

func (c candidate) render() string {
	if c.who == "" {
		return c.text
	}
	return c.who + ": " + c.text
}

var (
	// caseWords mark sentences about the support case itself.
	caseWords = regexp.MustCompile(`(?i)\b(?:refund\w*|return\w*|replace\w*|damaged|broken|cracked|defective|missing|lost|late|cancel\w*|rebook\w*|complain\w*|order\w*|deliver\w*|shipp?\w*|parcel|package|charge[ds]?|invoice|warranty|repair\w*|exchange\w*|reservation|booking|book|flight|ticket|case|account|password|issue|problem|error|bill\w*|payment|subscription|upgrade|downgrade|claim)\b`)
	// decisionWords mark what was asked for, agreed or done.
	decisionWords = regexp.MustCompile(`(?i)\b(?:let['’]s|i['’]ll\s+take|i['’]d\s+like|i\s+want|i\s+need|go\s+with|decided|agree\w*|confirm\w*|done|issued|approved|booked|cancell?ed|scheduled|arranged|opened|created|updated|changed|will\s+be|has\s+been|have\s+been|instead)\b`)
	// aimWords mark a user sentence that states what they want now.
	aimWords = regexp.MustCompile(`(?i)\b(?:i\s*(?:am|['’]m)\s+(?:planning|looking|trying|hoping|thinking)|i\s+(?:want|need|would\s+like)|i['’]d\s+like|help\s+me|can\s+you\s+help|now\s+i)\b`)
	// smallTalk marks sentences with nothing to keep.
	smallTalk = regexp.MustCompile(`(?i)^(?:thanks?|thank\s+you|ok(?:ay)?|sure|great|perfect|you['’]re\s+welcome|no\s+problem|got\s+it|sounds\s+good|have\s+a\s+(?:nice|good|great))\b`)
)

// findingWeight says how much a kind of fact makes a sentence worth
// keeping in the narrative.
var findingWeight = map[string]int{
	"id": 3, "address": 3, "preference": 3, "phone": 2, "email": 2, "amount": 2,
	"date": 1, "name": 1, "flight": 1, "quantity": 1,
}

// maxFindingScore caps what facts add to a sentence's score, so one
// listing-like sentence does not outrank everything else.
const maxFindingScore = 6

// scoreSentence rates a sentence for the narrative from the findings in
// it and its words (wordScore).
func scoreSentence(text, who string, found []finding) int {
	score := 0
	for _, f := range found {
		w := findingWeight[f.kind]
		if strings.HasPrefix(f.kind, "json:") {
			w = 1
		}
		score += w
	}
	return min(score, maxFindingScore) + wordScore(text, who)
}

// wordScore rates a sentence by its words. Words about the support case
// and decisions count; so do the marks of a sentence that tells something
// a later question may be about — names, places and titles (capitalised
// words inside the sentence, a quoted title), numbers, and the speaker
// telling about themselves ("I went…", "my sister…"). Small talk, very
// short sentences and questions rate low: a question rarely holds the
// answer to a later one.
func wordScore(text, who string) int {
	ft := fold(text)
	score := 0
	if (ft.has(caseStems...) && caseWords.MatchString(text)) || (ft.cjk && ft.has(caseWordsCJK...)) {
		score += 2
	}
	if ft.has(decisionStems...) && decisionWords.MatchString(text) {
		score += 2
	}
	n := wordCount(text)
	if smallTalk.MatchString(text) || (n < 6 && chatter.MatchString(text)) {
		score -= 3
	}
	switch {
	case n < 3:
		score -= 3
	case n < 5:
		score--
	}
	question := strings.HasSuffix(text, "?") || strings.HasSuffix(text, "？")
	if question {
		score--
		if who == "Assistant" {
			score--
		}
	}
	if n >= 5 && !question {
		score += storyScore(text, ft)
	}
	return score
}

// caseWordsCJK are words about the support case in Korean, Japanese and
// Chinese: a sentence holding one counts as caseWords does.
var caseWordsCJK = []string{
	"환불", "교환", "반품", "취소", "주문", "배송", "파손", "고장", "불량", "결제", "예약", "청구", "분실", "지연",
	"返金", "交換", "返品", "キャンセル", "注文", "配送", "壊れ", "故障", "不良", "支払", "予約", "請求", "紛失", "遅れ",
	"退款", "换货", "退货", "取消", "订单", "快递", "坏了", "损坏", "付款", "预订", "丢失", "延迟",
}

// wordCount is how many words a sentence has: its white-space separated
// fields, a run of Han or kana (written without spaces) counting one word
// for every two letters.
func wordCount(text string) int {
	n := 0
	for _, w := range strings.Fields(text) {
		n++
		if len(w) == utf8.RuneCountInString(w) {
			continue // ASCII: one word
		}
		cjk := 0
		for _, r := range w {
			if r >= 0x3040 && (unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana)) {
				cjk++
			}
		}
		n += cjk / 2
	}
	return n
}

// storyScore counts the marks of a sentence that tells something a later
// question may be about: names, places and titles (up to two capitalised
// words inside it), a quoted title, a number, the speaker telling about
// themselves. One mark alone says little ("It takes 5-7 days.", "We talked
// for a while.") and scores nothing.
func storyScore(text string, ft folded) int {
	marks := min(properNouns(text), 2)
	if quotedTitle.MatchString(text) {
		marks++
	}
	if ft.digits > 0 {
		marks++
	}
	if selfTold.MatchString(text) {
		marks++
	}
	if marks < 2 {
		return 0
	}
	return marks
}

var (
	// caseStems and decisionStems are words one of which a sentence holds
	// whenever caseWords or decisionWords matches it (a cheap prefilter,
	// on the text as fold returns it).
	caseStems = []string{"refund", "return", "replace", "damaged", "broken", "cracked", "defective", "missing", "lost",
		"late", "cancel", "rebook", "complain", "order", "deliver", "ship", "parcel", "package", "charge", "invoice",
		"warranty", "repair", "exchange", "reservation", "book", "flight", "ticket", "case", "account", "password",
		"issue", "problem", "error", "bill", "payment", "subscription", "upgrade", "downgrade", "claim"}
	decisionStems = []string{"let's", "let’s", "ll take", "d like", "i want", "i need", "go with", "decided", "agree",
		"confirm", "done", "issued", "approved", "booked", "cancel", "scheduled", "arranged", "opened", "created",
		"updated", "changed", "will be", "has been", "have been", "instead"}
	// chatter marks the openers of a short reaction ("Wow, that's so
	// cool!", "Haha, same here.") with nothing to keep.
	chatter = regexp.MustCompile(`(?i)^(?:wow|haha+|aww+|oh|ooh|yeah|yes|yep|nope|lol|omg|congrats|congratulations|awesome|amazing|cool|nice|that['’]s|totally|absolutely|same|me\s+too)\b`)
	// quotedTitle matches a quoted name or title ("Charlotte's Web").
	quotedTitle = regexp.MustCompile(`["“]\p{Lu}[^"”]{1,60}["”]`)
	// selfTold marks the speaker telling about themselves or their own.
	selfTold = regexp.MustCompile(`(?i)\b(?:i|we|my|our)\b`)
)

// properNouns counts the distinct capitalised words inside a sentence
// (not its first word, not "I" and its contractions, not a word opening a
// clause after ".", "!", "?" or ":", not the name of the person addressed,
// as in "Sorry to hear that, Sarah."): names, places, titles.
func properNouns(text string) int {
	words := strings.Fields(text)
	seen := map[string]bool{}
	for i := 1; i < len(words); i++ {
		prev := words[i-1]
		last, _ := utf8.DecodeLastRuneInString(prev)
		if strings.ContainsRune(".!?:", last) {
			continue
		}
		if end, _ := utf8.DecodeLastRuneInString(words[i]); last == ',' && strings.ContainsRune(",.!?", end) {
			continue // a vocative
		}
		w := strings.TrimFunc(words[i], func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		r, _ := utf8.DecodeRuneInString(w)
		if !unicode.IsUpper(r) || w == "I" || strings.HasPrefix(w, "I'") || strings.HasPrefix(w, "I’") {
			continue
		}
		seen[w] = true
	}
	return len(seen)
}

// sentenceSpan is a sentence of a message, as the narrative shows it, and
// its byte span in the message.
type sentenceSpan struct {
	text       string
	start, end int
}

// messageSentences returns the informative sentences of a message: greeting
// removed, capitalised, ending in punctuation, cut to
// maxNarrativeSentence runes, with their spans in content.
func messageSentences(content string) []sentenceSpan {
	var out []sentenceSpan
	at := 0
	for at < len(content) {
		end := len(content)
		next := len(content)
		if loc := text.SentenceEnd(content[at:]); loc != nil {
			end, next = at+loc[1], at+loc[1]
		}
		sent := text.Collapse(content[at:end])
		start := at
		at = next
		rest, ok := text.Informative(sent)
		if !ok || text.SelfIntro(rest) {
			continue
		}
		out = append(out, sentenceSpan{text: text.Truncate(rest, maxNarrativeSentence, "…"), start: start, end: end})
	}
	return out
}

// within returns the findings that start in [start, end).
func within(found []finding, start, end int) []finding {
	var out []finding
	for _, f := range found {
		if f.start >= start && f.start < end {
			out = append(out, f)
		}
	}
	return out
}

// narrativeCandidates lists the sentences of carried (an earlier
// narrative) and of the user and assistant messages, scored.
func narrativeCandidates(carried string, msgs []llms.ChatMessage, memo *scanMemo) []candidate {
	var cands []candidate
	addScored := func(who string, sc scoredSentence) {
		cands = append(cands, candidate{who: who, text: sc.text, shape: sc.shape, score: sc.score, order: len(cands), aim: sc.aim})
	}
	add := func(who, text string) { addScored(who, memo.sentence(text, who)) }
	for _, sent := range text.Sentences(carried) {
		who, text := "", sent
		for _, p := range []string{"User", "Assistant"} {
			if rest, ok := strings.CutPrefix(sent, p+": "); ok {
				who, text = p, rest
			}
		}
		add(who, text)
	}
	carriedCount := len(cands)
	// The carried narrative's first user sentence was the goal; keep it so.
	goal := -1
	for i, c := range cands {
		if c.who == "User" {
			goal = i
			break
		}
	}
	userMsgs := 0
	for _, m := range msgs {
		if m == nil {
			continue
		}
		switch m.GetType() {
		case llms.ChatMessageTypeHuman:
			userMsgs++
			for _, sc := range memo.sentences(m.GetContent(), "User") {
				addScored("User", sc)
				// The goal: the first sentence of the first user turns that
				// is about the case or carries a fact.
				if goal < 0 && userMsgs <= 3 && cands[len(cands)-1].score >= 2 {
					goal = len(cands) - 1
				}
			}
		case llms.ChatMessageTypeAI:
			sents := memo.sentences(m.GetContent(), "Assistant")
			for _, sc := range sents {
				addScored("Assistant", sc)
			}
			if len(sents) == 0 {
				if calls := chatmsg.ToolCalls(m); len(calls) > 0 {
					names := make([]string, len(calls))
					for i, c := range calls {
						names[i] = c.Name
					}
					text := "Assistant called " + strings.Join(names, ", ") + "."
					cands = append(cands, candidate{text: text, shape: sentenceShape(text), order: len(cands), score: 1})
				}
			}
		}
	}
	if goal < 0 { // no case sentence: the user's first words say what they want
		for i, c := range cands {
			if c.who == "User" && c.order >= carriedCount && len(strings.Fields(c.text)) >= 3 && c.score > -2 {
				goal = i
				break
			}
		}
	}
	if goal >= 0 {
		cands[goal].goal = true
	}
	// Carried sentences come first, so the newest aim wins, and one carried
	// over from an earlier fold stays until a newer one replaces it.
	for i := len(cands) - 1; i >= 0; i-- {
		if c := cands[i]; c.who == "User" && i != goal && c.aim {
			cands[i].topic = true
			break
		}
	}
	return cands
}

// pickNarrative chooses sentences for a narrative of at most max runes
// and maxTokens tokens (trimmer.EstimateScript): the goal first, then by
// score (newer first on ties), skipping repeats, and joins them in
// conversation order.
func pickNarrative(cands []candidate, max, maxTokens int) string {
	if len(cands) == 0 {
		return ""
	}
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ca, cb := &cands[a], &cands[b]
		switch {
		case ca.goal != cb.goal:
			return boolFirst(ca.goal)
		case ca.topic != cb.topic:
			return boolFirst(ca.topic)
		case ca.score != cb.score:
			return cmp.Compare(cb.score, ca.score)
		}
		return cmp.Compare(cb.order, ca.order)
	})
	chosen := map[int]bool{}
	seen := map[string]bool{}
	used, tokens := -1, 0 // no separator before the first sentence
	joined := func() string {
		var parts []string
		for i, c := range cands {
			if chosen[i] {
				parts = append(parts, c.render())
			}
		}
		return strings.Join(parts, " ")
	}
	for _, i := range order {
		c := cands[i]
		if c.score < minNarrativeScore && !c.goal && !c.topic {
			continue
		}
		r := c.render()
		n := utf8.RuneCountInString(r) + 1
		if used+n > max {
			continue
		}
		// A cheap test first (per-sentence estimates plus the separator);
		// near the cap, where rounding in the per-sentence estimates could
		// matter, the exact one on the narrative as it would be.
		t := trimmer.EstimateScript(r) + 1
		if tokens+t > maxTokens || seen[c.shape] {
			continue
		}
		chosen[i] = true
		if tokens+t+nearCap*len(chosen) > maxTokens && trimmer.EstimateScript(joined()) > maxTokens {
			delete(chosen, i)
			continue
		}
		seen[c.shape] = true
		used += n
		tokens += t
	}
	if len(chosen) == 0 { // one sentence longer than the cap
		for _, i := range order {
			return text.Truncate(cands[i].render(), max, "…")
		}
	}
	return joined()
}

// boolFirst orders the candidate for which a test holds before the one
// for which it does not: -1 when it holds for the first.
func boolFirst(first bool) int {
	if first {
		return -1
	}
	return 1
}

// codeToken matches a token with a digit, or an all-capitals code.
var codeToken = regexp.MustCompile(`[^\s,;:()]*\p{N}[^\s,;:()]*|\b\p{Lu}{4,}\b`)

// sentenceShape is a sentence with its numbers and codes masked, so that
// sentences differing only in values ("The new total is $206 and your
// reservation TF3PBX is confirmed") count as repeats.
func sentenceShape(s string) string {
	return strings.ToLower(codeToken.ReplaceAllString(s, "#"))
}
