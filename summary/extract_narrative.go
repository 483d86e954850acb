package summary

import (
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"
)

// maxNarrativeSentence caps one sentence of the extractive narrative, in
// runes, so a single long sentence cannot take the whole narrative.
const maxNarrativeSentence = 160

// minNarrativeScore is the least score a sentence needs to enter the
// narrative (the user's goal enters regardless): small talk and filler stay
// out even when there is room.
const minNarrativeScore = 1

// candidate is a sentence that may go into the extractive narrative.
type candidate struct {
	who   string // "User", "Assistant" or "" (a narrative sentence without a speaker)
	text  string // the sentence, without its speaker prefix
	order int    // position in the conversation; carried sentences come first
	score int
	goal  bool // the user's goal: always kept, first
	// topic: the newest sentence in which the user states a new aim ("now
	// I am planning a trip…"), kept after the goal so that the narrative —
	// and what is derived from it, such as a title — follows a change of
	// subject even when the new one carries no facts yet.
	topic bool
}

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

// scoreSentence rates a sentence for the narrative: facts it carries, words
// about the support case, decisions; small talk and the agent's questions
// rate low.
func scoreSentence(text, who string, scan func(string, llms.ChatMessageType) []finding) int {
	role := llms.ChatMessageTypeAI
	if who == "User" {
		role = llms.ChatMessageTypeHuman
	}
	score := 0
	for _, f := range scan(text, role) {
		w := findingWeight[f.kind]
		if strings.HasPrefix(f.kind, "json:") {
			w = 1
		}
		score += w
	}
	if score > 6 {
		score = 6
	}
	if caseWords.MatchString(text) {
		score += 2
	}
	if decisionWords.MatchString(text) {
		score += 2
	}
	if smallTalk.MatchString(text) {
		score -= 3
	}
	if n := len(strings.Fields(text)); n < 3 {
		score -= 3
	} else if n < 5 {
		score--
	}
	if who == "Assistant" && strings.HasSuffix(text, "?") {
		score--
	}
	return score
}

// messageSentences returns the informative sentences of a message: greeting
// removed, capitalised, ending in punctuation, cut to
// maxNarrativeSentence runes.
func messageSentences(content string) []string {
	var out []string
	for _, sent := range splitSentences(content) {
		rest := strings.TrimSpace(greeting.ReplaceAllString(sent, ""))
		if rest == "" || isOnlyPunct(rest) || selfIntro.MatchString(capitalize(rest)) {
			continue
		}
		rest = capitalize(rest)
		if last, _ := utf8.DecodeLastRuneInString(rest); !strings.ContainsRune(".!?…", last) {
			rest += "."
		}
		out = append(out, truncateRunes(rest, maxNarrativeSentence, "…"))
	}
	return out
}

// narrativeCandidates lists the sentences of carried (an earlier
// narrative) and of the user and assistant messages, scored.
func narrativeCandidates(carried string, msgs []llms.ChatMessage, memo *scanMemo) []candidate {
	scan := memo.scan
	var cands []candidate
	add := func(who, text string) {
		c := candidate{who: who, text: text, order: len(cands)}
		c.score = scoreSentence(text, who, scan)
		cands = append(cands, c)
	}
	addScored := func(who string, sc scoredSentence) {
		cands = append(cands, candidate{who: who, text: sc.text, score: sc.score, order: len(cands)})
	}
	for _, sent := range splitSentences(carried) {
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
				if calls := toolCalls(m); len(calls) > 0 {
					names := make([]string, len(calls))
					for i, c := range calls {
						names[i] = c.Name
					}
					cands = append(cands, candidate{text: "Assistant called " + strings.Join(names, ", ") + ".", order: len(cands), score: 1})
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
		if c := cands[i]; c.who == "User" && i != goal && aimWords.MatchString(c.text) && !smallTalk.MatchString(c.text) {
			cands[i].topic = true
			break
		}
	}
	return cands
}

// pickNarrative chooses sentences for a narrative of at most max runes:
// the goal first, then by score (newer first on ties), skipping repeats,
// and joins them in conversation order.
func pickNarrative(cands []candidate, max int) string {
	if len(cands) == 0 {
		return ""
	}
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ca, cb := cands[order[a]], cands[order[b]]
		if ca.goal != cb.goal {
			return ca.goal
		}
		if ca.topic != cb.topic {
			return ca.topic
		}
		if ca.score != cb.score {
			return ca.score > cb.score
		}
		return ca.order > cb.order
	})
	chosen := map[int]bool{}
	seen := map[string]bool{}
	used := -1 // no separator before the first sentence
	for _, i := range order {
		c := cands[i]
		if c.score < minNarrativeScore && !c.goal && !c.topic {
			continue
		}
		key := sentenceShape(c.text)
		if seen[key] {
			continue
		}
		n := utf8.RuneCountInString(c.render()) + 1
		if used+n > max {
			continue
		}
		seen[key] = true
		chosen[i] = true
		used += n
	}
	var parts []string
	for i, c := range cands {
		if chosen[i] {
			parts = append(parts, c.render())
		}
	}
	if len(parts) == 0 { // one sentence longer than the cap
		for _, i := range order {
			return truncateRunes(cands[i].render(), max, "…")
		}
	}
	return strings.Join(parts, " ")
}

// codeToken matches a token with a digit, or an all-capitals code.
var codeToken = regexp.MustCompile(`[^\s,;:()]*\p{N}[^\s,;:()]*|\b\p{Lu}{4,}\b`)

// sentenceShape is a sentence with its numbers and codes masked, so that
// sentences differing only in values ("The new total is $206 and your
// reservation TF3PBX is confirmed") count as repeats.
func sentenceShape(s string) string {
	return strings.ToLower(codeToken.ReplaceAllString(s, "#"))
}
