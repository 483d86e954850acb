package summary

import (
	"path"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/strata-go/strata/internal/text"
)

// MergeFacts folds the facts a summarizer returned (incoming) into the
// ledger (existing) and returns the new ledger; neither input is modified.
// The result is deterministic for given inputs and options. The rules (the
// package documentation explains why):
//
//   - keys are trimmed and capped at MaxKeyLen runes, values trimmed and
//     capped at opt.MaxValueLen runes (ending with "…"); facts with an empty
//     key are dropped; unknown categories become General;
//   - an incoming fact whose value is empty or a placeholder ("unknown",
//     "not mentioned", "N/A", "none", … see IsPlaceholder) changes nothing;
//     a fact is removed only by an incoming fact with Remove set, and never
//     when it is pinned or an identity fact;
//   - an incoming fact lands on an existing fact, in this order: the same
//     key (by NormalizeKey); the fact holding the value it Replaces; the
//     current fact of its slot (a single-valued family: an update under a
//     new key of the same family, such as phone_number for phone); a fact
//     of the same family (or, for a key outside the vocabulary, any fact)
//     holding the same value. Otherwise it is appended as a new fact;
//   - landing on a fact with the same value is a mention: LastSeq becomes
//     the incoming sequence number and Mentions grows, when that is newer;
//   - landing with a different value supersedes the current value, which
//     becomes Previous — unless the incoming value is older than the
//     current one (its sequence number is below the current LastSeq), in
//     which case it only becomes Previous, or the current value is a
//     contact or identity value the user stated (Fact.Stated) and the
//     incoming one is not stated and does not name it in Replaces, in
//     which case nothing changes. A key with a past prefix ("old_phone")
//     only sets its slot's Previous; Stated stays while the value does;
//   - the landed-on fact keeps its position and its spelling of the key;
//     ExtractedAt becomes opt.Now when the value changes; Pinned is sticky;
//   - duplicate keys and several values of one slot in existing collapse in
//     order (the later value supersedes), so ledgers written before slots
//     existed heal on their next merge;
//   - then the caps, in a deterministic drop order with a hard stop (see
//     evict): at most opt.MaxFacts facts and the facts block within
//     opt.TokenBudget tokens; facts beyond opt.MaxPerFamily in one
//     multi-valued family are the first to go, and facts the user stated
//     the last. Pinned facts (Fact.Pinned or opt.PinnedKeys) and identity
//     facts are never dropped.
func MergeFacts(existing, incoming []Fact, opt MergeOptions) []Fact {
	opt = opt.withDefaults()
	l := &ledger{opt: opt, index: map[string]int{}, slots: map[string]int{}, values: map[string][]*entry{}}
	var past []Fact
	for _, f := range existing {
		if !l.load(f) {
			past = append(past, f)
		}
	}
	l.loadPast(past)
	for _, f := range incoming {
		l.apply(f)
	}
	return l.evict()
}

// entry is one fact of a ledger under construction.
type entry struct {
	f       Fact
	norm    string
	fam     Family
	hist    []string // superseded values, oldest first; the newest becomes Fact.Previous
	pos     int      // position in ledger.entries
	vkey    string   // valueKey(f.Value)
	removed bool
}

// maxHistory bounds the superseded values a merge tracks per fact; the
// ledger stores the newest one (Fact.Previous).
const maxHistory = 3

type ledger struct {
	opt     MergeOptions
	entries []*entry
	index   map[string]int // normalised key -> entry
	slots   map[string]int // slot family name -> entry holding it
	// values maps a valueKey to the entries that held it at some point;
	// an entry still holds it when its vkey matches.
	values map[string][]*entry
}

// valueKey is the form under which sameValue compares values.
func valueKey(v string) string {
	if c := canonValue(v); c != "" {
		return c
	}
	return "\x00" + strings.ToLower(strings.TrimSpace(v))
}

// track records e's current value in the value index.
func (l *ledger) track(e *entry) {
	e.vkey = valueKey(e.f.Value)
	l.values[e.vkey] = append(l.values[e.vkey], e)
}

