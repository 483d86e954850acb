// Package text holds Strata's small text helpers, so that every package
// cuts, cleans, previews and classifies text the same way: rune-safe cuts,
// a session listing's preview, titles, the check and repair of text a
// PostgreSQL TEXT column can store (valid UTF-8 without NUL bytes), and
// the character classes (Class, Tally) that token estimates are priced
// and calibrated by.
package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Cut returns the first n runes of s: all of s when it is shorter, "" when
// n <= 0. It never splits a rune.
func Cut(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// Truncate cuts s to at most n runes; when it cuts, trailing white space
// is dropped and the result ends with suffix, counted in n (so a result
// may be shorter than n).
func Truncate(s string, n int, suffix string) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	keep := max(n-utf8.RuneCountInString(suffix), 0)
	return strings.TrimRightFunc(Cut(s, keep), unicode.IsSpace) + suffix
}

// previewRunes is how many runes of a session's first user message its
// listing preview keeps.
const previewRunes = 50

// Preview is a session listing's preview, as arc-reactor shows it: the
// first 50 runes of the session's first user message, followed by "..."
// when the message is longer; "Empty conversation" when the session has
// no user message (ok false).
func Preview(firstUserMessage string, ok bool) string {
	if !ok {
		return "Empty conversation"
	}
	if p := Cut(firstUserMessage, previewRunes); len(p) < len(firstUserMessage) {
		return p + "..."
	}
	return firstUserMessage
}

// Collapse replaces every run of white space in s by one space and trims
// it.
func Collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// Title makes a title of t: white space collapsed, and when it has more
// than n runes, cut to n runes ending with "…" — at the last word boundary
// when that keeps more than half of n.
func Title(t string, n int) string {
	t = Collapse(t)
	if utf8.RuneCountInString(t) <= n {
		return t
	}
	cut := Cut(t, n-1)
	if i := strings.LastIndexByte(cut, ' '); i > n/2 {
		return strings.TrimRight(cut[:i], " ,;:-") + "…"
	}
	return strings.TrimRightFunc(cut, unicode.IsSpace) + "…"
}

// Storable reports whether s is valid UTF-8 without NUL bytes: text a
// PostgreSQL TEXT column stores as is.
func Storable(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// ValidUTF8 replaces each byte of s that is not part of valid UTF-8 with
// U+FFFD, as encoding/json does to the strings it decodes and encodes.
func ValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Clean makes s Storable: invalid UTF-8 replaced as ValidUTF8 does, NUL
// bytes removed.
func Clean(s string) string {
	if Storable(s) {
		return s
	}
	return strings.ReplaceAll(ValidUTF8(s), "\x00", "")
}
