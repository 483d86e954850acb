// Package factkey holds the string forms of fact keys that package summary
// and its extractive summarizer share: the normalised form keys are
// matched under (summary.NormalizeKey) and the parts of a key that say
// which record it is about (a numeric suffix, an embedded id).
package factkey

import (
	"strconv"
	"strings"
	"unicode"
)

// Normalize returns the form under which fact keys are matched: trimmed,
// lower-cased, with every run of white space, hyphens and underscores folded
// to a single underscore and none at either end. "Order ID", "order-id" and
// "order_id" all normalise to "order_id".
func Normalize(key string) string {
	var b strings.Builder
	pendingSep := false
	for _, r := range strings.ToLower(key) {
		if unicode.IsSpace(r) || r == '-' || r == '_' {
			pendingSep = b.Len() > 0
			continue
		}
		if pendingSep {
			b.WriteByte('_')
			pendingSep = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// StripEmbeddedIDs drops the parts of a normalised key that hold three
// digits or more ("credit_card_4421486_id" → "credit_card_id"), unless
// nothing would be left.
func StripEmbeddedIDs(norm string) string {
	if strings.IndexFunc(norm, func(r rune) bool { return r >= '0' && r <= '9' }) < 0 {
		return norm // the common case: no digits, no work
	}
	parts := strings.Split(norm, "_")
	kept := parts[:0:0]
	for _, p := range parts {
		digits := 0
		for _, r := range p {
			if r >= '0' && r <= '9' {
				digits++
			}
		}
		if digits < 3 {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return norm
	}
	return strings.Join(kept, "_")
}

// StripNumber drops a trailing "_<digits>" ("price_26" → "price").
func StripNumber(norm string) string {
	i := strings.LastIndexByte(norm, '_')
	if i <= 0 || i == len(norm)-1 {
		return norm
	}
	for _, r := range norm[i+1:] {
		if r < '0' || r > '9' {
			return norm
		}
	}
	return norm[:i]
}

// Numbered spells the n-th key of a multi-valued family under base: base
// itself for the first, then base_2, base_3, … (StripNumber undoes it).
func Numbered(base string, n int) string {
	if n == 1 {
		return base
	}
	return base + "_" + strconv.Itoa(n)
}
