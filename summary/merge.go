package summary

import (
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Default limits of the fact ledger, used when MergeOptions leaves a field
// zero.
const (
	DefaultMaxFacts    = 100
	DefaultMaxValueLen = 500 // runes
	// MaxKeyLen caps fact keys, in runes.
	MaxKeyLen = 100
)

// MergeOptions bounds a fact merge. Zero fields mean the defaults:
// DefaultMaxFacts facts, DefaultMaxValueLen runes per value, time.Now().
type MergeOptions struct {
	// MaxFacts is the most facts the merged ledger keeps.
	MaxFacts int
	// MaxValueLen is the longest value kept, in runes; longer values are
	// truncated and end with "…".
	MaxValueLen int
	// Now stamps facts that are new or whose value changed.
	Now time.Time
}

func (o MergeOptions) withDefaults() MergeOptions {
	if o.MaxFacts <= 0 {
		o.MaxFacts = DefaultMaxFacts
	}
	if o.MaxValueLen <= 0 {
		o.MaxValueLen = DefaultMaxValueLen
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	return o
}

// NormalizeKey returns the form under which fact keys are matched: trimmed,
// lower-cased, with every run of white space, hyphens and underscores folded
// to a single underscore and none at either end. "Order ID", "order-id" and
// "order_id" all normalise to "order_id".
func NormalizeKey(key string) string {
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

// MergeFacts folds the facts a summarizer returned (incoming) into the
// ledger (existing) and returns the new ledger; neither input is modified.
// The result is deterministic for given inputs and opt.Now:
//
//   - keys match by NormalizeKey; keys are trimmed and capped at MaxKeyLen
//     runes, values are trimmed and capped at opt.MaxValueLen runes (ending
//     with "…"); facts with an empty key are dropped;
//   - an incoming fact whose key is known replaces that fact's value and
//     category; the fact keeps its position and its spelling of the key, and
//     its ExtractedAt becomes opt.Now only when the value changed;
//   - existing facts that incoming leaves out are kept unchanged;
//   - an incoming fact with an empty value removes its key from the ledger;
//   - duplicate keys collapse, in existing and in incoming alike: the first
//     occurrence fixes the position, the last one the value;
//   - new keys are appended in incoming order with ExtractedAt = opt.Now;
//   - unknown categories become General;
//   - when more than opt.MaxFacts facts remain, the oldest are dropped:
//     earliest ExtractedAt first (a zero time is the oldest), ties broken by
//     position, earliest first. The survivors keep their order.
func MergeFacts(existing, incoming []Fact, opt MergeOptions) []Fact {
	opt = opt.withDefaults()
	var ledger []Fact
	index := map[string]int{} // normalised key -> position in ledger
	removed := map[int]bool{}

	put := func(f Fact, fromIncoming bool) {
		f.Key = truncateRunes(strings.TrimSpace(f.Key), MaxKeyLen, "")
		norm := NormalizeKey(f.Key)
		if norm == "" {
			return
		}
		f.Value = truncateRunes(strings.TrimSpace(f.Value), opt.MaxValueLen, "…")
		f.Category = ParseCategory(string(f.Category))
		i, known := index[norm]
		switch {
		case f.Value == "":
			if known {
				removed[i] = true
			}
		case known:
			old := ledger[i]
			f.Key = old.Key
			if removed[i] || old.Value != f.Value {
				if fromIncoming {
					f.ExtractedAt = opt.Now
				}
			} else {
				f.ExtractedAt = old.ExtractedAt
			}
			ledger[i] = f
			delete(removed, i)
		default:
			if fromIncoming {
				f.ExtractedAt = opt.Now
			}
			index[norm] = len(ledger)
			ledger = append(ledger, f)
		}
	}
	for _, f := range existing {
		put(f, false)
	}
	for _, f := range incoming {
		put(f, true)
	}

	var kept []Fact
	for i, f := range ledger {
		if !removed[i] {
			kept = append(kept, f)
		}
	}
	return capFacts(kept, opt.MaxFacts)
}

// capFacts drops the oldest facts (earliest ExtractedAt, then earliest
// position) until at most max remain, keeping the survivors' order.
func capFacts(facts []Fact, max int) []Fact {
	if len(facts) <= max {
		return facts
	}
	order := make([]int, len(facts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return facts[order[a]].ExtractedAt.Before(facts[order[b]].ExtractedAt)
	})
	drop := map[int]bool{}
	for _, i := range order[:len(facts)-max] {
		drop[i] = true
	}
	out := make([]Fact, 0, max)
	for i, f := range facts {
		if !drop[i] {
			out = append(out, f)
		}
	}
	return out
}

// truncateRunes cuts s to at most n runes at a rune boundary; when it cuts,
// the result ends with suffix (counted in n).
func truncateRunes(s string, n int, suffix string) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	keep := n - utf8.RuneCountInString(suffix)
	if keep < 0 {
		keep = 0
	}
	i := 0
	for pos := range s {
		if i == keep {
			return strings.TrimRightFunc(s[:pos], unicode.IsSpace) + suffix
		}
		i++
	}
	return s + suffix
}
