package summary

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// sentenceBoundaryRE is the expression sentenceBoundary stands for.
var sentenceBoundaryRE = regexp.MustCompile(`[.!?…。！？]+["'”’)\]]*(\s+|$)`)

// sentenceBoundary finds what its expression finds, at the same span, on
// random text dense in terminals, closers and white space of several
// kinds (vertical tab, which \s leaves out, and non-ASCII spaces
// included), in several scripts and with invalid UTF-8.
func TestSentenceBoundaryMatchesItsExpression(t *testing.T) {
	pieces := []string{".", "!", "?", "…", "。", "！", "？", "\"", "'", "”", "’", ")", "]", "(", "[", "“",
		" ", "  ", "\t", "\n", "\r", "\f", "\v", "\u00a0", "\u3000", "a", "Zz", "안녕", "です", "1.5", "e.g", "\xff", "\xe2\x80"}
	rng := rand.New(rand.NewPCG(3, 11))
	for range 200_000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		want := sentenceBoundaryRE.FindStringIndex(s)
		lo, hi, ok := sentenceBoundary(s)
		if ok != (want != nil) || ok && (lo != want[0] || hi != want[1]) {
			t.Fatalf("%q: sentenceBoundary = %d, %d, %v; the expression finds %v", s, lo, hi, ok, want)
		}
	}
}

// FuzzSentenceBoundary compares sentenceBoundary with its expression.
func FuzzSentenceBoundary(f *testing.F) {
	for _, s := range []string{"Hi. There", "Done!” Next", "Wait…", "終わり。次", "x.)y. ", "a.\vb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := sentenceBoundaryRE.FindStringIndex(s)
		lo, hi, ok := sentenceBoundary(s)
		if ok != (want != nil) || ok && (lo != want[0] || hi != want[1]) {
			t.Fatalf("%q: sentenceBoundary = %d, %d, %v; the expression finds %v", s, lo, hi, ok, want)
		}
	})
}
