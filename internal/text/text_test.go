package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 3, "hel"}, {"hello", 5, "hello"}, {"hello", 9, "hello"}, {"hello", 0, ""}, {"hello", -1, ""},
		{"ßßß", 2, "ßß"}, {"日本語テキスト", 3, "日本語"}, {"", 3, ""},
	} {
		if got := Cut(tc.s, tc.n); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		s, suffix string
		n         int
		want      string
	}{
		{"short", "…", 10, "short"},
		{"exactly10!", "…", 10, "exactly10!"},
		{"one two three four", "…", 9, "one two…"}, // the space before the cut goes
		{"abcdef", "...", 5, "ab..."},
		{"abcdef", "...", 2, "..."},
		{"ßßßßß", "", 3, "ßßß"},
	} {
		if got := Truncate(tc.s, tc.n, tc.suffix); got != tc.want {
			t.Errorf("Truncate(%q, %d, %q) = %q, want %q", tc.s, tc.n, tc.suffix, got, tc.want)
		}
	}
}

func TestPreview(t *testing.T) {
	if got := Preview("", false); got != "Empty conversation" {
		t.Errorf("no user message: %q", got)
	}
	if got := Preview("hi", true); got != "hi" {
		t.Errorf("short: %q", got)
	}
	if got := Preview(strings.Repeat("ß", 50), true); got != strings.Repeat("ß", 50) {
		t.Errorf("50 runes: %q", got)
	}
	if got := Preview(strings.Repeat("ß", 51), true); got != strings.Repeat("ß", 50)+"..." {
		t.Errorf("51 runes: %q", got)
	}
}

func TestTitle(t *testing.T) {
	if got := Title("  a   title \n here ", 60); got != "a title here" {
		t.Errorf("collapse: %q", got)
	}
	long := strings.Repeat("word ", 30)
	got := Title(long, 60)
	if utf8.RuneCountInString(got) > 60 || !strings.HasSuffix(got, "word…") {
		t.Errorf("word boundary: %q", got)
	}
	if got := Title(strings.Repeat("x", 100), 10); got != strings.Repeat("x", 9)+"…" {
		t.Errorf("no boundary: %q", got)
	}
}

func TestStorableAndClean(t *testing.T) {
	for _, tc := range []struct {
		in, clean string
		ok        bool
	}{
		{"plain", "plain", true},
		{"nul\x00byte", "nulbyte", false},
		{"bad\xffutf8", "bad\uFFFDutf8", false},
		{"two\xff\xfebad", "two\uFFFD\uFFFDbad", false},
	} {
		if got := Storable(tc.in); got != tc.ok {
			t.Errorf("Storable(%q) = %v", tc.in, got)
		}
		if got := Clean(tc.in); got != tc.clean || !Storable(got) {
			t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.clean)
		}
	}
}

func FuzzCutTruncate(f *testing.F) {
	for _, s := range []string{"", "hello world", "ßß日本\xff\x00 x"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n %= 1000
		c := Cut(s, n)
		if !strings.HasPrefix(s, c) || (n > 0 && utf8.ValidString(s) && utf8.RuneCountInString(c) != min(n, utf8.RuneCountInString(s))) {
			t.Fatalf("Cut(%q, %d) = %q", s, n, c)
		}
		if tr := Truncate(s, n, "…"); utf8.ValidString(s) && n >= 1 && utf8.RuneCountInString(tr) > n {
			t.Fatalf("Truncate(%q, %d) = %q is longer than %d runes", s, n, tr, n)
		}
		if !Storable(Clean(s)) {
			t.Fatalf("Clean(%q) is not storable", s)
		}
	})
}
