package summary

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Forgotten records a fact value that was erased from a summary on request
// (memory.Manager.ForgetFact), so that no later fold brings it back from
// the messages that stated it before the erasure. It keeps no trace of the
// value itself: only a SHA-256 digest of its normalised form (trimmed,
// lower-cased) and its length in runes, enough to recognise the value in a
// fact or a sentence, not to recover it.
type Forgotten struct {
	// Key is the key of the erased fact, as it was stored.
	Key string `json:"key"`
	// Digest is the hex SHA-256 of the normalised value.
	Digest string `json:"digest"`
	// Runes is the length of the normalised value in runes.
	Runes int `json:"runes"`
	// Roll is a rolling hash of the normalised value (see rollHash, kept
	// to 53 bits so that every JSON reader holds it exactly), which lets In
	// scan a text in linear time, checking the digest only where it
	// matches.
	Roll uint64 `json:"roll"`
	// Seq is the sequence number of the session's newest message at the
	// erasure: a statement of the value in a later message sets it again.
	Seq int64 `json:"seq"`
}

// NewForgotten returns the record of value, erased under key when the
// session's newest message had sequence number seq.
func NewForgotten(key, value string, seq int64) Forgotten {
	v := normForget(value)
	return Forgotten{Key: key, Digest: digest(v), Runes: utf8.RuneCountInString(v), Roll: rollHash([]rune(v)) & rollMask, Seq: seq}
}

// rollMask keeps the 53 bits of a rolling hash that Forgotten.Roll stores.
const rollMask = 1<<53 - 1

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

