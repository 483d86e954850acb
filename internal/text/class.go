package text

import "unicode/utf8"

// Class is a character class: the unit in which tokenizers differ from
// one another and from an estimate. The script-aware estimator
// (trimmer.EstimateScript) prices each class at a fixed rate, and the
// budget's calibration learns a rate per class from what providers count.
type Class uint8

// The classes. ASCII is split four ways (letters, digits, space,
// punctuation and symbols with the other controls); CJK four ways
// (Hangul, kana, Han, CJK punctuation and full-width forms).
const (
	ClassLetter   Class = iota // ASCII letters A–Z, a–z
	ClassDigit                 // ASCII digits 0–9
	ClassSpace                 // ASCII space
	ClassBreak                 // ASCII tab, line feed, carriage return, vertical tab, form feed
	ClassPunct                 // every other ASCII character: punctuation, symbols, controls
	ClassHangul                // Hangul syllables and all Jamo blocks
	ClassKana                  // Hiragana, Katakana
	ClassHan                   // CJK unified ideographs (extensions A, B and later), compatibility ideographs
	ClassCJKPunct              // CJK symbols and punctuation, half-width and full-width forms
	ClassEmoji                 // pictographs, emoticons, miscellaneous symbols, dingbats, variation selectors
	ClassOther                 // everything else: Latin with diacritics, Cyrillic, Greek, Arabic, …, invalid UTF-8
	NumClasses
)

// String names the class.
func (c Class) String() string {
	return [...]string{"letter", "digit", "space", "break", "punct", "hangul", "kana", "han", "cjk-punct", "emoji", "other", "?"}[min(c, NumClasses)]
}

// ASCII reports whether c is one of the ASCII classes.
func (c Class) ASCII() bool { return c <= ClassPunct }

// CJK reports whether c is one of the CJK classes.
func (c Class) CJK() bool { return c >= ClassHangul && c <= ClassCJKPunct }

// asciiClass is the class of every ASCII code point.
var asciiClass = func() (t [128]Class) {
	for r := range t {
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			t[r] = ClassLetter
		case r >= '0' && r <= '9':
			t[r] = ClassDigit
		case r == ' ':
			t[r] = ClassSpace
		case r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r':
			t[r] = ClassBreak
		default:
			t[r] = ClassPunct
		}
	}
	return t
}()

// classRange is an inclusive range of code points of one class.
type classRange struct {
	lo, hi rune
	class  Class
}

// nonASCII lists the ranges of the classes above U+007F, ascending; a
// code point in none of them is ClassOther.
var nonASCII = []classRange{
	{0x1100, 0x11FF, ClassHangul},   // Hangul Jamo
	{0x2600, 0x27BF, ClassEmoji},    // miscellaneous symbols, dingbats
	{0x3000, 0x303F, ClassCJKPunct}, // CJK symbols and punctuation
	{0x3040, 0x309F, ClassKana},     // Hiragana
	{0x30A0, 0x30FF, ClassKana},     // Katakana
	{0x3130, 0x318F, ClassHangul},   // Hangul compatibility Jamo
	{0x3400, 0x4DBF, ClassHan},      // CJK unified ideographs extension A
	{0x4E00, 0x9FFF, ClassHan},      // CJK unified ideographs
	{0xA960, 0xA97F, ClassHangul},   // Hangul Jamo extended-A
	{0xAC00, 0xD7AF, ClassHangul},   // Hangul syllables
	{0xD7B0, 0xD7FF, ClassHangul},   // Hangul Jamo extended-B
	{0xF900, 0xFAFF, ClassHan},      // CJK compatibility ideographs
	{0xFE00, 0xFE0F, ClassEmoji},    // variation selectors
	{0xFF00, 0xFFEF, ClassCJKPunct}, // half-width and full-width forms
	{0x1F300, 0x1FAFF, ClassEmoji},  // pictographs, emoticons, transport, supplemental symbols
	{0x20000, 0x2FA1F, ClassHan},    // extensions B and later, compatibility supplement
}

// ClassOf returns the class of r (ClassOther for utf8.RuneError and
// anything not valid).
func ClassOf(r rune) Class {
	if r >= 0 && r < 0x80 {
		return asciiClass[r]
	}
	for _, x := range nonASCII {
		if r < x.lo {
			break
		}
		if r <= x.hi {
			return x.class
		}
	}
	return ClassOther
}

// Tally counts the code points of texts by class (Chars), and their runs
// (Runs): maximal sequences of code points of one class within a text,
// such as words, numbers and runs of punctuation, the pieces tokenizers
// cut texts into before they encode them.
type Tally struct {
	Chars, Runs [NumClasses]int
}

// Add counts the code points and runs of s (each byte of invalid UTF-8 as
// one ClassOther code point, as ranging over a string decodes it). A run
// never spans two texts.
func (t *Tally) Add(s string) {
	prev := NumClasses
	for i := 0; i < len(s); {
		var c Class
		if b := s[i]; b < utf8.RuneSelf {
			c = asciiClass[b]
			i++
		} else {
			r, n := utf8.DecodeRuneInString(s[i:])
			c = ClassOf(r)
			i += n
		}
		t.Chars[c]++
		if c != prev {
			t.Runs[c]++
			prev = c
		}
	}
}
