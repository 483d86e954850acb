package extractive

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/chatmsg"
	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/summary/internal/factkey"
)

// Category is a fact's category, spelled as summary.Category spells it.
type Category string

// The categories the extractive summarizer assigns (a subset of
// summary.Categories, same spelling).
const (
	Entity    Category = "ENTITY"
	Condition Category = "CONDITION"
	State     Category = "STATE"
	Numeric   Category = "NUMERIC"
	General   Category = "GENERAL"
)

// Fact is what the extractive summarizer reads of a known fact and sets on
// one it finds: the fields of summary.Fact it deals in.
type Fact struct {
	Key, Value string
	Category   Category
	// Stated marks a value the user gave about themselves.
	Stated bool
}

// Protected reports whether a fact key belongs to a contact or identity
// family (summary.FamilyOf(key).Importance >= summary.ImportanceContact):
// within one run, a value of such a key the user stated is not replaced by
// a different one from the agent or a tool, as in the ledger.
type Protected func(key string) bool

// Input is one summarization.
type Input struct {
	// Messages are the messages to fold.
	Messages []llms.ChatMessage
	// SentAt[i], when present and non-zero, is when Messages[i] was sent;
	// relative dates are resolved against it.
	SentAt []time.Time
	// Known are the facts of the existing ledger: their keys are kept.
	Known []Fact
	// Carried is the existing narrative whose sentences compete with the
	// new ones (an incremental fold), "" for none.
	Carried string
	// MaxNarrativeRunes and MaxNarrativeTokens cap the narrative, in
	// runes and in tokens (trimmer.EstimateScript); the narrative is
	// empty unless both are positive.
	MaxNarrativeRunes, MaxNarrativeTokens int
}

// Output is what one summarization found.
type Output struct {
	Narrative string
	Facts     []Fact
}

// Summarizer is the extractive summarizer. It memoises per-message scans:
// a fold re-reads messages an earlier fold already scanned (always so
// under the parity policy, which re-summarizes from the originals), and
// scanning is the expensive part. It is safe for concurrent use.
type Summarizer struct {
	memo      *scanMemo
	protected Protected
}

// New returns a Summarizer; protected says which keys are contact or
// identity keys (nil: none).
func New(protected Protected) *Summarizer {
	return &Summarizer{memo: newScanMemo(scanMemoSize), protected: protected}
}

// Summarize folds in.Messages: facts as ExtractFacts finds them (with
// relative dates resolved against in.SentAt) and a narrative of salient
// sentences (see summary.NewExtractiveService). It does not judge an empty
// Output: the caller does.
func (s *Summarizer) Summarize(in Input) Output {
	return Output{
		Narrative: pickNarrative(narrativeCandidates(in.Carried, in.Messages, s.memo), in.MaxNarrativeRunes, in.MaxNarrativeTokens),
		Facts:     extractFacts(in.Messages, in.SentAt, in.Known, s.memo.scan, s.protected),
	}
}

// ----------------------------------------------------------------------------
// Facts

// ExtractFacts is summary.ExtractFacts (documented there) on this
// package's types, without a memo: it finds facts in msgs, keeping the
// keys of known.
func ExtractFacts(msgs []llms.ChatMessage, known []Fact, protected Protected) []Fact {
	return extractFacts(msgs, nil, known, scan, protected)
}

// extractFacts is ExtractFacts with the messages' timestamps (sentAt[i]
// for msgs[i]; missing or zero when unknown), against which relative dates
// are resolved.
func extractFacts(msgs []llms.ChatMessage, sentAt []time.Time, known []Fact, scan func(string, llms.ChatMessageType) []finding, protected Protected) []Fact {
	k := newKeyer(known, protected)
	for i, m := range msgs {
		k.addMessage(m, timeAt(sentAt, i), scan)
	}
	return k.facts
}

// FactsEach returns, for each message of in.Messages, the facts that
// Summarize would find in that message alone with the same in.Known (and
// its in.SentAt): what provenance traces facts to. The ledger's indexes
// are built once for all messages, and each message's scan is memoised.
func (s *Summarizer) FactsEach(in Input) [][]Fact {
	out := make([][]Fact, len(in.Messages))
	var k *keyer // one run per message, each started afresh (restart)
	for i, m := range in.Messages {
		if m == nil {
			continue
		}
		if k == nil {
			k = newKeyer(in.Known, s.protected).fresh()
		} else {
			k.restart()
		}
		k.addMessage(m, timeAt(in.SentAt, i), s.memo.scan)
		out[i] = k.facts
	}
	return out
}