// normForget is the form under which forgotten values are compared.
func normForget(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// Is reports whether value is the forgotten value.
func (f Forgotten) Is(value string) bool {
	v := normForget(value)
	return utf8.RuneCountInString(v) == f.Runes && digest(v) == f.Digest
}

// In reports whether text contains the forgotten value (case-insensitively):
// it slides a rolling hash over text, in time linear in its length, and
// compares the digest only where the hash is Roll.
func (f Forgotten) In(text string) bool {
	if f.Runes <= 0 {
		return false
	}
	t := []rune(strings.ToLower(text))
	n := f.Runes
	if len(t) < n {
		return false
	}
	match := func(i int) bool {
		// Values start and end on a non-space rune (they are trimmed).
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
		loc := sentenceBoundary.FindStringIndex(narrative)
		if loc == nil {
			out = append(out, narrative)
			break
		}
		out = append(out, narrative[:loc[1]])
		narrative = narrative[loc[1]:]
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

// ForgetFact returns s without the fact whose key is key (compared as
// NormalizeKey does), pinned or not: its value, and the value it
// superseded, leave the facts and every narrative sentence carrying them,
// and are recorded in Forgotten with seq (the session's newest message)
// so that SuppressForgotten keeps later folds from bringing them back. ok
// is false, and s is returned unchanged, when no fact has that key.
func ForgetFact(s Summary, key string, seq int64) (out Summary, ok bool) {
	norm := NormalizeKey(key)
	i := slices.IndexFunc(s.Facts, func(f Fact) bool { return NormalizeKey(f.Key) == norm })
	if norm == "" || i < 0 {
		return s, false
	}
	f := s.Facts[i]
	out = s
	out.Facts = slices.Delete(slices.Clone(s.Facts), i, i+1)
	out.Forgotten = slices.Clone(s.Forgotten)
	for _, v := range []string{f.Value, f.Previous} {
		if normForget(v) == "" {
			continue
		}
		fg := NewForgotten(f.Key, v, seq)
		if !slices.ContainsFunc(out.Forgotten, func(o Forgotten) bool { return o.Digest == fg.Digest }) {
			out.Forgotten = append(out.Forgotten, fg)
		}
	}
	out = SuppressForgotten(out)
	return out, true
}

// SuppressForgotten returns s with every fact value and narrative
// sentence that Forgotten lists removed: a fact holding a forgotten value
// goes, a forgotten superseded value is cleared, a sentence containing one
// is dropped. A fold calls it on each new summary, after Restated has let
// go of the values the user stated again.
func SuppressForgotten(s Summary) Summary {
	if len(s.Forgotten) == 0 {
		return s
	}
	hit := func(v string) bool {
		return slices.ContainsFunc(s.Forgotten, func(f Forgotten) bool { return f.Is(v) })
	}
	var facts []Fact
	for _, f := range s.Facts {
		if hit(f.Value) {
			continue
		}
		if f.Previous != "" && hit(f.Previous) {
			f.Previous = ""
		}
		facts = append(facts, f)
	}
	s.Facts = facts
	s.Narrative = dropSentences(s.Narrative, func(sent string) bool {
		return slices.ContainsFunc(s.Forgotten, func(f Forgotten) bool { return f.In(sent) })
	})
	return s
}

// Restated returns forgotten without the values stated again after their
// erasure: those that one of texts (messages with sequence numbers seqs,
// texts[i] at seqs[i]) newer than the erasure contains. Such a value may
// be remembered again.
func Restated(forgotten []Forgotten, texts []string, seqs []int64) []Forgotten {
	var out []Forgotten
	for _, f := range forgotten {
		again := false
		for i, t := range texts {
			if i < len(seqs) && seqs[i] > f.Seq && f.In(t) {
				again = true
				break
			}
		}
		if !again {
			out = append(out, f)
		}
	}
	return out
}

// Erase returns s without what was derived from erased messages (their
// contents texts, their sequence numbers seqs): a fact goes when its value
// (or superseded value, which is cleared) appears in one of the texts, when
// its provenance lies wholly within the erased messages (FirstSeq and
// LastSeq both among seqs), or when its value carries a distinctive token
// (a word with a digit, an e-mail address, a URL) of the texts; a
// narrative sentence goes when it carries such a token, the value of a
// removed fact, or a run of four words of the texts. The cursor and the
// Forgotten list are kept.
func Erase(s Summary, texts []string, seqs []int64) Summary {
	lower := make([]string, len(texts))
	tokens := map[string]bool{}
	grams := map[string]bool{}
	for i, t := range texts {
		lower[i] = strings.ToLower(t)
		ws := words(lower[i])
		for _, w := range ws {
			if identifying(w) {
				tokens[w] = true
			}
		}
		for j := 0; j+4 <= len(ws); j++ {
			grams[strings.Join(ws[j:j+4], " ")] = true
		}
	}
	inTexts := func(v string) bool {
		v = normForget(v)
		if v == "" {
			return false
		}
		for _, t := range lower {
			if strings.Contains(t, v) {
				return true
			}
		}
		for _, w := range words(v) {
			if tokens[w] {
				return true
			}
		}
		return false
	}
	var removed []string
	var facts []Fact
	for _, f := range s.Facts {
		fromErased := f.FirstSeq != 0 && slices.Contains(seqs, f.FirstSeq) && slices.Contains(seqs, f.LastSeq)
		if fromErased || inTexts(f.Value) {
			removed = append(removed, normForget(f.Value))
			if f.Previous != "" {
				removed = append(removed, normForget(f.Previous))
			}
			continue
		}
		if f.Previous != "" && inTexts(f.Previous) {
			removed = append(removed, normForget(f.Previous))
			f.Previous = ""
		}
		facts = append(facts, f)
	}
	s.Facts = facts
	s.Forgotten = slices.Clone(s.Forgotten)
	s.Narrative = dropSentences(s.Narrative, func(sent string) bool {
		low := strings.ToLower(sent)
		for _, v := range removed {
			if v != "" && strings.Contains(low, v) {
				return true
			}
		}
		ws := words(low)
		for _, w := range ws {
			if tokens[w] {
				return true
			}
		}
		for j := 0; j+4 <= len(ws); j++ {
			if grams[strings.Join(ws[j:j+4], " ")] {
				return true
			}
		}
		return false
	})
	return s
}

// words splits lower-cased text into words: runs of letters, digits and
// the characters that hold an address or an identifier together.
func words(text string) []string {
	fs := strings.FieldsFunc(text, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("@#._-/:+", r))
	})
	out := fs[:0]
	for _, w := range fs {
		if w = strings.Trim(w, "._-/:+"); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// identifying reports whether a word identifies something on its own: it
// holds a digit (an order number, a phone number, an amount) or an @ (an
// e-mail address), or is a URL.
func identifying(w string) bool {
	if utf8.RuneCountInString(w) < 3 {
		return false
	}
	return strings.ContainsFunc(w, unicode.IsDigit) || strings.Contains(w, "@") || strings.HasPrefix(w, "http")
}
