package extractive

import (
	"regexp"
	"strings"

	"github.com/tmc/langchaingo/llms"

	itext "github.com/strata-go/strata/internal/text"
)

// This file holds the extractors that say what a fact is from the words
// around it: whose phone or address it is, what a date is for, which
// clause states a preference, who introduced themselves.

// clauseStops end a clause for clauseBefore: sentence ends and line
// breaks; cjkClauseStops are the full-width sentence ends of Chinese and
// Japanese, looked for only in text that may hold them
// (itext.MayHoldFullWidthPunct: a search for them costs a rune-by-rune
// scan).
const (
	clauseStops    = ".!?\n"
	cjkClauseStops = "。！？"
)

// lastClauseStop returns the byte index of the last clause stop in s and
// its width, or -1.
func lastClauseStop(s string) (int, int) {
	i := strings.LastIndexAny(s, clauseStops)
	if itext.MayHoldFullWidthPunct(s) {
		if j := strings.LastIndexAny(s, cjkClauseStops); j > i {
			return j, len("。")
		}
	}
	if i < 0 {
		return -1, 0
	}
	return i, 1
}

// indexStop returns the byte index of the first of the ASCII stops or of
// the full-width stops in s, or -1.
func indexStop(s, ascii, wide string) int {
	i := strings.IndexAny(s, ascii)
	if itext.MayHoldFullWidthPunct(s) {
		lim := s
		if i >= 0 {
			lim = s[:i]
		}
		if j := strings.IndexAny(lim, wide); j >= 0 {
			return j
		}
	}
	return i
}

// clauseBefore returns the lower-cased text of the clause that ends at s
// (back to the previous sentence end or line break), at most max bytes.
func clauseBefore(text string, s, max int) string {
	before := text[:s]
	if len(before) > 2*max { // bound the work: only the nearby text matters
		before = before[len(before)-2*max:]
	}
	if i, n := lastClauseStop(before); i >= 0 {
		// A period inside a number or a domain ("4.50", "example.com") is
		// not a sentence end: only cut at one followed by a space.
		for i >= 0 && i+1 < len(before) && before[i] == '.' && before[i+1] != ' ' {
			i, n = lastClauseStop(before[:i])
		}
		if i >= 0 {
			before = before[i+n:]
		}
	}
	if len(before) > max {
		before = before[len(before)-max:]
	}
	return strings.ToLower(before)
}

// clauseAfter returns the lower-cased text after e up to the end of its
// clause, at most max bytes.
func clauseAfter(text string, e, max int) string {
	after := text[e:]
	if i := indexStop(after, ".!?;\n", "。！？；"); i >= 0 {
		after = after[:i]
	}
	if len(after) > max {
		after = after[:max]
	}
	return strings.ToLower(after)
}

var (
	// staleCue marks a value the speaker says is no longer current.
	staleCue = regexp.MustCompile(`\b(?:old|previous|former|used\s+to\s+be|no\s+longer|not\s+anymore|instead\s+of|replaces?|rather\s+than)\b[^,;]*$|\bfrom\s*$`)
	// otherPartyCue marks a contact detail or address that belongs to the
	// business or a third party rather than to the user.
	otherPartyCue = regexp.MustCompile(`\b(?:our|us|we|store|shop|warehouse|office|headquarters|hq|branch|support|returns?\s+(?:center|centre|address)|his|her|their|friend|sister|brother|mom|dad|mother|father|wife|husband|son|daughter)\b`)
	// selfCueAgent marks a contact detail or address the agent states as
	// the user's.
	selfCueAgent = regexp.MustCompile(`\b(?:your|you|you['’]re|updated|now|on\s+file|ship\w*|sen[dt]\w*|deliver\w*|reach)\b`)
)

