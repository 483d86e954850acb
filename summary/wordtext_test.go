package summary

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// wordTextSlow is what wordText must equal, as the trace built it before.
func wordTextSlow(text string) string {
	return " " + strings.Join(words(strings.ToLower(text)), " ") + " "
}

// TestWordTextMatchesWords compares wordText with the words it stands for
// on random text drawn from letters of several scripts (with case and
// with length-changing lower-casing), digits, the characters words keeps
// inside or trims from a word, spaces and punctuation, and invalid UTF-8.
func TestWordTextMatchesWords(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 2))
	pieces := []string{"a", "Z", "Hello", "ÉCOLE", "İ", "ß", "Σ", "ς", "Привет", "日本", "٣", "7", "@", "#", ".", "_", "-", "/", ":", "+",
		" ", "  ", "\t", "\n", ",", "!", "…", "’", "\xff", "\xe2\x82", "\u00a0", "e.g.", "--", "a/b", "x@y.com", "+1-555", "\u0301", "🙂"}
	for i := range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		if got, want := wordText(s), wordTextSlow(s); got != want {
			t.Fatalf("case %d: wordText(%q) = %q, want %q", i, s, got, want)
		}
	}
	for _, s := range []string{"", " ", "...", "a", "Hello, World!", "user@example.com.", "-x-"} {
		if got, want := wordText(s), wordTextSlow(s); got != want {
			t.Fatalf("wordText(%q) = %q, want %q", s, got, want)
		}
	}
}

// FuzzWordText checks wordText against words on any input.
func FuzzWordText(f *testing.F) {
	for _, s := range []string{"", "Hello, World!", "İstanbul ΣΑΣ", "a.b-c_", "\xff\xfeA"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := wordText(s), wordTextSlow(s); got != want {
			t.Fatalf("wordText(%q) = %q, want %q", s, got, want)
		}
	})
}

// containsWords answers as strings.Contains does, on word texts and word
// runs drawn from a small vocabulary (so that words recur as prefixes,
// suffixes and parts of other words, and runs recur at several places).
func TestContainsWordsMatchesContains(t *testing.T) {
	vocab := []string{"a", "an", "ana", "banana", "nan", "1", "11", "x.y", "안녕", "녕", "の", "です"}
	rng := rand.New(rand.NewPCG(5, 8))
	for range 100_000 {
		var ws []string
		for range rng.IntN(10) {
			ws = append(ws, vocab[rng.IntN(len(vocab))])
		}
		text := wordText(strings.Join(ws, " "))
		var run []string
		if n := len(ws); n > 0 && rng.IntN(2) == 0 {
			i := rng.IntN(n)
			run = ws[i : i+1+rng.IntN(n-i)]
		} else {
			for range 1 + rng.IntN(3) {
				run = append(run, vocab[rng.IntN(len(vocab))])
			}
		}
		needle := " " + strings.Join(run, " ") + " "
		if got, want := containsWords(text, needle), strings.Contains(text, needle); got != want {
			t.Fatalf("containsWords(%q, %q) = %v, want %v", text, needle, got, want)
		}
	}
}