// holding returns the live entries whose value is the same as v, in
// ledger order.
func (l *ledger) holding(v string) []*entry {
	k := valueKey(v)
	var out []*entry
	for _, e := range l.values[k] {
		if e.vkey == k && !e.removed && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pos < out[j].pos })
	return out
}

// clean trims and caps a fact's key and value and fixes its category.
func (l *ledger) clean(f Fact) (Fact, string) {
	f.Key = text.Truncate(strings.TrimSpace(f.Key), MaxKeyLen, "")
	f.Value = text.Truncate(strings.TrimSpace(f.Value), l.opt.MaxValueLen, "…")
	f.Category = ParseCategory(string(f.Category))
	f.Sources = slices.Clone(f.Sources)
	return f, NormalizeKey(f.Key)
}

// load adds a fact of the existing ledger: it is kept as it is, except that
// duplicate keys and several values of one slot collapse in order. A fact
// whose key names a superseded value of a slot ("old_phone") is left for
// loadPast: load returns false.
func (l *ledger) load(f Fact) bool {
	f, norm := l.clean(f)
	if norm == "" || f.Value == "" {
		return true
	}
	if fam, past := familyOf(norm, f.Category); past && fam.Slot {
		if _, known := l.index[norm]; !known {
			return false
		}
	}
	f.Remove, f.Replaces = false, ""
	var hist []string
	if f.Previous != "" {
		hist = l.capHistory([]string{f.Previous}, f.Value)
	}
	fam, _ := familyOf(norm, f.Category)
	target := -1
	if i, ok := l.index[norm]; ok {
		target = i
	} else if i, ok := l.slots[fam.Name]; ok && fam.Slot {
		target = i
	}
	if target < 0 {
		l.add(f, norm, fam).hist = hist
		return true
	}
	e := l.entries[target]
	e.f.Pinned = e.f.Pinned || f.Pinned
	if sameValue(e.f.Value, f.Value) {
		e.f.FirstSeq = minSeq(e.f.FirstSeq, f.FirstSeq)
		e.f.LastSeq = max(e.f.LastSeq, f.LastSeq)
		e.f.Mentions += f.Mentions
		e.f.Stated = e.f.Stated || f.Stated
		e.f.Sources = unionSources(e.f.Sources, f.Sources)
		return true
	}
	if l.guarded(e, f) {
		return true // the user's own words win over a later value from elsewhere
	}
	all := append(slices.Clone(e.hist), hist...)
	all = append(all, e.f.Value)
	key, pinned := e.f.Key, e.f.Pinned
	e.f = f
	e.f.Key, e.f.Pinned = key, pinned
	e.hist = l.capHistory(all, f.Value)
	l.track(e)
	return true
}

// loadPast files stored facts with a past key ("old_phone") as the older
// values of their slot; without a slot they stay facts of their own.
func (l *ledger) loadPast(facts []Fact) {
	for _, f := range facts {
		f, norm := l.clean(f)
		fam, _ := familyOf(norm, f.Category)
		if i, ok := l.slots[fam.Name]; ok {
			e := l.entries[i]
			e.hist = l.capHistory(append([]string{f.Value}, e.hist...), e.f.Value)
			continue
		}
		if _, ok := l.index[norm]; !ok {
			l.add(f, norm, Family{Name: norm, Category: f.Category})
		}
	}
}

// add appends a new entry.
func (l *ledger) add(f Fact, norm string, fam Family) *entry {
	e := &entry{f: f, norm: norm, fam: fam, pos: len(l.entries)}
	l.track(e)
	l.index[norm] = len(l.entries)
	if fam.Slot {
		if _, ok := l.slots[fam.Name]; !ok {
			l.slots[fam.Name] = len(l.entries)
		}
	}
	l.entries = append(l.entries, e)
	return e
}

