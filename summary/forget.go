package summary

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/strata-go/strata/record"
)

// DefaultMaxForgotten bounds a summary's Forgotten list: a ForgetFact
// past it fails (the fact stays until a Forget of its messages), and a
// snapshot listing more is refused at import. Matching costs one keyed
// hash per word of a text per distinct entry length (at most 32 lengths
// of words and 27 of digits), whatever the list's size.
const DefaultMaxForgotten = 1000

// maxForgottenWords is the most words a Forgotten digest covers: a longer
// value is recorded by its first maxForgottenWords words (Prefix).
const maxForgottenWords = record.MaxForgottenWords

// minForgottenDigits and maxForgottenDigits bound the digits for which a
// Forgotten entry also records the value's digits alone (a card, account
// or phone number written with other separators, or none).
const (
	minForgottenDigits = record.MinForgottenDigits
	maxForgottenDigits = record.MaxForgottenDigits
)

// newForgotten returns the record of value, erased under key when the
// session's newest message had sequence number seq, keyed with secret.
// ok is false when the value has no words.
func newForgotten(secret []byte, key, value string, seq int64) (Forgotten, bool) {
	v := strings.TrimSpace(value)
	cut := strings.HasSuffix(v, "…")
	ws := words(strings.ToLower(strings.TrimSuffix(v, "…")))
	if cut && len(ws) > 1 {
		ws = ws[:len(ws)-1] // the cut word may be partial
	}
	if len(ws) > maxForgottenWords {
		ws, cut = ws[:maxForgottenWords], true
	}
	if len(ws) == 0 {
		return Forgotten{}, false
	}
	m := newMACer(secret)
	f := Forgotten{Key: key, Digest: m.words(ws), Words: len(ws), Prefix: cut, Seq: seq}
	if d := digitsOf(strings.TrimSuffix(v, "…")); len(d) >= minForgottenDigits && len(d) <= maxForgottenDigits && !cut {
		f.Digits, f.DigitCount = m.digits(d), len(d)
	}
	return f, true
}

// macer computes keyed digests.
type macer struct{ h hash.Hash }

func newMACer(secret []byte) *macer { return &macer{h: hmac.New(sha256.New, secret)} }

func (m *macer) sum(kind byte, s string) string {
	m.h.Reset()
	m.h.Write([]byte{kind})
	m.h.Write([]byte(s))
	return hex.EncodeToString(m.h.Sum(nil)[:16])
}

func (m *macer) words(ws []string) string { return m.sum('w', strings.Join(ws, " ")) }
func (m *macer) digits(d string) string   { return m.sum('d', d) }

// digitsOf is the decimal digits of s, in order.
func digitsOf(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// digitRuns returns the digits of each run of s made of digits and the
// separators numbers are written with (white space, - . / ( ) +).
func digitRuns(s string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case unicode.IsSpace(r) || strings.ContainsRune("-./()+", r):
		default:
			flush()
		}
	}
	flush()
	return out
}

// forgetMatcher tests texts against a Forgotten list: keyed entries by
// windows of words and digits, legacy ones as before.
type forgetMatcher struct {
	m       *macer
	words   map[int]map[string]Forgotten // word count → digest → entry
	digits  map[int]map[string]Forgotten // digit count → digest → entry
	legacy  []Forgotten
	entries int
}

func newForgetMatcher(secret []byte, list []Forgotten) *forgetMatcher {
	fm := &forgetMatcher{m: newMACer(secret), words: map[int]map[string]Forgotten{}, digits: map[int]map[string]Forgotten{}}
	for _, f := range list {
		fm.entries++
		if f.Words == 0 { // a legacy entry
			fm.legacy = append(fm.legacy, f)
			continue
		}
		if fm.words[f.Words] == nil {
			fm.words[f.Words] = map[string]Forgotten{}
		}
		fm.words[f.Words][f.Digest] = f
		if f.Digits != "" {
			if fm.digits[f.DigitCount] == nil {
				fm.digits[f.DigitCount] = map[string]Forgotten{}
			}
			fm.digits[f.DigitCount][f.Digits] = f
		}
	}
	return fm
}