// ownership classifies a contact detail or address at text[s:e] said by
// role: stale (a superseded value: not a fact), self (the user's: a slot
// whose latest value wins) or other (numbered under the family key).
func ownership(text string, s, e int, role llms.ChatMessageType) (stale, self bool) {
	before := clauseBefore(text, s, 80)
	if staleCue.MatchString(before) || staleCueIntl.MatchString(before) {
		return true, false
	}
	if otherPartyCue.MatchString(before) || otherPartyCueIntl.MatchString(before) {
		return false, false
	}
	switch role {
	case llms.ChatMessageTypeHuman:
		// What the user gives without naming someone else is their own.
		return false, true
	case llms.ChatMessageTypeAI:
		return false, selfCueAgent.MatchString(before)
	}
	return false, false
}

// contactFinding builds the finding for an e-mail address or phone number:
// the user's own goes to the slot key, anyone else's to the numbered
// family.
func contactFinding(text string, s, e int, role llms.ChatMessageType, kind, slot string) (finding, bool) {
	stale, self := ownership(text, s, e, role)
	if stale {
		return finding{}, false
	}
	v := text[s:e]
	key := slot
	switch {
	case workCue.MatchString(clauseBefore(text, s, 25)):
		key = "work_" + slot
		self = self || role == llms.ChatMessageTypeHuman
	case kind == "email" && genericMailbox(v):
		key, self = "support_email", false
	}
	f := finding{start: s, end: e, kind: kind, base: key, value: v, cat: Entity}
	if self {
		f.mode, f.stated = lastWins, agentUpdate(text, s, role)
	} else if key == slot {
		f.base = "other_" + slot
	}
	return f, true
}

// updateCue marks the agent saying a detail of the user's was changed
// ("your number is now …", "I've updated the address to …").
var updateCue = regexp.MustCompile(`\b(?:now|updated?|changed?|new)\b`)

// agentUpdate reports whether the contact detail or address at text[s:]
// is the agent setting the user's own detail on their word ("the phone
// number on your account is now …"): it counts as the user's (stated), so
// it replaces what the user said before.
func agentUpdate(text string, s int, role llms.ChatMessageType) bool {
	return role == llms.ChatMessageTypeAI && updateCue.MatchString(clauseBefore(text, s, 80))
}

// workCue marks a work contact detail ("my work email is …").
var workCue = regexp.MustCompile(`\b(?:work|office|business)\b(?:\s+\w+){0,2}\s*(?:is|:)?\s*$`)

// genericMailbox reports whether an e-mail address is a role mailbox
// (support@, returns@, …) rather than a person's.
func genericMailbox(addr string) bool {
	local := strings.ToLower(addr[:max(0, strings.IndexByte(addr, '@'))])
	switch local {
	case "support", "help", "returns", "return", "info", "contact", "sales", "billing", "service",
		"noreply", "no-reply", "donotreply", "orders", "team", "hello", "admin", "care", "customercare":
		return true
	}
	return false
}

const streetSuffix = `(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Drive|Dr|Lane|Ln|Way|Court|Ct|Place|Pl|Terrace|Ter|Parkway|Pkwy|Circle|Cir|Highway|Hwy|Square|Sq|Trail|Trl|Alley|Row|Close|Crescent|Gardens|Loop|Pike|Plaza)`

// addressRE matches a street address: a house number, up to four street
// name words, a street suffix, then optionally a unit, a city, a state or
// region and a postal code.
var addressRE = regexp.MustCompile(`\b\d{1,6}[A-Za-z]?\s+(?:(?:[NSEW]\.?|North|South|East|West)\s+)?(?:(?:\d{1,3}(?:st|nd|rd|th)|\p{Lu}[\p{L}'’-]*)\s+){1,4}` + streetSuffix + `\b\.?` +
	`(?:,?\s*(?:Apt\.?|Apartment|Suite|Ste\.?|Unit|Floor|Fl\.?|#)\s*[A-Za-z0-9-]+)?` +
	`(?:,\s*\p{Lu}[\p{L}.'’-]*(?:\s+\p{Lu}[\p{L}.'’-]*){0,2})?` +
	`(?:,?\s+[A-Z]{2}\b)?(?:,?\s+\d{5}(?:-\d{4})?)?`)