// restart makes k the keyer fresh would return: a new run against the
// same ledger, its maps emptied for reuse; the facts of the run before
// are left to whoever holds them.
func (k *keyer) restart() {
	k.facts = nil
	clear(k.pos)
	clear(k.seen)
	clear(k.runVals)
	clear(k.next)
}

// timeAt is sentAt[i], zero when missing.
func timeAt(sentAt []time.Time, i int) time.Time {
	if i < len(sentAt) {
		return sentAt[i]
	}
	return time.Time{}
}

// addMessage adds the findings of message m, sent at at (zero: unknown),
// to the run.
func (k *keyer) addMessage(m llms.ChatMessage, at time.Time, scan func(string, llms.ChatMessageType) []finding) {
	if m == nil {
		return
	}
	role := m.GetType()
	switch role {
	case llms.ChatMessageTypeHuman, llms.ChatMessageTypeAI, llms.ChatMessageTypeTool,
		llms.ChatMessageTypeFunction, llms.ChatMessageTypeGeneric:
	default:
		return
	}
	for _, mt := range scan(m.GetContent(), role) {
		if mt.rel {
			if v, ok := resolveRelative(mt.value, at); ok {
				mt.value = v
			}
		}
		mt.stated = mt.stated || role == llms.ChatMessageTypeHuman
		k.add(mt)
	}
	// Tool-call arguments carry the exact ids the agent acted on.
	for _, call := range chatmsg.ToolCalls(m) {
		for _, mt := range scan(call.Arguments, llms.ChatMessageTypeTool) {
			k.add(mt)
		}
	}
}

// keyMode says how repeated findings of one kind are keyed.
type keyMode int

const (
	numbered  keyMode = iota // distinct values get base, base_2, base_3, …
	lastWins                 // one key; later values replace earlier ones
	firstWins                // one key; later values are ignored
)

type finding struct {
	start, end int
	kind       string // dedupe scope, e.g. "id", "amount"
	base       string // key, or key stem when numbered
	value      string
	cat        Category
	mode       keyMode
	// weak marks a firstWins finding that never replaces a different value
	// the ledger already holds under its key (a casual "I'm Max").
	weak bool
	// rel marks a relative date ("tomorrow") to resolve against the
	// message's timestamp.
	rel bool
	// stated marks a value that comes from the user (Fact.Stated): found
	// in a user message, or the agent setting the user's own detail on
	// their word ("your number is now …", see agentUpdate).
	stated bool
}

// canon is the form under which values of a kind are compared.
func canon(kind, v string) string {
	switch kind {
	case "email":
		return strings.ToLower(strings.TrimSpace(v))
	case "id", "flight", "phone", "amount":
		var b strings.Builder
		for _, r := range strings.ToUpper(v) {
			if unicode.IsLetter(r) || unicode.IsDigit(r) || (kind == "amount" && !unicode.IsSpace(r)) {
				b.WriteRune(r)
			}
		}
		return b.String()
	default:
		return strings.ToLower(text.Collapse(v))
	}
}

// keyer assigns keys to findings and collects the facts. Its indexes
// keep the work per finding independent of how many facts a run has
// found: a re-summarization from the originals finds thousands.
type keyer struct {
	facts    []Fact
	pos      map[string]int    // normalised key -> index in facts
	known    map[string]string // normalised key -> value in the existing ledger
	seen     map[string]int    // kind + "\x00" + canonical value found in this run -> index in facts (-1: none)
	spelling map[string]string // normalised key -> key as spelled in the ledger
	// runVals maps a held value (heldForm) to the facts of this run that
	// held it at some point; knownVals maps it to the smallest ledger key
	// holding it.
	runVals   map[string][]int
	knownVals map[string]string
	// numbered maps a key stem to the ledger keys stem, stem_2, stem_3, …
	// (up to the ledger's size), by number; next is the first number
	// worth trying for a new key of a stem.
	numbered map[string][]numberedKnown
	next     map[string]int
	// heldKeys indexes numbered by canonical value, built per kind and
	// stem when first asked (kind + "\x00" + stem -> canon(kind, value)
	// -> the lowest numbered ledger key holding it); a ledger index too.
	heldKeys map[string]map[string]string
	// protected says which keys are contact or identity keys.
	protected Protected
}

// numberedKnown is a ledger key numbered n under its stem.
type numberedKnown struct {
	n   int
	key string
}

// heldForm is the form under which holds compares values: case-folded,
// without surrounding white space and a leading '#'.
func heldForm(v string) string { return strings.ToLower(strings.TrimPrefix(strings.TrimSpace(v), "#")) }