// match calls hit for each entry text holds (possibly more than once) and
// stops when hit returns true; it reports whether it stopped.
func (fm *forgetMatcher) match(text string, hit func(Forgotten) bool) bool {
	if fm.entries == 0 {
		return false
	}
	ws := words(strings.ToLower(text))
	for n, set := range fm.words {
		for j := 0; j+n <= len(ws); j++ {
			if f, ok := set[fm.m.words(ws[j:j+n])]; ok && hit(f) {
				return true
			}
		}
	}
	if len(fm.digits) > 0 {
		for _, run := range digitRuns(text) {
			for n, set := range fm.digits {
				for j := 0; j+n <= len(run); j++ {
					if f, ok := set[fm.m.digits(run[j:j+n])]; ok && hit(f) {
						return true
					}
				}
			}
		}
	}
	for _, f := range fm.legacy {
		if (legacyIs(f, text) || legacyIn(f, text)) && hit(f) {
			return true
		}
	}
	return false
}

// in reports whether text holds any listed value.
func (fm *forgetMatcher) in(text string) bool {
	return fm.match(text, func(Forgotten) bool { return true })
}

// rollMask keeps the 53 bits of a rolling hash that Forgotten.Roll stores.
const rollMask = record.LegacyRollMask

// rollBase is the multiplier of rollHash (odd, so that it is invertible
// modulo 2⁶⁴).
const rollBase = 1_000_003

// rollHash is the polynomial hash Σ r[i]·rollBase^(n−1−i) modulo 2⁶⁴ of
// runes r, which a window sliding over a text updates in constant time.
func rollHash(r []rune) uint64 {
	var h uint64
	for _, c := range r {
		h = h*rollBase + uint64(c)
	}
	return h
}