func buildAddress(text string, m []int, role llms.ChatMessageType) (finding, bool) {
	s, e := m[0], m[1]
	v := strings.TrimRight(text[s:e], ", ")
	// A trailing "." belongs to the address only after a suffix
	// abbreviation such as "St.".
	if strings.HasSuffix(v, ".") && !suffixAbbrevRE.MatchString(v) {
		v = strings.TrimSuffix(v, ".")
	}
	return addressFinding(text, s, s+len(v), v, role)
}

// addressFinding builds the finding for the address v at text[s:e] said
// by role: the user's own goes to its slot (delivery_address, or
// billing_address, work_address when so called), anyone else's to
// location; a superseded one is none.
func addressFinding(text string, s, e int, v string, role llms.ChatMessageType) (finding, bool) {
	stale, self := ownership(text, s, e, role)
	if stale {
		return finding{}, false
	}
	before := clauseBefore(text, s, 80)
	f := finding{start: s, end: e, kind: "address", value: v, cat: Entity}
	switch {
	case strings.Contains(before, "billing") || strings.Contains(before, "bill ") || billingCueIntl.MatchString(before):
		f.base = "billing_address"
	case strings.Contains(before, "work") || strings.Contains(before, "office address") || workCueIntl.MatchString(before):
		f.base = "work_address"
	default:
		f.base = "delivery_address"
	}
	if self {
		f.mode, f.stated = lastWins, agentUpdate(text, s, role)
	} else {
		// Someone else's address (a store, a friend) must not land on the
		// user's address slot.
		f.base = "location"
	}
	return f, true
}

// productRE matches a product code after the words that introduce one.
var productRE = regexp.MustCompile(`(?i:\b(sku|product\s+(?:code|id|number|no\.?)|item\s+(?:code|number|no\.?|#)|model\s+(?:number|no\.?|#)?|part\s+(?:number|no\.?|#)|catalog(?:ue)?\s+(?:number|no\.?))(?:\s+(?:is|was))?)\s*[:#]?\s*([A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?)`)

func buildProduct(text string, m []int, _ llms.ChatMessageType) (finding, bool) {
	word, _, _ := group(text, m, 1)
	v, s, e := group(text, m, 2)
	if !validID(strings.ToUpper(v), true) || v != strings.ToUpper(v) || !standalone(text, s, e) {
		return finding{}, false
	}
	key := "sku"
	switch w := strings.ToLower(strings.Fields(word)[0]); w {
	case "product", "catalog", "catalogue":
		key = "product_code"
	case "model":
		key = "model_number"
	case "part":
		key = "part_number"
	}
	return finding{start: s, end: e, kind: "id", base: key, value: v, cat: Entity}, true
}

// preferenceRE matches the start of a clause stating a preference or a
// constraint; group 1 is the trigger.
var preferenceRE = regexp.MustCompile(`(?i)\b(?:i\s+|i['’]m\s+|i\s+am\s+|please\s*,?\s*|and\s+)?(` +
	`no\s+(?:phone\s+)?(?:calls?|texts?|sms|e-?mails?|deliveries|visits|contact|messages|weekend\s+deliveries)\b|` +
	`(?:don['’]t|do\s+not|never)\s+(?:call|text|e-?mail|phone|ring|contact|deliver|ship|leave)\b|` +
	`(?:only\s+)?(?:call|text|reach|contact)\s+me\s+(?:only\s+)?(?:after|before|between|on|in\s+the|during)\b|` +
	`(?:severely\s+|very\s+)?allergic\s+to\b|` +
	`(?:a\s+)?(?:vegetarian|vegan|pescatarian|gluten[- ]free|lactose[- ]intolerant|diabetic|kosher|halal)\b|` +
	`(?:would\s+|['’]d\s+)?prefer(?:s|red)?\b|(?:would|['’]d)\s+rather\b|` +
	`(?:can['’]?t|cannot|can\s+not|am\s+unable\s+to|unable\s+to)\s+(?:eat|have|drink|fly|travel|walk|climb|use|take|do|lift|wait)\b|` +
	`(?:need|require)\s+(?:a\s+)?(?:wheelchair|step-free|ground[- ]floor|accessible|quiet|window|aisle)\b)`)