// apply folds one incoming fact into the ledger.
func (l *ledger) apply(f Fact) {
	f, norm := l.clean(f)
	if norm == "" {
		return
	}
	seq := l.opt.Seq
	if f.LastSeq > 0 && (seq == 0 || f.LastSeq <= seq) {
		seq = f.LastSeq
	}
	first := seq
	if f.FirstSeq > 0 && f.FirstSeq <= seq {
		first = f.FirstSeq
	}
	fam, past := familyOf(norm, f.Category)

	if f.Remove {
		if e := l.find(norm, fam); e != nil && !l.protected(e) {
			e.removed = true
		}
		return
	}
	if IsPlaceholder(f.Value) {
		return
	}
	if past {
		if e := l.find(norm, fam); e != nil && fam.Slot && !e.removed && !sameValue(e.f.Value, f.Value) {
			e.hist = l.capHistory(append(e.hist, f.Value), e.f.Value)
		}
		return
	}

	e := l.land(norm, fam, f)
	if e == nil {
		f.Remove, f.Replaces, f.Previous = false, "", ""
		f.FirstSeq, f.LastSeq, f.Mentions = first, seq, 1
		f.ExtractedAt = l.opt.Now
		l.add(f, norm, fam)
		return
	}
	e.f.Pinned = e.f.Pinned || f.Pinned
	switch {
	case e.removed:
		// Removed earlier in this merge and said again: back, as new.
		e.removed = false
		l.set(e, f, first, seq)
	case sameValue(e.f.Value, f.Value):
		e.f.Stated = e.f.Stated || f.Stated
		e.f.Sources = unionSources(e.f.Sources, f.Sources)
		if seq > e.f.LastSeq || seq == 0 {
			if seq > e.f.LastSeq {
				e.f.LastSeq = seq
			}
			e.f.Mentions++
		}
		if e.f.FirstSeq == 0 || (first > 0 && first < e.f.FirstSeq) {
			e.f.FirstSeq = first
		}
		if f.Category != General || e.f.Category == General {
			e.f.Category = f.Category
		}
	case l.guarded(e, f):
		// A contact or identity value the user stated is not replaced by
		// one from elsewhere (another person's e-mail in a tool result).
	case seq == 0 || seq >= e.f.LastSeq:
		e.hist = append(e.hist, e.f.Value)
		l.set(e, f, first, seq)
	default:
		// An older value than the current one: history only.
		e.hist = l.capHistory(append(e.hist, f.Value), e.f.Value)
	}
}

// set gives e the value of f, seen from first to seq.
func (l *ledger) set(e *entry, f Fact, first, seq int64) {
	e.f.Value = f.Value
	if f.Category != General || e.f.Category == General {
		e.f.Category = f.Category
	}
	e.f.ExtractedAt = l.opt.Now
	e.f.FirstSeq, e.f.LastSeq, e.f.Mentions = first, seq, 1
	e.f.Stated = f.Stated
	e.f.Sources = f.Sources
	e.hist = l.capHistory(e.hist, f.Value)
	l.track(e)
}

// find returns the live or removed entry an instruction about norm refers
// to: the same key, else the slot of its family.
func (l *ledger) find(norm string, fam Family) *entry {
	if i, ok := l.index[norm]; ok {
		return l.entries[i]
	}
	if i, ok := l.slots[fam.Name]; ok && fam.Slot {
		return l.entries[i]
	}
	return nil
}

// land returns the entry an incoming fact updates, nil for a new fact.
func (l *ledger) land(norm string, fam Family, f Fact) *entry {
	if i, ok := l.index[norm]; ok {
		return l.entries[i]
	}
	if r := strings.TrimSpace(f.Replaces); r != "" && !IsPlaceholder(r) {
		var other *entry
		for _, e := range l.holding(r) {
			if e.fam.Name == fam.Name {
				return e
			}
			if other == nil {
				other = e
			}
		}
		if other != nil {
			return other
		}
	}
	if fam.Slot {
		if i, ok := l.slots[fam.Name]; ok {
			return l.entries[i]
		}
		return nil
	}
	for _, e := range l.holding(f.Value) {
		if e.fam.Name == fam.Name || (!fam.Known && !e.fam.Slot && distinctive(f.Value)) {
			return e
		}
	}
	return nil
}