// normForget is the form under which legacy entries compare values.
func normForget(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// legacyIs reports whether value is the legacy entry's value.
func legacyIs(f Forgotten, value string) bool {
	v := normForget(value)
	return utf8.RuneCountInString(v) == f.Runes && digest(v) == f.Digest
}

// legacyIn reports whether text contains the legacy entry's value
// (case-insensitively), by a rolling hash over text.
func legacyIn(f Forgotten, text string) bool {
	if f.Runes <= 0 {
		return false
	}
	t := []rune(strings.ToLower(text))
	n := f.Runes
	if len(t) < n {
		return false
	}
	match := func(i int) bool {
		return !unicode.IsSpace(t[i]) && !unicode.IsSpace(t[i+n-1]) && digest(string(t[i:i+n])) == f.Digest
	}
	var top uint64 = 1 // rollBase^(n−1)
	for range n - 1 {
		top *= rollBase
	}
	h := rollHash(t[:n])
	for i := 0; ; i++ {
		if h&rollMask == f.Roll && match(i) {
			return true
		}
		if i+n >= len(t) {
			return false
		}
		h = (h-uint64(t[i])*top)*rollBase + uint64(t[i+n])
	}
}

// sentences splits a narrative into its sentences, each with the white
// space that follows it, so that joining them gives the narrative back.
func sentences(narrative string) []string {
	var out []string
	for narrative != "" {
		_, hi, ok := sentenceBoundary(narrative)
		if !ok {
			out = append(out, narrative)
			break
		}
		out = append(out, narrative[:hi])
		narrative = narrative[hi:]
	}
	return out
}

// dropSentences returns narrative without the sentences for which drop is
// true.
func dropSentences(narrative string, drop func(string) bool) string {
	var b strings.Builder
	for _, s := range sentences(narrative) {
		if !drop(s) {
			b.WriteString(s)
		}
	}
	return strings.TrimSpace(b.String())
}

// ErrTooManyForgotten: ForgetFact would list more than
// DefaultMaxForgotten forgotten values in one summary.
var ErrTooManyForgotten = errors.New("summary: too many forgotten values in one session")

// ForgetFact returns s without the fact whose key is key (compared as
// NormalizeKey does), pinned or not: its value, and the value it
// superseded, leave the facts and every narrative sentence carrying them
// (or, for a value the ledger cut, its words before the cut; with exact
// provenance, every sentence of the messages that stated it), and are
// recorded in Forgotten with seq (the session's newest message) so that
// SuppressForgotten keeps later folds from bringing them back. The first
// ForgetFact of a session draws its ForgetKey. ok is false, and s is
// returned unchanged, when no fact has that key; err is
// ErrTooManyForgotten when the list is full.
func ForgetFact(s Summary, key string, seq int64) (out Summary, ok bool, err error) {
	norm := NormalizeKey(key)
	i := slices.IndexFunc(s.Facts, func(f Fact) bool { return NormalizeKey(f.Key) == norm })
	if norm == "" || i < 0 {
		return s, false, nil
	}
	f := s.Facts[i]
	out = s
	if len(out.ForgetKey) == 0 {
		out.ForgetKey = make([]byte, 32)
		if _, err := rand.Read(out.ForgetKey); err != nil {
			return s, false, fmt.Errorf("summary: forget key: %w", err)
		}
	}
	out.Facts = slices.Delete(cloneFacts(s.Facts), i, i+1)
	out.Forgotten = slices.Clone(s.Forgotten)
	for _, v := range []string{f.Value, f.Previous} {
		fg, ok := newForgotten(out.ForgetKey, f.Key, v, seq)
		if !ok || slices.ContainsFunc(out.Forgotten, func(o Forgotten) bool { return o.Digest == fg.Digest }) {
			continue
		}
		if len(out.Forgotten) >= DefaultMaxForgotten {
			return s, false, ErrTooManyForgotten
		}
		out.Forgotten = append(out.Forgotten, fg)
	}
	out = SuppressForgotten(out)
	if f.Sources != nil {
		// The sentences of the messages that stated the value go too,
		// whatever form of it they carry.
		drop := map[string]bool{}
		for _, ss := range out.SentenceSources {
			if slices.ContainsFunc(ss.Seqs, func(q int64) bool { return slices.Contains(f.Sources, q) }) {
				drop[ss.Digest] = true
			}
		}
		out.Narrative = dropSentences(out.Narrative, func(sent string) bool { return drop[SentenceDigest(sent)] })
		out.SentenceSources = sentenceSources(out.Narrative, out.SentenceSources)
	}
	return out, true, nil
}

// SuppressForgotten returns s with every fact value and narrative
// sentence that Forgotten lists removed: a fact holding a forgotten value
// (or its words, or its digits) goes, a forgotten superseded value is
// cleared, a sentence containing one is dropped. A fold calls it on each
// new summary, after Restated has let go of the values the user stated
// again.
func SuppressForgotten(s Summary) Summary {
	if len(s.Forgotten) == 0 {
		return s
	}
	fm := newForgetMatcher(s.ForgetKey, s.Forgotten)
	var facts []Fact
	for _, f := range s.Facts {
		if fm.in(f.Value) {
			continue
		}
		if f.Previous != "" && fm.in(f.Previous) {
			f.Previous = ""
		}
		facts = append(facts, f)
	}
	s.Facts = facts
	s.Narrative = dropSentences(s.Narrative, fm.in)
	s.SentenceSources = sentenceSources(s.Narrative, s.SentenceSources)
	return s
}

// Restated returns s.Forgotten without the values stated again after
// their erasure: those that one of texts (messages with sequence numbers
// seqs, texts[i] at seqs[i]) newer than the erasure contains. Such a value
// may be remembered again.
func Restated(s Summary, texts []string, seqs []int64) []Forgotten {
	again := map[Forgotten]bool{}
	fm := newForgetMatcher(s.ForgetKey, s.Forgotten)
	for i, t := range texts {
		if i >= len(seqs) {
			break
		}
		q := seqs[i]
		fm.match(t, func(f Forgotten) bool {
			if q > f.Seq {
				again[f] = true
			}
			return false
		})
	}
	var out []Forgotten
	for _, f := range s.Forgotten {
		if !again[f] {
			out = append(out, f)
		}
	}
	return out
}

// Erase returns s without what was derived only from the erased messages
// (sequence numbers seqs), by provenance, not by matching text:
//
//   - when no erased message is folded into s (all lie past its cursor),
//     s is returned unchanged;
//   - when every fact and narrative sentence of s has exact provenance
//     (Traced: Fact.Sources, SentenceSources — the extractive summarizer
//     records it), a fact or sentence goes when every message stating it
//     is erased, and stays, its provenance narrowed, when a surviving
//     message still states it; superseded values (Fact.Previous), whose
//     origin is not recorded, are cleared;
//   - otherwise (an LLM's summary, whose facts and narrative cite no
//     message) nothing in s can be trusted not to carry an erased
//     message's content, however the summarizer rewrote it: s is emptied
//     — no facts, no narrative — so it is never shown, and the next fold
//     rebuilds it from the surviving messages.
//
// The cursor, the epoch and the Forgotten list (with its key) are kept,
// so later folds never bring the content back. The guarantee holds
// whatever the summarizer wrote; its cost is that an untraced summary
// touched by an erasure is rebuilt by one fold (a summarizer call per
// MaxFoldInputTokens of surviving messages), and that the view shows no
// summary until then.
func Erase(s Summary, seqs []int64) Summary {
	erased := slices.Clone(seqs)
	slices.Sort(erased)
	if len(erased) == 0 || erased[0] > s.UpToSeq {
		return s
	}
	s.Forgotten = slices.Clone(s.Forgotten)
	s.ForgetKey = slices.Clone(s.ForgetKey)
	if !Traced(&s) {
		s.Facts, s.Narrative, s.SentenceSources = nil, "", nil
		return s
	}
	var facts []Fact
	for _, f := range s.Facts {
		left := withoutSeqs(f.Sources, erased)
		if len(left) == 0 {
			continue
		}
		f.Sources, f.Previous = left, ""
		facts = append(facts, f)
	}
	s.Facts = facts
	left := map[string][]int64{}
	for _, ss := range s.SentenceSources {
		if l := withoutSeqs(ss.Seqs, erased); len(l) > 0 {
			left[ss.Digest] = l
		}
	}
	s.Narrative = dropSentences(s.Narrative, func(sent string) bool { return left[SentenceDigest(sent)] == nil })
	var src []SentenceSource
	for _, ss := range sentenceSources(s.Narrative, s.SentenceSources) {
		src = append(src, SentenceSource{Digest: ss.Digest, Seqs: left[ss.Digest]})
	}
	s.SentenceSources = src
	return s
}

// wordJoiners are the characters beside letters and digits that hold an
// address or an identifier together inside a word; wordEdges those of
// them a word does not begin or end with.
const (
	wordJoiners = "@#._-/:+"
	wordEdges   = "._-/:+"
)

// words splits lower-cased text into words: runs of letters, digits and
// wordJoiners, trimmed of wordEdges.
func words(text string) []string {
	fs := strings.FieldsFunc(text, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune(wordJoiners, r))
	})
	out := fs[:0]
	for _, w := range fs {
		if w = strings.Trim(w, wordEdges); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// wordText is the words of text lower-cased, each followed by a space,
// after a leading space — " " + strings.Join(words(strings.ToLower(text)),
// " ") + " " — built in one pass: what a word sequence is searched in
// (" w1 w2 " found in it means the words follow each other in text).
func wordText(text string) string {
	out := make([]byte, 1, len(text)+2)
	out[0] = ' '
	start := -1 // where the current word begins in out, -1 between words
	end := func() {
		w := out[start:]
		i, j := 0, len(w)
		for i < j && isWordEdge(w[i]) {
			i++
		}
		for j > i && isWordEdge(w[j-1]) {
			j--
		}
		out = out[:start+copy(w, w[i:j])]
		if i < j {
			out = append(out, ' ')
		}
		start = -1
	}
	for k := 0; k < len(text); {
		if b := text[k]; b < utf8.RuneSelf {
			k++
			if c := asciiWord[b]; c != 0 {
				if start < 0 {
					start = len(out)
				}
				out = append(out, c)
				continue
			}
		} else {
			c, n := utf8.DecodeRuneInString(text[k:])
			k += n
			c = unicode.ToLower(c)
			if unicode.IsLetter(c) || unicode.IsDigit(c) {
				if start < 0 {
					start = len(out)
				}
				out = utf8.AppendRune(out, c)
				continue
			}
		}
		if start >= 0 {
			end()
		}
	}
	if start >= 0 {
		end()
	}
	if len(out) == 1 {
		return "  "
	}
	return string(out)
}

// asciiWord maps an ASCII byte that belongs in a word (a letter, a digit
// or one of wordJoiners) to itself lower-cased, every other byte to 0.
var asciiWord = func() (t [utf8.RuneSelf]byte) {
	for b := range byte(utf8.RuneSelf) {
		switch {
		case 'A' <= b && b <= 'Z':
			t[b] = b + 'a' - 'A'
		case 'a' <= b && b <= 'z', '0' <= b && b <= '9', strings.IndexByte(wordJoiners, b) >= 0:
			t[b] = b
		}
	}
	return t
}()

// isWordEdge reports whether b is one of wordEdges.
func isWordEdge(b byte) bool { return wordEdgeByte[b] }

// wordEdgeByte holds isWordEdge for every byte.
var wordEdgeByte = func() (t [256]bool) {
	for i := range len(wordEdges) {
		t[wordEdges[i]] = true
	}
	return t
}()