func newKeyer(known []Fact, protected Protected) *keyer {
	k := &keyer{protected: protected, pos: map[string]int{}, known: map[string]string{}, seen: map[string]int{}, spelling: map[string]string{},
		runVals: map[string][]int{}, knownVals: map[string]string{}, numbered: map[string][]numberedKnown{}, next: map[string]int{},
		heldKeys: map[string]map[string]string{}}
	for _, f := range known {
		if n := factkey.Normalize(f.Key); n != "" && strings.TrimSpace(f.Value) != "" {
			k.known[n] = f.Value
			k.spelling[n] = f.Key
		}
	}
	for key, v := range k.known {
		if h := heldForm(v); k.knownVals[h] == "" || key < k.knownVals[h] {
			k.knownVals[h] = key
		}
		// Every key is the first of its own stem, and "stem_<n>" (n from 2
		// to the ledger's size, as factkey.Numbered spells it) the n-th of stem.
		k.numbered[key] = append(k.numbered[key], numberedKnown{1, key})
		if s := factkey.StripNumber(key); s != key {
			digits := key[len(s)+1:]
			if d, err := strconv.Atoi(digits); err == nil && d >= 2 && d <= len(k.known) && strconv.Itoa(d) == digits {
				k.numbered[s] = append(k.numbered[s], numberedKnown{d, key})
			}
		}
	}
	for _, list := range k.numbered {
		sort.Slice(list, func(i, j int) bool { return list[i].n < list[j].n })
	}
	return k
}

// fresh returns a keyer of a new run against the same ledger: it shares
// k's ledger indexes (known, spelling, knownVals, numbered), which a run
// only reads, and starts its own facts.
func (k *keyer) fresh() *keyer {
	return &keyer{protected: k.protected, known: k.known, spelling: k.spelling, knownVals: k.knownVals, numbered: k.numbered, heldKeys: k.heldKeys,
		pos: map[string]int{}, seen: map[string]int{}, runVals: map[string][]int{}, next: map[string]int{}}
}

func (k *keyer) add(f finding) {
	switch f.mode {
	case lastWins, firstWins:
		if f.weak {
			if v, ok := k.known[f.base]; ok && canon(f.kind, v) != canon(f.kind, f.value) {
				return // a casual mention never replaces the ledger's value
			}
		}
		if i, ok := k.pos[f.base]; ok {
			switch {
			case canon(f.kind, k.facts[i].Value) == canon(f.kind, f.value):
				k.facts[i].Stated = k.facts[i].Stated || f.stated
			case k.facts[i].Stated && !f.stated && k.protected != nil && k.protected(f.base):
				// The user's own contact or identity details win over a
				// different value from the assistant or a tool, as in the
				// ledger (MergeFacts).
			case f.mode == lastWins || !f.weak:
				k.facts[i].Value, k.facts[i].Stated = f.value, f.stated
				h := heldForm(f.value)
				k.runVals[h] = append(k.runVals[h], i)
			}
			return
		}
		k.emit(f.base, f)
		return
	}
	id := f.kind + "\x00" + canon(f.kind, f.value)
	if i, ok := k.seen[id]; ok {
		if i >= 0 && f.stated {
			k.facts[i].Stated = true
		}
		return
	}
	// A JSON leaf adds only values the prose and the ledger do not already
	// hold (under whatever key): tool results repeat what was said.
	if strings.HasPrefix(f.kind, "json:") && k.holds(f.value) {
		return
	}
	k.seen[id] = -1
	// A value the ledger already holds keeps its key (the lowest numbered
	// one of its stem).
	if key, ok := k.heldKey(f.kind, f.base, f.value); ok {
		k.seen[id] = len(k.facts)
		k.emit(key, f)
		return
	}
	// An identifier or amount already held under another key (found earlier
	// in this run, or in the ledger) is not repeated; short values such as
	// "2" may well be distinct facts. The user saying it marks it stated.
	if len(f.value) >= 4 {
		if i, key, held := k.holder(f.value); held {
			switch _, taken := k.pos[key]; {
			case !f.stated:
			case i >= 0:
				k.facts[i].Stated = true
			case !taken: // a mention of the ledger's fact, under its key
				k.seen[id] = len(k.facts)
				k.emit(key, f)
			}
			return
		}
	}
	k.seen[id] = len(k.facts)
	// Keys are only ever taken during a run: numbers below next are.
	for n := max(1, k.next[f.base]); ; n++ {
		key := factkey.Numbered(f.base, n)
		if _, taken := k.known[key]; taken {
			continue
		}
		if _, taken := k.pos[key]; taken {
			continue
		}
		k.next[f.base] = n + 1
		k.emit(key, f)
		return
	}
}