// guarded reports whether the incoming fact f, whose value differs from
// e's, must leave e alone: e is a contact or identity value the user
// stated, f was not stated by the user, and f does not name e's value as
// the one it replaces. Who the user is and how to reach them is what they
// say; an assistant's or a tool's different value (often someone else's:
// another customer's profile in a tool result) does not replace it.
func (l *ledger) guarded(e *entry, f Fact) bool {
	if !e.f.Stated || f.Stated || e.fam.Importance < ImportanceContact {
		return false
	}
	r := strings.TrimSpace(f.Replaces)
	return r == "" || IsPlaceholder(r) || !sameValue(r, e.f.Value)
}

// capHistory drops cur and duplicates from h (keeping the latest
// occurrence) and keeps its newest maxHistory values.
func (l *ledger) capHistory(h []string, cur string) []string {
	var out []string
	for i, v := range h {
		v = strings.TrimSpace(v)
		if v == "" || sameValue(v, cur) || IsPlaceholder(v) {
			continue
		}
		later := false
		for _, w := range h[i+1:] {
			if sameValue(v, w) {
				later = true
				break
			}
		}
		if !later {
			out = append(out, text.Truncate(v, l.opt.MaxValueLen, "…"))
		}
	}
	if len(out) > maxHistory {
		out = out[len(out)-maxHistory:]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// protected reports whether e may never be evicted or removed.
func (l *ledger) protected(e *entry) bool {
	if e.f.Pinned || e.fam.Importance == ImportanceIdentity {
		return true
	}
	for _, p := range l.opt.PinnedKeys {
		if ok, err := path.Match(strings.TrimSpace(p), e.norm); err == nil && ok {
			return true
		}
	}
	return false
}

// evict applies the caps and returns the surviving facts in ledger order.
//
// The drop order is deterministic: first the members of a multi-valued
// family beyond its MaxPerFamily cap; then every fact that is not a
// statement of the user's (Fact.Stated on a family the vocabulary or a key
// ending classifies, not an incidental one) before any that is, since what
// the user says about themselves outranks what the assistant, tools and
// other people say; then lower importance first; within a tier, a
// family's anchor (the member first seen, which is usually what the
// conversation is about) after the other members; then the least recently
// seen (LastSeq), the least mentioned, the earliest in the ledger. Facts
// are dropped in that order while the ledger holds more than MaxFacts
// facts, then while the facts block is over its token budget.
// Protected facts (pinned, identity) are never dropped: the hard stop is
// when only they remain, so the loops always end.
func (l *ledger) evict() []Fact {
	var live []*entry
	for _, e := range l.entries {
		if !e.removed {
			live = append(live, e)
		}
	}
	pos := map[*entry]int{}
	anchor := map[string]*entry{}
	for i, e := range live {
		pos[e] = i
		a := anchor[e.fam.Name]
		if a == nil || e.f.FirstSeq < a.f.FirstSeq {
			anchor[e.fam.Name] = e
		}
	}
	order := make([]*entry, 0, len(live))
	for _, e := range live {
		if !l.protected(e) {
			order = append(order, e)
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if sa, sb := a.userStated(), b.userStated(); sa != sb {
			return sb
		}
		if a.fam.Importance != b.fam.Importance {
			return a.fam.Importance < b.fam.Importance
		}
		if aa, ba := anchor[a.fam.Name] == a, anchor[b.fam.Name] == b; aa != ba {
			return ba
		}
		if a.f.LastSeq != b.f.LastSeq {
			return a.f.LastSeq < b.f.LastSeq
		}
		if a.f.Mentions != b.f.Mentions {
			return a.f.Mentions < b.f.Mentions
		}
		return pos[a] < pos[b]
	})
	// Members beyond their family's cap go first: one kind of chatter may
	// fill free room, but never pushes out anything else.
	members := map[string]int{}
	for _, e := range live {
		members[e.fam.Name]++
	}
	var excess, rest []*entry
	for _, e := range order {
		if !e.fam.Slot && members[e.fam.Name] > l.opt.MaxPerFamily {
			excess = append(excess, e)
			members[e.fam.Name]--
		} else {
			rest = append(rest, e)
		}
	}
	order = append(excess, rest...)
	dropped := map[*entry]bool{}
	count := len(live)

	// The ledger cap, then the token budget, in the same order.
	next := 0
	dropNext := func() bool {
		for ; next < len(order); next++ {
			if e := order[next]; !dropped[e] {
				dropped[e] = true
				count--
				next++
				return true
			}
		}
		return false
	}
	for count > l.opt.MaxFacts && dropNext() {
	}
	if l.opt.TokenBudget > 0 {
		ro := RenderOptions{ShowPrevious: l.opt.ShowPrevious}
		cost := map[*entry]int{}
		total := l.opt.Tokens(FactsHeader)
		for _, e := range live {
			if !dropped[e] {
				cost[e] = l.opt.Tokens(factLine(e.fact(), ro))
				total += cost[e]
			}
		}
		// Line by line first (cheap), then on the whole block, which an
		// estimator may count differently from the sum of its lines.
		for total > l.opt.TokenBudget && dropNext() {
			total -= cost[order[next-1]]
		}
		for count > 0 && l.opt.Tokens(FactsBlockWith(l.survivors(live, dropped), ro)) > l.opt.TokenBudget && dropNext() {
		}
	}
	return l.survivors(live, dropped)
}

// userStated reports whether e is a statement of the user's that
// outranks chatter: stated by the user, of a kind that is not incidental.
func (e *entry) userStated() bool {
	return e.f.Stated && e.fam.Importance > ImportanceIncidental
}

// fact is the entry as it is stored: with its newest superseded value.
func (e *entry) fact() Fact {
	f := e.f
	f.Previous = ""
	if n := len(e.hist); n > 0 {
		f.Previous = e.hist[n-1]
	}
	return f
}

func (l *ledger) survivors(live []*entry, dropped map[*entry]bool) []Fact {
	out := make([]Fact, 0, len(live))
	for _, e := range live {
		if !dropped[e] {
			out = append(out, e.fact())
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// IsPlaceholder reports whether a fact value says nothing: blank, or a
// stand-in such as "unknown", "not mentioned", "N/A", "none", "null",
// "TBD", "-" or "?" (case, surrounding punctuation and brackets ignored).
// A merge treats such a value as "no change".
func IsPlaceholder(v string) bool {
	s := strings.ToLower(strings.TrimFunc(v, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.IsSymbol(r)
	}))
	if s == "" {
		return true
	}
	s = strings.Join(strings.Fields(s), " ")
	switch s {
	case "n/a", "na", "n a", "none", "null", "nil", "unknown", "undefined", "unspecified", "tbd", "tba",
		"empty", "no value", "not available", "not applicable", "no data", "no information", "nothing":
		return true
	}
	for _, p := range []string{"not mentioned", "not provided", "not specified", "not given", "not stated",
		"not known", "not yet known", "not disclosed", "not found", "no mention", "unknown"} {
		if strings.HasPrefix(s, p) && len(s) <= len(p)+40 {
			return true
		}
	}
	return false
}

// sameValue compares two values by their letters and digits, ignoring
// case ("#1234" and "1234", "555-1111" and "555 1111" are the same); values
// without any letter or digit compare as trimmed, case-folded text.
func sameValue(a, b string) bool {
	ca, cb := canonValue(a), canonValue(b)
	if ca == "" && cb == "" {
		return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
	}
	return ca == cb
}

func canonValue(v string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(v) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// distinctive reports whether a value is specific enough to identify a fact
// across keys: at least four letters or digits, one of them a digit.
func distinctive(v string) bool {
	c := canonValue(v)
	return len(c) >= 4 && strings.ContainsFunc(c, unicode.IsDigit)
}

func minSeq(a, b int64) int64 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}