// clauseEnd ends a preference clause.
var clauseEnd = regexp.MustCompile(`[.!?;\n]|,\s*(?i:but|and\s+(?:i|my|please)|so|because|though|thanks|thank|i|we|my|as|since|it)\b|\s+-\s+|\s+but\s+`)

// preferenceLead is a contraction left at the start of a clause ("'d
// prefer").
var preferenceLead = regexp.MustCompile(`^['’]d\s+`)

// Words that say what a preference is about.
var (
	dietRE     = regexp.MustCompile(`(?i)vegetarian|vegan|pescatarian|gluten|lactose|diabetic|kosher|halal`)
	contactRE  = regexp.MustCompile(`(?i)\b(?:calls?|call|texts?|sms|e-?mails?|phone|ring|contact|messages|reach)\b`)
	deliveryRE = regexp.MustCompile(`(?i)deliver|ship|leave|courier|pick-?up|parcel|package`)
	seatRE     = regexp.MustCompile(`(?i)\b(?:window|aisle|seat)\b`)
	// suffixAbbrevRE matches an address ending in an abbreviated street
	// suffix, whose period belongs to the address.
	suffixAbbrevRE = regexp.MustCompile(`\b(?:St|Ave|Rd|Blvd|Dr|Ln|Ct|Pl|Ter|Pkwy|Cir|Hwy|Sq|Trl)\.$`)
)

func buildPreference(text string, m []int, role llms.ChatMessageType) (finding, bool) {
	trig, ts, _ := group(text, m, 1)
	rest := text[ts:]
	if len(rest) > 400 {
		rest = rest[:400]
	}
	if loc := clauseEnd.FindStringIndex(rest); loc != nil {
		rest = rest[:loc[0]]
	}
	v := preferenceLead.ReplaceAllString(strings.TrimRight(itext.Collapse(rest), " ,:"), "")
	if len(strings.Fields(v)) < 2 && !dietRE.MatchString(v) {
		return finding{}, false
	}
	v = itext.Truncate(v, 120, "…")
	lt := strings.ToLower(trig)
	lv := strings.ToLower(v)
	f := finding{start: ts, end: ts + len(rest), kind: "preference", value: v, cat: Condition}
	switch {
	case strings.Contains(lt, "allergic"):
		f.base = "allergy"
	case dietRE.MatchString(lt):
		f.base, f.mode = "dietary_restriction", lastWins
	case contactRE.MatchString(lt) || (strings.Contains(lt, "prefer") && contactRE.MatchString(lv)):
		f.base, f.mode = "contact_preference", lastWins
	case deliveryRE.MatchString(lt) || (strings.Contains(lt, "prefer") && deliveryRE.MatchString(lv)):
		f.base, f.mode = "delivery_preference", lastWins
	case strings.Contains(lt, "prefer") || strings.Contains(lt, "rather"):
		if seatRE.MatchString(lv) {
			f.base, f.mode = "seat_preference", lastWins
		} else {
			f.base = "preference"
		}
	case strings.HasPrefix(lt, "need") || strings.HasPrefix(lt, "require"):
		if seatRE.MatchString(lv) {
			f.base, f.mode = "seat_preference", lastWins
		} else {
			f.base = "constraint"
		}
	default:
		f.base = "constraint"
	}
	// Preferences are what the user states about themselves; the agent
	// and tools only confirm them.
	if role != llms.ChatMessageTypeHuman {
		return finding{}, false
	}
	return f, true
}