// heldKey returns the lowest numbered ledger key of stem base whose value
// is value under kind's canonical form, if any.
func (k *keyer) heldKey(kind, base, value string) (string, bool) {
	list := k.numbered[base]
	if len(list) == 0 {
		return "", false
	}
	idx, ok := k.heldKeys[kind+"\x00"+base]
	if !ok {
		idx = make(map[string]string, len(list))
		for _, nk := range list {
			if c := canon(kind, k.known[nk.key]); idx[c] == "" {
				idx[c] = nk.key
			}
		}
		k.heldKeys[kind+"\x00"+base] = idx
	}
	key, ok := idx[canon(kind, value)]
	return key, ok
}

// holds reports whether value is already a fact value of this run or of
// the ledger (compared case-insensitively, ignoring surrounding
// white space and a leading '#').
func (k *keyer) holds(value string) bool {
	_, _, ok := k.holder(value)
	return ok
}

// holder finds value among the facts of this run (i >= 0: the first one
// holding it) or else of the ledger (i < 0, key its normalised key; the
// smallest such key, so the answer does not depend on map order).
func (k *keyer) holder(value string) (i int, key string, ok bool) {
	want := heldForm(value)
	i = -1
	for _, j := range k.runVals[want] {
		if (i < 0 || j < i) && heldForm(k.facts[j].Value) == want {
			i = j
		}
	}
	if i >= 0 {
		return i, "", true
	}
	key, ok = k.knownVals[want]
	return -1, key, ok
}

func (k *keyer) emit(key string, f finding) {
	spelled := key
	if s, ok := k.spelling[key]; ok {
		spelled = s
	}
	k.pos[key] = len(k.facts)
	h := heldForm(f.value)
	k.runVals[h] = append(k.runVals[h], len(k.facts))
	k.facts = append(k.facts, Fact{Key: spelled, Value: f.value, Category: f.cat, Stated: f.stated})
}

// An extractor finds candidates in one message; accept may reject a match
// (its span then stays free for later extractors).
type extractor struct {
	re    *regexp.Regexp
	roles []llms.ChatMessageType // nil: every role
	only  func(text string) bool // nil: always
	// need is a necessary condition for any finding (see fold); nil:
	// none.
	need  func(folded) bool
	build func(text string, m []int, role llms.ChatMessageType) (finding, bool)
}

// scan runs the extractors in priority order; a match may not overlap an
// earlier accepted one. Findings are returned in text order.
func scan(text string, role llms.ChatMessageType) []finding { return scanText(text, role, true) }

// scanText is scan; without prefilter, every extractor's expression runs
// (the oracle prefilters are checked against).
func scanText(text string, role llms.ChatMessageType, prefilter bool) []finding {
	if role == llms.ChatMessageTypeTool || role == llms.ChatMessageTypeFunction {
		if found, ok := scanJSON(text); ok {
			return found
		}
	}
	var ft folded
	if prefilter {
		ft = fold(text)
	}
	var found []finding
	overlaps := func(s, e int) bool {
		for _, f := range found {
			if s < f.end && f.start < e {
				return true
			}
		}
		return false
	}
	for _, ex := range extractors {
		if ex.roles != nil && !hasRole(ex.roles, role) {
			continue
		}
		if ex.only != nil && !ex.only(text) {
			continue
		}
		if prefilter && ex.need != nil && !ex.need(ft) {
			continue
		}
		for _, m := range ex.re.FindAllStringSubmatchIndex(text, -1) {
			f, ok := ex.build(text, m, role)
			if !ok || overlaps(f.start, f.end) {
				continue
			}
			found = append(found, f)
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].start < found[j].start })
	if role != llms.ChatMessageTypeHuman {
		found = dropListings(found)
	}
	return alternates(found)
}

// alternates keys the second and later distinct values of one slot in one
// message as alternates ("call me at X or Y": Y is alternate_phone): two
// numbers given together are both current, not an update.
func alternates(found []finding) []finding {
	first := map[string]string{} // slot key -> canonical first value
	for i, f := range found {
		if f.mode != lastWins || (f.kind != "phone" && f.kind != "email" && f.kind != "address") {
			continue
		}
		c := canon(f.kind, f.value)
		if v, ok := first[f.base]; !ok {
			first[f.base] = c
		} else if v != c {
			found[i].base = "alternate_" + f.base
		}
	}
	return found
}

// maxListedAmounts and maxListedFlights are the most amounts and flight
// numbers an assistant or tool message may carry before it counts as a
// listing (search results, a fare table, options offered) whose values are
// incidental and not kept as facts. An itemised bill has a few amounts; a
// booking, one or two flights.
const (
	maxListedAmounts = 4
	maxListedFlights = 2
)

