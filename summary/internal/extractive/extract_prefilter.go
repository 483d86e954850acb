package extractive

import "strings"

// This file holds the extractors' prefilters: cheap necessary conditions,
// checked on a folded copy of a message, under which an extractor's
// regular expression can give a finding at all. Most of a conversation
// (small talk, most of any chat) holds none of the words an extractor
// needs, and running a case-insensitive expression over every position
// of it was most of the extractive summarizer's work. A prefilter never
// changes what is found: FuzzExtractFacts checks scan against scanning
// without prefilters.

// folded is a message prepared for prefilters: lower-cased the way the
// expressions' (?i) flag matches ASCII letters (with the two non-ASCII
// runes that fold to ASCII letters, ſ and the Kelvin sign), each run of
// the white space \s matches collapsed to one space, and its digit count.
type folded struct {
	text   string
	digits int
	// cjk marks a text with a rune from cjkFrom on: the extractors for
	// Korean, Japanese and Chinese need one.
	cjk bool
}

func fold(text string) folded {
	var b strings.Builder
	b.Grow(len(text))
	f := folded{}
	space := false
	for _, r := range text {
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f':
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		case r >= 'A' && r <= 'Z':
			r += 'a' - 'A'
		case r >= '0' && r <= '9':
			f.digits++
		case r == 'ſ':
			r = 's'
		case r == '\u212a': // Kelvin sign
			r = 'k'
		}
		if r >= cjkFrom {
			f.cjk = true
		}
		space = false
		b.WriteRune(r)
	}
	f.text = b.String()
	return f
}

// has reports whether the folded text contains any of words.
func (f folded) has(words ...string) bool {
	for _, w := range words {
		if strings.Contains(f.text, w) {
			return true
		}
	}
	return false
}

// The prefilters of the extractors, in the order of the extractors table.
var (
	needAt    = func(f folded) bool { return strings.IndexByte(f.text, '@') >= 0 }
	needDigit = func(f folded) bool { return f.digits > 0 }
	// A phone number is accepted with nine digits or more.
	needPhone      = func(f folded) bool { return f.digits >= 9 }
	needPreference = func(f folded) bool {
		return f.has("call", "text", "sms", "mail", "deliver", "visit", "contact", "message",
			"t phone", "never phone", "t ring", "never ring", "t ship", "never ship", "t leave", "never leave",
			"reach", "allergic", "vegetarian", "vegan", "pescatarian", "gluten", "lactose", "diabetic", "kosher", "halal",
			"prefer", "rather", "can't", "can’t", "cant", "cannot", "can not", "unable") ||
			(f.has("need", "require") && f.has("wheelchair", "step-free", "ground", "accessible", "quiet", "window", "aisle"))
	}
	needProduct = func(f folded) bool {
		return f.digits > 0 && f.has("sku", "product", "item", "model", "part", "catalog")
	}
	needID = func(f folded) bool {
		return f.digits > 0 && f.has("order", "booking", "reservation", "ticket", "confirmation", "case", "invoice",
			"tracking", "ref", "return", "rma", "claim", "account", "membership", "policy", "warranty")
	}
	needAmount = func(f folded) bool {
		return f.digits > 0 && f.has("$", "€", "£", "¥", "₩", "￥", "usd", "eur", "gbp", "krw", "jpy", "cny", "rmb", "cad", "aud",
			"chf", "inr", "sgd", "hkd", "dollar", "euro", "pound", "won", "yen", "yuan", "buck")
	}
	needUnitAmount = func(f folded) bool {
		return f.digits > 0 && (f.has("€") || (f.cjk && f.has("원", "円", "元", "圆", "块")))
	}
	// A date is ISO ("-"), with slashes, or has a month's name.
	needDate = func(f folded) bool {
		return f.digits > 0 && f.has("-", "/", "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
	}
	needCJKDate      = func(f folded) bool { return f.cjk && f.digits > 0 && f.has("月", "월") }
	needRelativeDate = func(f folded) bool { return f.has("day", "week", "tomorrow", "tonight") }
	// A time has a colon or an am/pm mark.
	needTime     = func(f folded) bool { return f.digits > 0 && f.has(":", "am", "pm", "a.m.", "p.m.") }
	needFlight   = func(f folded) bool { return f.digits > 0 && f.has("flight") }
	needQuantity = func(f folded) bool {
		return (f.digits > 0 || f.has("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")) &&
			f.has("bag", "suitcase", "passenger", "adult", "child", "kid", "infant", "ticket", "seat", "item", "night",
				"room", "unit", "piece", "box", "people", "person", "guest", "pair")
	}
	needRoleName  = func(f folded) bool { return f.has("name") }
	needSelfIntro = func(f folded) bool {
		return f.has("name", "i'm", "i’m", "i am", "this is", "call me", "appelle", "mon nom", "ich hei", "llamo", "nombre", "chiamo")
	}
)

// The prefilters of the extractors for Korean, Japanese, Chinese and
// continental European text (extract_intl.go).
var (
	needKoAddress = func(f folded) bool { return f.cjk && f.digits > 0 && f.has("로", "길", "동", "리", "읍", "면") }
	needZhAddress = func(f folded) bool { return f.cjk && f.digits > 0 && f.has("号") }
	// A Japanese address may have full-width digits, which digits does
	// not count.
	needJaAddress = func(f folded) bool {
		return f.cjk && f.has("丁目", "番地", "-", "−", "－") && f.has("市", "区", "町", "村", "郡")
	}
	needEUStreetAddress = func(f folded) bool {
		return f.digits > 0 && f.has("straße", "strasse", "str.", "weg", "gasse", "allee", "platz", "damm", "ufer")
	}
	// The street word is followed by white space, which fold makes one
	// space.
	needRomanceAddress = func(f folded) bool {
		return f.digits > 0 && f.has("rue ", "avenue ", "boulevard ", "bd ", "place ", "chemin ", "allée ", "impasse ", "quai ", "route ",
			"cours ", "calle ", "avenida ", "paseo ", "plaza ", "via ", "viale ", "piazza ", "corso ", "rua ")
	}
	needIntlID = func(f folded) bool {
		return f.digits > 0 && ((f.cjk && f.has("주문", "예약", "운송장", "송장", "배송", "티켓", "문의", "접수", "회원", "계좌", "환불", "반품",
			"注文", "予約", "問", "追跡", "配送", "伝票", "会員", "チケット", "返品",
			"订单", "訂單", "预订", "預訂", "预约", "快递", "运单", "物流", "工单", "会员", "退货", "退款")) ||
			f.has("bestell", "auftrag", "buchung", "sendung", "rechnung", "kunden", "reserv", "servation",
				"commande", "suivi", "factur", "pedido", "seguimiento", "ordine", "prenotazione"))
	}
	needKoName  = func(f folded) bool { return f.cjk && f.has("님", "씨") }
	needJaName  = func(f folded) bool { return f.cjk && f.has("様", "さま", "さん", "先生", "殿") }
	needZhName  = func(f folded) bool { return f.cjk && f.has("先生", "女士", "小姐") }
	needKoIntro = func(f folded) bool { return f.cjk && f.has("입니다", "이에요", "예요", "이고", "라고") }
	needJaIntro = func(f folded) bool {
		return f.cjk && f.has("申します", "といいます", "と言います", "名前は")
	}
	needZhIntro = func(f folded) bool { return f.cjk && f.has("我叫", "我的名字") }
)
