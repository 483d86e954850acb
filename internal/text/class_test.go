package text

import (
	"testing"
	"unicode/utf8"
)

func TestClassOf(t *testing.T) {
	for r, want := range map[rune]Class{
		'a': ClassLetter, 'Z': ClassLetter, '7': ClassDigit, ' ': ClassSpace, '\n': ClassBreak, '\t': ClassBreak,
		'{': ClassPunct, 0: ClassPunct, 0x7F: ClassPunct, '한': ClassHangul, 'ᄀ': ClassHangul, 'ㄱ': ClassHangul,
		'の': ClassKana, 'カ': ClassKana, '日': ClassHan, '𠀀': ClassHan, '。': ClassCJKPunct, '？': ClassCJKPunct,
		'😀': ClassEmoji, '☕': ClassEmoji, 0xFE0F: ClassEmoji, 'ü': ClassOther, 'Ж': ClassOther, utf8.RuneError: ClassOther, -1: ClassOther,
	} {
		if got := ClassOf(r); got != want {
			t.Errorf("ClassOf(%U) = %s, want %s", r, got, want)
		}
	}
}

func TestTally(t *testing.T) {
	var tl Tally
	tl.Add(`Hi, 김민지 님! {"id":42}`)
	tl.Add("ab")
	want := Tally{}
	want.Chars[ClassLetter], want.Runs[ClassLetter] = 6, 3 // Hi, id, ab (a new text starts a new run)
	want.Chars[ClassDigit], want.Runs[ClassDigit] = 2, 1
	want.Chars[ClassSpace], want.Runs[ClassSpace] = 3, 3
	want.Chars[ClassPunct], want.Runs[ClassPunct] = 7, 5 // `,` `!` `{"` `":` `}`
	want.Chars[ClassHangul], want.Runs[ClassHangul] = 4, 2
	if tl != want {
		t.Fatalf("got %+v\nwant %+v", tl, want)
	}
}

// FuzzTally: every code point is counted once, in the class ClassOf
// gives it; runs never outnumber characters, and a text that is not empty
// has at least one.
func FuzzTally(f *testing.F) {
	for _, s := range []string{"", "hello world", "주문 129,990원", "ご注文は。", "\xff\xfe", "a\x00b", "😀☕️"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var tl, byRune Tally
		tl.Add(s)
		n, runs := 0, 0
		for c := range NumClasses {
			n += tl.Chars[c]
			runs += tl.Runs[c]
			if tl.Runs[c] > tl.Chars[c] {
				t.Fatalf("%q: %d runs of %d characters of %s", s, tl.Runs[c], tl.Chars[c], c)
			}
		}
		if n != utf8.RuneCountInString(s) || (s != "") != (runs > 0) {
			t.Fatalf("%q: %d characters in %d runs, %d runes", s, n, runs, utf8.RuneCountInString(s))
		}
		for _, r := range s {
			byRune.Chars[ClassOf(r)]++
		}
		if byRune.Chars != tl.Chars {
			t.Fatalf("%q: %v, rune by rune %v", s, tl.Chars, byRune.Chars)
		}
	})
}