// dropListings removes the flight numbers and amounts of a listing.
func dropListings(found []finding) []finding {
	count := map[string]int{}
	for _, f := range found {
		count[f.kind]++
	}
	flights := count["flight"] > maxListedFlights
	// A listing of flights lists their fares too.
	listing := map[string]bool{"flight": flights, "amount": flights || count["amount"] > maxListedAmounts}
	if !listing["flight"] && !listing["amount"] {
		return found
	}
	out := found[:0:0]
	for _, f := range found {
		if !listing[f.kind] {
			out = append(out, f)
		}
	}
	return out
}

func hasRole(roles []llms.ChatMessageType, r llms.ChatMessageType) bool {
	for _, x := range roles {
		if x == r {
			return true
		}
	}
	return false
}

// group returns submatch i of m, with its span.
func group(text string, m []int, i int) (string, int, int) {
	if 2*i+1 >= len(m) || m[2*i] < 0 {
		return "", -1, -1
	}
	return text[m[2*i]:m[2*i+1]], m[2*i], m[2*i+1]
}

// standalone reports whether text[s:e] is not glued to a neighbouring
// digit or letter (a Han, kana or Hangul letter does not glue: those
// scripts write values against their words, "ORD-58213이고", "100号").
func standalone(text string, s, e int) bool {
	if s > 0 {
		if r, _ := utf8.DecodeLastRuneInString(text[:s]); glues(r) {
			return false
		}
	}
	if e < len(text) {
		if r, _ := utf8.DecodeRuneInString(text[e:]); glues(r) {
			return false
		}
	}
	return true
}

const (
	// numberPattern is a number as written in English (1,240.50) or on
	// the continent (1.240,50; 49,90).
	numberPattern = `\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{1,3}(?:\.\d{3})+(?:,\d{1,2})?|\d+,\d{1,2}|\d+(?:\.\d+)?`
	currencyCodes = `USD|EUR|GBP|KRW|JPY|CNY|RMB|CAD|AUD|CHF|INR|SGD|HKD`
	currencyWords = `dollars?|euros?|pounds?|won|yen|yuan|bucks`
	// cjkMultiplier is a Korean, Japanese or Chinese multiplier between a
	// number and its currency (3만 원, 12万円, 5千円, 2억 원).
	cjkMultiplier = `(?:[천千]?[만万億亿억]|[천千])`
	// unitCurrencies are currencies written after the number without a
	// word boundary: 원, 円, 元 (圆, 块), €.
	unitCurrencies  = `원|円|元|圆|块|€`
	monthPattern    = `(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)`
	namePattern     = `\p{Lu}\p{Ll}[\p{L}'’-]*(?:\s+\p{Lu}\p{Ll}[\p{L}'’-]*){0,2}`
	quantityNumbers = `\d{1,3}|one|two|three|four|five|six|seven|eight|nine|ten`
)

