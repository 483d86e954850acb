package text

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// sentenceEnd is a sentence end: a run of ".", "!", "?" or "…" followed
// by white space or the end of the text, or a run starting with the
// full-width "。", "！" or "？" of Chinese and Japanese, which need no space
// after them.
var sentenceEnd = regexp.MustCompile(`[。！？][.!?…。！？]*\s*|[.!?…]+(?:\s+|$)`)

// latinSentenceEnd is sentenceEnd without the full-width ends, for text
// that has none (the common case, and a cheaper expression).
var latinSentenceEnd = regexp.MustCompile(`[.!?…]+(?:\s+|$)`)

// sentenceEndIn returns the expression that finds the sentence ends of s:
// sentenceEnd when s may hold a full-width end, else latinSentenceEnd.
func sentenceEndIn(s string) *regexp.Regexp {
	if MayHoldFullWidthPunct(s) {
		return sentenceEnd
	}
	return latinSentenceEnd
}

// MayHoldFullWidthPunct reports whether s may hold a punctuation mark of
// Chinese or Japanese ("。", "、", "！", "？", "，", "；"): their UTF-8
// encodings start with byte 0xE3 or 0xEF. When it reports false, searching
// s for those marks (a rune-by-rune scan) finds nothing, so the common
// case of text without them costs one byte search.
func MayHoldFullWidthPunct(s string) bool {
	return strings.IndexByte(s, 0xE3) >= 0 || strings.IndexByte(s, 0xEF) >= 0
}

var greeting = regexp.MustCompile(`^(?i:(?:hi|hello|hey|hiya|greetings|good\s+(?:morning|afternoon|evening)|dear\s+\S+)(?:\s+there)?)(?:[\s,!.:;-]+|$)`)

var selfIntro = regexp.MustCompile(`^(?i:this\s+is|my\s+name\s+is|i['’]m|i\s+am)\s+\p{Lu}[\p{L}'’-]*(?:\s+\p{Lu}[\p{L}'’-]*){0,2}[.!]*$`)

// SentenceEnd returns the span of the first sentence end in s — a run of
// ".", "!", "?" or "…" followed by white space or the end of s, or a run
// starting with a full-width "。", "！" or "？" (no space needed), the
// white space after it included — or nil when there is none.
func SentenceEnd(s string) []int { return sentenceEndIn(s).FindStringIndex(s) }

// Sentences splits prose after ".", "!", "?" or "…" followed by space,
// and after "。", "！" or "？", white space collapsed.
func Sentences(s string) []string {
	s = Collapse(s)
	re := sentenceEndIn(s)
	var out []string
	for s != "" {
		loc := re.FindStringIndex(s)
		if loc == nil {
			out = append(out, s)
			break
		}
		if sent := strings.TrimSpace(s[:loc[1]]); sent != "" {
			out = append(out, sent)
		}
		s = s[loc[1]:]
	}
	return out
}

// StripGreeting removes a leading greeting ("Hi there, ", "Good morning!
// ", "Dear Tom, ") from s.
func StripGreeting(s string) string { return greeting.ReplaceAllString(s, "") }

// Informative returns a sentence as a title or a summary shows it: a
// leading greeting removed, capitalised, ending in punctuation ("。"
// after Chinese or Japanese, "." otherwise). ok is false when nothing but
// a greeting or punctuation is left.
func Informative(sent string) (string, bool) {
	rest := strings.TrimSpace(StripGreeting(sent))
	if rest == "" || onlyPunct(rest) {
		return "", false
	}
	rest = Capitalize(rest)
	switch last, _ := utf8.DecodeLastRuneInString(rest); {
	case strings.ContainsRune(".!?…。！？", last):
	case unicode.In(last, unicode.Han, unicode.Hiragana, unicode.Katakana):
		rest += "。"
	default:
		rest += "."
	}
	return rest, true
}

// SelfIntro reports whether a sentence is only a self-introduction ("This
// is Dana.", "I'm Tom Baker"): it says who speaks, not what about.
func SelfIntro(sent string) bool { return selfIntro.MatchString(sent) }

func onlyPunct(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// Capitalize upper-cases the first rune of s when it is a lower-case
// letter.
func Capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError || !unicode.IsLower(r) {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}
