package summary

import (
	"strings"
	"testing"
)

// FuzzSpaceFolded checks spaceFolded against its definition: s is its
// own white space folded.
func FuzzSpaceFolded(f *testing.F) {
	for _, s := range []string{"", " ", "a", "a b", "a  b", " a", "a ", "a\tb", "a\u00a0b", "가 나", "a\u3000b", "a \u0085"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := spaceFolded(s), strings.Join(strings.Fields(s), " ") == s; got != want {
			t.Fatalf("spaceFolded(%q) = %v, want %v", s, got, want)
		}
	})
}