var extractors = []extractor{
	{ // e-mail
		re:   regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`),
		need: needAt,
		build: func(text string, m []int, role llms.ChatMessageType) (finding, bool) {
			return contactFinding(text, m[0], m[1], role, "email", "email")
		},
	},
	{ // phone
		need: needPhone,
		// North American, Korean (010-1234-5678, +82 10-…), Japanese
		// (090-…, +81 90-…) and Chinese (+86 138 0013 8000) numbers, and
		// numbers in pairs as in France (06 12 34 56 78, +33 6 12 34 56 78).
		re: regexp.MustCompile(`(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,4}\)[\s.-]?|\d{2,4}[\s.-])\d{3,4}[\s.-]\d{4}` +
			`|(?:\+\d{2}\s?|\b0)[1-9](?:[\s.]\d{2}){4}`),
		build: func(text string, m []int, role llms.ChatMessageType) (finding, bool) {
			v := text[m[0]:m[1]]
			digits := 0
			for _, r := range v {
				if r >= '0' && r <= '9' {
					digits++
				}
			}
			if digits < 9 || digits > 15 || !standalone(text, m[0], m[1]) || namedID(text, m[0], m[1]) {
				return finding{}, false
			}
			return contactFinding(text, m[0], m[1], role, "phone", "phone")
		},
	},
	{re: addressRE, need: needDigit, build: buildAddress},
	{re: koAddressRE, need: needKoAddress, build: buildKoAddress},
	{re: zhAddressRE, need: needZhAddress, build: buildCJKAddress},
	{re: jaAddressRE, need: needJaAddress, build: buildCJKAddress},
	{re: euStreetAddressRE, need: needEUStreetAddress, build: buildEUAddress},
	{re: romanceAddressRE, need: needRomanceAddress, build: buildEUAddress},
	{re: preferenceRE, roles: []llms.ChatMessageType{llms.ChatMessageTypeHuman}, need: needPreference, build: buildPreference},
	{re: productRE, need: needProduct, build: buildProduct},
	{ // identifiers next to a context word
		need: needID,
		re:   idRE,
		build: func(text string, m []int, _ llms.ChatMessageType) (finding, bool) {
			word, _, _ := group(text, m, 1)
			qual, _, _ := group(text, m, 2)
			verb, _, _ := group(text, m, 3)
			colon, _, _ := group(text, m, 4)
			v, s, e := group(text, m, 5)
			if !validID(v, qual != "" || verb != "" || colon != "") || !standalone(text, s, e) {
				return finding{}, false
			}
			return finding{start: s, end: e, kind: "id", base: idKey(word), value: v, cat: Entity}, true
		},
	},
	{re: intlIDRE, need: needIntlID, build: buildIntlID},
	{ // amounts with a currency
		need: needAmount,
		re: regexp.MustCompile(`(?:US\$|[$€£¥₩￥])\s?(?:` + numberPattern + `)(?:\s?` + cjkMultiplier + `)?(?:\s?(?:` + unitCurrencies + `))?` +
			`|\b(?:` + currencyCodes + `)\s?(?:` + numberPattern + `)` +
			`|\b(?:` + numberPattern + `)\s?(?:` + currencyCodes + `|(?i:` + currencyWords + `))\b`),
		build: buildAmount,
	},
	{ // amounts with their currency after them: 129,990원, 3만 원, 12万円, 49,90 €
		need:  needUnitAmount,
		re:    regexp.MustCompile(`\b(?:` + numberPattern + `)\s?(?:` + cjkMultiplier + `\s?)?(?:` + unitCurrencies + `)`),
		build: buildAmount,
	},
	{ // dates
		need:  needDate,
		re:    regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})\b|\b` + monthPattern + `\.?\s+\d{1,2}(?:st|nd|rd|th)?(?:,?\s+\d{4})?\b|\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?` + monthPattern + `(?:,?\s+\d{4})?\b`),
		build: buildDate,
	},
	{ // Korean, Japanese and Chinese dates: 2026년 12월 5일, 12月5日
		need:  needCJKDate,
		re:    regexp.MustCompile(`(?:\b\d{4}\s?[年년]\s?)?\b\d{1,2}\s?[月월]\s?\d{1,2}\s?[日일号]`),
		build: buildDate,
	},
	{re: relativeDateRE, need: needRelativeDate, build: buildRelativeDate},
	{ // times
		need: needTime,
		re:   regexp.MustCompile(`\b(?:[01]?\d|2[0-3]):[0-5]\d(?:\s?[AaPp](?:\.[Mm]\.|[Mm]\b))?|\b(?:1[0-2]|0?[1-9])\s?[AaPp](?:\.[Mm]\.|[Mm]\b)`),
		build: func(text string, m []int, _ llms.ChatMessageType) (finding, bool) {
			v := strings.TrimSpace(text[m[0]:m[1]])
			if !standalone(text, m[0], m[1]) {
				return finding{}, false
			}
			return finding{start: m[0], end: m[0] + len(v), kind: "time", base: timeKey(text, m[0]), value: v, cat: Condition}, true
		},
	},
	{ // flight numbers after "flight"
		need: needFlight,
		re:   regexp.MustCompile(`(?i:\bflights?(?:\s+(?:number|no\.?))?(?:\s+is)?)\s*[:#]?\s*((?:[A-Z]{2,3}|[A-Z]\d|\d[A-Z])\s?\d{1,4})\b`),
		build: func(text string, m []int, _ llms.ChatMessageType) (finding, bool) {
			v, s, e := group(text, m, 1)
			return finding{start: s, end: e, kind: "flight", base: "flight_number", value: v, cat: Entity}, true
		},
	},
	{ // other flight-number-shaped codes in a message about flights
		need: needFlight,
		re:   regexp.MustCompile(`\b[A-Z]{2,3}\d{2,4}\b`),
		only: func(text string) bool { return strings.Contains(strings.ToLower(text), "flight") },
		build: func(text string, m []int, _ llms.ChatMessageType) (finding, bool) {
			return finding{start: m[0], end: m[1], kind: "flight", base: "flight_number", value: text[m[0]:m[1]], cat: Entity}, true
		},
	},
	{ // quantities
		need: needQuantity,
		re:   regexp.MustCompile(`(?i)\b(` + quantityNumbers + `)\s+(?:(?:more|extra|checked|additional|carry-on)\s+)?(bags?|suitcases?|passengers?|adults?|child|children|kids?|infants?|tickets?|seats?|items?|nights?|rooms?|units?|pieces?|boxes|box|people|persons?|guests?|pairs?)\b`),
		build: func(text string, m []int, _ llms.ChatMessageType) (finding, bool) {
			n, s, _ := group(text, m, 1)
			noun, _, _ := group(text, m, 2)
			return finding{start: s, end: m[1], kind: "quantity", base: quantityKey(noun), value: quantityValue(n), cat: Numeric, mode: lastWins}, true
		},
	},
	{ // named roles ("passenger name is Jane Doe")
		need: needRoleName,
		re:   regexp.MustCompile(`(?i:\b(passenger|customer|guest|traveller|traveler|account holder)'?s?\s+name\s*(?:is\s+|:\s*))(` + namePattern + `)`),
		build: func(text string, m []int, _ llms.ChatMessageType) (finding, bool) {
			who, _, _ := group(text, m, 1)
			v, s, e := nameGroup(text, m, 2)
			if v == "" {
				return finding{}, false
			}
			return finding{start: s, end: e, kind: "name", base: factkey.Normalize(who) + "_name", value: v, cat: Entity, mode: firstWins}, true
		},
	},
	{ // self-introductions
		need:  needSelfIntro,
		re:    regexp.MustCompile(`(?i:\b(my\s+name\s+is|my\s+name's|i['’]m|i\s+am|this\s+is|call\s+me` + intlSelfIntro + `))\s+(` + namePattern + `)`),
		roles: []llms.ChatMessageType{llms.ChatMessageTypeHuman, llms.ChatMessageTypeAI},
		build: buildSelfIntro,
	},
	// Names in Korean, Japanese and Chinese: with an honorific, then in a
	// self-introduction.
	{re: koNameRE, need: needKoName, build: buildKoName},
	{re: jaNameRE, need: needJaName, build: buildJaName},
	{re: zhNameRE, need: needZhName, build: buildZhName},
	{re: koIntroRE, need: needKoIntro, roles: []llms.ChatMessageType{llms.ChatMessageTypeHuman, llms.ChatMessageTypeAI}, build: buildKoIntro},
	{re: jaIntroRE, need: needJaIntro, roles: []llms.ChatMessageType{llms.ChatMessageTypeHuman, llms.ChatMessageTypeAI}, build: buildJaIntro},
	{re: zhIntroRE, need: needZhIntro, roles: []llms.ChatMessageType{llms.ChatMessageTypeHuman, llms.ChatMessageTypeAI}, build: buildZhIntro},
}