// dateCues map words near a date to what the date is for, most specific
// first. stems holds a word start of every match of re, checked first: a
// clause without any is passed over cheaply. cjk are the same cues in
// Korean, Japanese and Chinese, plain words looked for only in a clause
// with CJK letters.
var dateCues = []struct {
	re    *regexp.Regexp
	stems []string
	cjk   []string
	key   string
}{
	{regexp.MustCompile(`\b(?:born|birthday|birth|dob)\b`), []string{"born", "birth", "dob"}, []string{"생일", "誕生日", "生日", "出生"}, "birth_date"},
	{regexp.MustCompile(`\bcheck[- ]?in\b`), []string{"check"}, []string{"체크인", "チェックイン", "入住"}, "check_in_date"},
	{regexp.MustCompile(`\bcheck[- ]?out\b`), []string{"check"}, []string{"체크아웃", "チェックアウト", "退房"}, "check_out_date"},
	{regexp.MustCompile(`\b(?:deliver\w*|arriv\w*|ship\w*|promised|expected)\b`), []string{"deliver", "arriv", "ship", "promised", "expected"},
		[]string{"배송", "배달", "도착", "配達", "配送", "到着", "届", "送达", "送到", "到货", "发货"}, "delivery_date"},
	{regexp.MustCompile(`\b(?:appointment|install\w*|technician|visit|pick[- ]?up|collect\w*)\b`), []string{"appointment", "install", "technician", "visit", "pick", "collect"},
		[]string{"방문", "설치", "訪問", "設置", "上门", "安装"}, "appointment_date"},
	{regexp.MustCompile(`\b(?:return\w*|back\s+on)\b`), []string{"return", "back"}, []string{"반품", "返品", "退货"}, "return_date"},
	{regexp.MustCompile(`\b(?:depart\w*|fly\w*|flight|leav\w*|travel\w*|trip)\b`), []string{"depart", "fly", "flight", "leav", "travel", "trip"},
		[]string{"출발", "출국", "出発", "出发", "出国"}, "travel_date"},
	{regexp.MustCompile(`\b(?:order\w*|placed|purchas\w*|bought|paid)\b`), []string{"order", "placed", "purchas", "bought", "paid"},
		[]string{"주문", "구매", "注文", "購入", "下单", "购买"}, "order_date"},
	{regexp.MustCompile(`\b(?:due|deadline|expir\w*)\b`), []string{"due", "deadline", "expir"}, []string{"마감", "기한", "締め切り", "期限", "截止"}, "deadline"},
	{regexp.MustCompile(`\b(?:event|party|wedding|hosting|meeting|birthday|anniversary|conference)\b`), []string{"event", "party", "wedding", "hosting", "meeting", "birthday", "anniversary", "conference"},
		[]string{"결혼식", "파티", "회의", "結婚式", "パーティー", "会議", "婚礼", "聚会", "会议"}, "event_date"},
}