// idRE matches an identifier next to a context word ("order number
// A-1234"); group 5 is the identifier.
var idRE = regexp.MustCompile(`(?i:\b(order|booking|reservation|ticket|confirmation|case|invoice|tracking|reference|ref|return|rma|claim|account|membership|policy|warranty)\b(\s+(?:number|no|num|id|code|ref(?:erence)?|locator)\b\.?)?(\s+(?:is|was)\b)?)\s*([:=])?\s*(#?[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)`)

// namedID reports whether text[s:e], shaped like a phone number, is an
// identifier its context word names ("order 2025-7745-2600", "주문번호
// 2025-7745-2600"): the identifier extractors then keep it.
func namedID(text string, s, e int) bool {
	lo := max(0, s-48)
	for lo > 0 && !utf8.RuneStart(text[lo]) {
		lo--
	}
	window := text[lo:e]
	for _, re := range []*regexp.Regexp{idRE, intlIDRE} {
		for _, m := range re.FindAllStringSubmatchIndex(window, -1) {
			if id := m[len(m)-2]; id >= 0 && lo+id == s && lo+m[len(m)-1] == e {
				return true
			}
		}
	}
	return false
}

func buildAmount(text string, m []int, _ llms.ChatMessageType) (finding, bool) {
	if !standalone(text, m[0], m[1]) {
		return finding{}, false
	}
	return finding{start: m[0], end: m[1], kind: "amount", base: amountKey(text, m[0], m[1]), value: text[m[0]:m[1]], cat: Numeric}, true
}

func buildDate(text string, m []int, _ llms.ChatMessageType) (finding, bool) {
	return finding{start: m[0], end: m[1], kind: "date", base: dateKey(text, m[0], m[1]), value: text[m[0]:m[1]], cat: Condition}, true
}

// validID accepts an identifier: it contains a digit, its letters are
// upper-case, and it has 3 to 20 characters after an optional "#". A bare
// number needs a "#", a qualifier ("number", "is", ":") or 4 digits.
func validID(v string, qualified bool) bool {
	core := strings.TrimPrefix(v, "#")
	if len(core) < 1 || len(core) > 20 {
		return false
	}
	hasDigit, hasLetter := false, false
	for _, r := range core {
		switch {
		case r >= '0' && r <= '9':
			hasDigit = true
		case r >= 'A' && r <= 'Z':
			hasLetter = true
		case r == '-':
		default:
			return false
		}
	}
	switch {
	case !hasDigit:
		return false
	case hasLetter:
		return len(core) >= 3
	default:
		return strings.HasPrefix(v, "#") || (qualified && len(core) >= 2) || len(core) >= 4
	}
}