// mayHold reports whether the lower-case text holds one of stems.
func mayHold(text string, stems []string) bool {
	for _, s := range stems {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// cjkFrom is where the CJK blocks start (CJK punctuation, kana, Han,
// Hangul syllables and full-width forms all come after it): a text
// without a rune from here on is no Korean, Japanese or Chinese.
const cjkFrom = 0x3000

// hasCJK reports whether s holds a rune from cjkFrom on: in UTF-8, a
// byte from 0xE3 on only starts such a rune.
func hasCJK(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0xE3 {
			return true
		}
	}
	return false
}

// dateKey names a date after the nearest cue in its clause (the words
// before it, then the few after it), or "date".
func dateKey(text string, s, e int) string {
	before := clauseBefore(text, s, 60)
	after := clauseAfter(text, e, 30)
	cjkBefore, cjkAfter := hasCJK(before), hasCJK(after)
	key, at := "", -1
	for _, c := range dateCues {
		if mayHold(before, c.stems) {
			locs := c.re.FindAllStringIndex(before, -1)
			if len(locs) > 0 && locs[len(locs)-1][0] > at {
				key, at = c.key, locs[len(locs)-1][0]
			}
		}
		if cjkBefore {
			for _, w := range c.cjk {
				if i := strings.LastIndex(before, w); i > at {
					key, at = c.key, i
				}
			}
		}
	}
	if key != "" {
		return key
	}
	for _, c := range dateCues {
		if (mayHold(after, c.stems) && c.re.MatchString(after)) || (cjkAfter && mayHold(after, c.cjk)) {
			return c.key
		}
	}
	return "date"
}

// petCue marks a name that belongs to a pet or another person introduced
// in passing ("This is Max, my dog").
var petCue = regexp.MustCompile(`(?i)^\s*[,!.-]*\s*(?:(?:he|she|it)['’]?s\s+|(?:he|she|it)\s+is\s+)?(?:my|our|the)\s+(?:\w+\s+)?(?:dog|cat|puppy|pup|kitten|pet|bird|parrot|hamster|rabbit|bunny|horse|fish|turtle|son|daughter|kid|child|baby|wife|husband|partner|friend|boyfriend|girlfriend|brother|sister|mom|mum|dad|mother|father|boss|colleague|neighbou?r)\b`)

// introLead is what may precede "this is <name>" for it to introduce the
// speaker: nothing, or a greeting's addressee ("Hello Tom, this is Dana").
var introLead = regexp.MustCompile(`^\s*(?:\p{L}+)?[\s,!.:;-]*$`)

// correctionCue marks an introduction that corrects an earlier one.
var correctionCue = regexp.MustCompile(`\b(?:actually|correction|sorry|changed|legally|new|now|spelled|spelt)\b`)

// weakIntro reports whether an introduction phrase ("I'm", "this is") is a
// weak one, which never replaces a name the ledger already holds; "my name
// is" and "call me" are strong.
func weakIntro(phrase string) bool {
	p := strings.ToLower(phrase)
	return !strings.Contains(p, "name") && !strings.Contains(p, "call")
}

// notNameShape reports whether a one-word "name" is more likely a verb or
// adjective ("I'm Exhausted", "I'm Loving it").
func notNameShape(name string) bool {
	if strings.Contains(name, " ") {
		return false
	}
	l := strings.ToLower(name)
	for _, suf := range []string{"ing", "ed", "ly", "ful", "ous", "ive", "ish", "ible", "able"} {
		if strings.HasSuffix(l, suf) && len(l) > len(suf)+2 {
			return true
		}
	}
	return false
}

func buildSelfIntro(text string, m []int, role llms.ChatMessageType) (finding, bool) {
	phrase, ps, _ := group(text, m, 1)
	v, s, e := nameGroup(text, m, 2)
	if v == "" || notNameShape(v) {
		return finding{}, false
	}
	lp := strings.ToLower(phrase)
	if strings.HasPrefix(lp, "this") {
		// "This is X" introduces the speaker only at the start of a
		// message (after a greeting), as on a phone line.
		if !introLead.MatchString(itext.StripGreeting(clauseBefore(text, ps, 200))) {
			return finding{}, false
		}
	}
	if petCue.MatchString(text[e:]) {
		return finding{}, false
	}
	base := "user_name"
	if role == llms.ChatMessageTypeAI {
		base = "agent_name"
	}
	// Only an explicit correction ("actually, my name is …") replaces a
	// name already known; any other introduction is taken only while the
	// name is unknown, so chatter never renames the user.
	weak := weakIntro(phrase) || !correctionCue.MatchString(clauseBefore(text, ps, 40))
	return finding{start: s, end: e, kind: "name", base: base, value: v, cat: Entity, mode: firstWins, weak: weak}, true
}