func idKey(word string) string {
	switch w := strings.ToLower(word); w {
	case "ref", "reference":
		return "reference_id"
	case "tracking":
		return "tracking_number"
	case "confirmation":
		return "confirmation_code"
	default:
		return w + "_id"
	}
}

// amountKeys maps a word stem near an amount to the amount's key, in order
// of preference when several are equally near.
var amountKeys = []struct{ stem, key string }{
	{"refund", "refund_amount"},
	{"price", "price"},
	{"cost", "price"},
	{"fare", "fare"},
	{"fee", "fee"},
	{"surcharge", "fee"},
	{"penalty", "fee"},
	{"charge", "charge"},
	{"total", "total"},
	{"balance", "balance"},
	{"deposit", "deposit"},
	{"credit", "credit"},
	{"voucher", "voucher"},
	{"compensation", "compensation"},
	{"budget", "budget"},
	{"payment", "payment"},
	{"paid", "payment"},
	{"pay", "payment"},
}

var wordRE = regexp.MustCompile(`[A-Za-z]+`)

// amountKey names an amount after the nearest known word in its clause
// (up to three words after it, or any before it; a word before wins a tie),
// or "amount".
func amountKey(text string, s, e int) string {
	before := text[:s]
	if i := strings.LastIndexAny(before, ".!?;\n"); i >= 0 {
		before = before[i+1:]
	}
	after := text[e:]
	if i := indexStop(after, ".!?;,\n", "。！？、，"); i >= 0 {
		after = after[:i]
	}
	key, dist := "amount", -1
	words := wordRE.FindAllString(before, -1)
	for i := len(words) - 1; i >= 0; i-- {
		if k := amountWordKey(words[i]); k != "" {
			key, dist = k, len(words)-i
			break
		}
	}
	for i, w := range wordRE.FindAllString(after, 3) {
		if dist >= 0 && i+1 >= dist {
			break
		}
		if k := amountWordKey(w); k != "" {
			return k
		}
	}
	if dist < 0 {
		if k := intlAmountKey(text, s, e); k != "" {
			return k
		}
	}
	return key
}

func amountWordKey(word string) string {
	w := strings.ToLower(word)
	for _, ak := range amountKeys {
		if !strings.HasPrefix(w, ak.stem) {
			continue
		}
		switch w[len(ak.stem):] {
		case "", "s", "es", "ed", "d", "ing", "able":
			return ak.key
		}
	}
	return ""
}

var numberWords = map[string]string{
	"one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
	"six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10",
}

func quantityValue(n string) string {
	if d, ok := numberWords[strings.ToLower(n)]; ok {
		return d
	}
	return n
}

func quantityKey(noun string) string {
	switch n := strings.ToLower(noun); n {
	case "child", "children", "kid", "kids":
		return "children"
	case "people", "person", "persons":
		return "people"
	case "box", "boxes":
		return "boxes"
	default:
		return strings.TrimSuffix(n, "s") + "s"
	}
}

// notNames are capitalised words that follow "I'm" or "this is" without
// being names; a name stops before the first of them.
var notNames = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`Sorry Not So Just Still Really Very Here There Calling Looking Trying
		Writing Also Afraid Glad Happy Fine Okay Ok Good Great Sure Interested Travelling Traveling Flying
		Going Having Getting Waiting Hoping Wondering Done Back Ready New Unable Able The An In On At From
		With About For To Your My Our Their His Her Order Flight Booking Reservation Ticket Support Customer
		Service Team Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April
		May June July August September October November December Today Tomorrow Yesterday Thanks Thank
		Please Yes No Hi Hello Hey Mr Mrs Ms Dr Miss`) {
		notNames[w] = true
	}
}

// nameGroup returns the name in submatch i, cut before the first word that
// is not a name, and requires the name not to run into letters or digits.
func nameGroup(text string, m []int, i int) (string, int, int) {
	v, s, e := group(text, m, i)
	if v == "" || !standalone(text, s, e) {
		return "", -1, -1
	}
	words := strings.Fields(v)
	n := 0
	for n < len(words) && !notNames[strings.TrimRight(words[n], "'’-")] {
		n++
	}
	if n == 0 {
		return "", -1, -1
	}
	name := strings.Join(words[:n], " ")
	// The name is a prefix of v up to white-space differences: find its end.
	end := s
	for _, w := range words[:n] {
		end = strings.Index(text[end:], w) + end + len(w)
	}
	return name, s, end
}
