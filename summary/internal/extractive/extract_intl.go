package extractive

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	itext "github.com/strata-go/strata/internal/text"
)

// This file holds the extractors for values written the way Korean,
// Japanese, Chinese and continental European users write them: order ids
// after their own words (주문번호, 注文番号, 订单号, Bestellnummer,
// commande), street addresses (로/길; 都道府県/市区町村/丁目; 省/市/区/路/号;
// Müllerstraße 12, 12 rue de la Paix), names with an honorific (님, 씨,
// 様, さん, 先生, 女士) or in a self-introduction (제 이름은, と申します,
// 我叫, je m'appelle). They feed the same table, keys and ledger as the
// English ones; amounts with 원, ₩, 円, ¥, 元, 万/만 and € are in the amount
// extractor's expression, phone numbers in the phone extractor's.

// isCJK reports whether r is written without spaces between words (Han,
// kana) or glued to particles (Hangul): a value next to such a letter
// still stands alone ("ORD-58213이고", "090-1234-5678、", "100号").
func isCJK(r rune) bool {
	if r < 0x1100 {
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// glues reports whether a value next to r runs into a word: a letter of a
// script written with spaces, or a digit.
func glues(r rune) bool {
	return unicode.IsDigit(r) || (unicode.IsLetter(r) && !isCJK(r))
}

// ----------------------------------------------------------------------------
// Identifiers

// intlIDRE matches an identifier after the words for an order, a
// reservation, a tracking number, … in Korean, Japanese, Chinese, German,
// French, Spanish and Italian, with the particle or copula that may
// follow ("주문번호는", "注文番号は", "订单号是", "Bestellnummer ist"). Group 1
// is the word, group 2 the identifier.
var intlIDRE = regexp.MustCompile(`(` +
	`(?:주문|예약|운송장|송장|배송|티켓|문의|접수|회원|계좌|환불|반품)\s?(?:번호|ID|아이디|코드)` +
	`|(?:注文|予約|問い合わせ|問合せ|お問い合わせ|追跡|配送|伝票|会員|チケット|返品)(?:番号|ID|コード)` +
	`|(?:订单|訂單|预订|預訂|预约|快递|运单|物流|工单|会员|退货|退款)(?:号码|編號|编号|号|ID)` +
	`|\b(?i:bestellnummer|bestellung|auftragsnummer|buchungsnummer|sendungsnummer|rechnungsnummer|kundennummer|reservierungsnummer` +
	`|num[ée]ro\s+de\s+(?:commande|r[ée]servation|suivi|facture)|commande|r[ée]servation` +
	`|n[úu]mero\s+de\s+(?:pedido|reserva|seguimiento|factura)|pedido|reserva|numero\s+d['’]ordine|ordine|prenotazione)` +
	`)(?:\s*(?:n[°º]|(?i:nr|no)\.?))?\s*(?:은|는|이|가|:|：|は|が|是|为|為|(?i:ist|lautet|est|es|è))?\s*[:：]?\s*` +
	`(#?[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)`)

// intlIDKeys maps a stem of the word before an identifier to its key;
// the first stem the (lower-cased) word holds wins.
var intlIDKeys = []struct{ stem, key string }{
	{"운송장", "tracking_number"}, {"송장", "tracking_number"}, {"배송", "tracking_number"}, {"追跡", "tracking_number"},
	{"配送", "tracking_number"}, {"伝票", "tracking_number"}, {"快递", "tracking_number"}, {"运单", "tracking_number"},
	{"物流", "tracking_number"}, {"sendung", "tracking_number"}, {"suivi", "tracking_number"}, {"seguimiento", "tracking_number"},
	{"환불", "refund_id"}, {"退款", "refund_id"},
	{"반품", "return_id"}, {"返品", "return_id"}, {"退货", "return_id"},
	{"예약", "reservation_id"}, {"予約", "reservation_id"}, {"预订", "reservation_id"}, {"預訂", "reservation_id"},
	{"预约", "reservation_id"}, {"reservierung", "reservation_id"}, {"servation", "reservation_id"}, {"reserva", "reservation_id"},
	{"prenotazione", "reservation_id"}, {"buchung", "booking_id"},
	{"티켓", "ticket_id"}, {"チケット", "ticket_id"},
	{"문의", "case_id"}, {"접수", "case_id"}, {"問", "case_id"}, {"工单", "case_id"},
	{"회원", "membership_id"}, {"会員", "membership_id"}, {"会员", "membership_id"}, {"kunden", "membership_id"},
	{"계좌", "account_id"},
	{"rechnung", "invoice_id"}, {"facture", "invoice_id"}, {"factura", "invoice_id"},
}

func buildIntlID(text string, m []int, _ llms.ChatMessageType) (finding, bool) {
	word, _, _ := group(text, m, 1)
	v, s, e := group(text, m, 2)
	if !validID(v, true) || !standalone(text, s, e) {
		return finding{}, false
	}
	key := "order_id"
	lw := strings.ToLower(word)
	for _, k := range intlIDKeys {
		if strings.Contains(lw, k.stem) {
			key = k.key
			break
		}
	}
	return finding{start: s, end: e, kind: "id", base: key, value: v, cat: Entity}, true
}

// ----------------------------------------------------------------------------
// Addresses

// koAddressRE matches a Korean road-name address: an optional city or
// province, district and neighbourhood, then a road (…로, …길, …대로) and
// its building number, and an optional unit ("101동 1203호", "5층"); or a
// lot-number address after its district ("강남구 역삼동 123-45").
var koAddressRE = regexp.MustCompile(`(?:[가-힣]{1,10}(?:특별시|광역시|특별자치시|특별자치도|도|시)\s+)?(?:[가-힣]{1,10}(?:시|군|구)\s+){0,2}(?:[가-힣]{1,10}(?:읍|면|동)\s+)?` +
	`[가-힣0-9]{1,12}(?:로|길)(?:\s?[0-9]{1,4}번?길)?\s?[0-9]{1,4}(?:-[0-9]{1,4})?` +
	`(?:,?\s*[0-9]{1,4}동\s?[0-9]{1,4}호|,?\s*[0-9]{1,5}(?:호|층))?` +
	// A lot-number address after its district: 강남구 역삼동 123-45.
	`|(?:[가-힣]{1,10}(?:특별시|광역시|도|시)\s+)?[가-힣]{1,10}(?:구|군)\s+[가-힣]{1,10}(?:동|리|읍|면)\s?[0-9]{1,4}(?:-[0-9]{1,4})?(?:번지)?`)

// koCounters are the Hangul counters and units that, right after the
// number, make "택배로 2개" or "카드로 3만 원" a quantity rather than an
// address.
const koCounters = "개명시분초일월년주달번회차원살장권잔병마대박편통곳채벌켤쪽인위등점세배만천억킬미센그퍼"

// koAddressCue marks a clause about an address or a delivery, which a
// road address without a district must be said in.
var koAddressCue = regexp.MustCompile(`주소|배송|배달|보내|받을|수령|사는|살아|살고|거주|집|이사|address|ship|deliver|send`)

// koDistrict is the city, district or neighbourhood part of a Korean
// address.
var koDistrict = regexp.MustCompile(`(?:시|군|구|동|읍|면)\s`)

// Cues, in Korean, Japanese, Chinese, German, French and Spanish, that an
// address or contact detail is superseded (staleCueIntl), someone else's
// (otherPartyCueIntl), a billing address or a work one. They are matched
// on the lower-cased clause before the value.
var (
	staleCueIntl      = regexp.MustCompile(`예전|이전|옛\s?주소|원래\s?주소|전\s주소|以前|前の|旧|原来|之前|\b(?:früher|alte[rn]?|ancien(?:ne)?|anterior|antigu[oa])\b`)
	otherPartyCueIntl = regexp.MustCompile(`저희|매장|가게|지점|본사|센터|친구|부모님|어머니|아버지|남편|아내|当店|弊社|店舗|友達|友人|両親|我们|门店|朋友|父母|公司地址|` +
		`\b(?:unser\w*|geschäft|filiale|freund\w*|notre|nos|magasin|ami[es]?|nuestr[oa]s?|tienda|amig[oa]s?)\b`)
	billingCueIntl = regexp.MustCompile(`청구|請求|账单|帐单|rechnungsadresse|facturation|facturación`)
	workCueIntl    = regexp.MustCompile(`회사|직장|勤務先|会社|公司|单位|\b(?:arbeit\w*|büro|travail|bureau|trabajo|oficina)\b`)
)

func buildKoAddress(text string, m []int, role llms.ChatMessageType) (finding, bool) {
	s, e := m[0], m[1]
	if r, _ := utf8.DecodeRuneInString(text[e:]); strings.ContainsRune(koCounters, r) || glues(r) {
		return finding{}, false
	}
	if r, _ := utf8.DecodeLastRuneInString(text[:s]); s > 0 && (glues(r) || unicode.Is(unicode.Hangul, r)) {
		return finding{}, false
	}
	v := text[s:e]
	if !koDistrict.MatchString(v) {
		// A bare road and number ("테헤란로 152") needs a clause about an
		// address or a delivery.
		if !koAddressCue.MatchString(clauseBefore(text, s, 80) + " " + clauseAfter(text, e, 40)) {
			return finding{}, false
		}
	}
	return addressFinding(text, s, e, v, role)
}

// jaAddressRE matches a Japanese address: an optional prefecture, one to
// three municipal units (市, 区, 町, 村, 郡), a town name and a block
// number (1丁目2-3, 1-2-3, 12番地).
var jaAddressRE = regexp.MustCompile(`(?:北海道|東京都|大阪府|京都府|[一-龥]{2,3}県)?(?:[一-龥ァ-ヶー々]{1,6}?[市区町村郡]){1,3}[一-龥ァ-ヶー々]{0,8}?` +
	`[0-9０-９]{1,4}(?:丁目\s?(?:[0-9０-９]{1,4}(?:[-−－ー番][0-9０-９]{1,4})?号?)?|[-−－][0-9０-９]{1,4}(?:[-−－][0-9０-９]{1,4})?|番地(?:[0-9０-９]{1,4})?)`)

// zhAddressRE matches a Chinese address: an optional province, city,
// district and town, a road or street (路, 街, 大道, 道, 巷, 胡同, 弄) and a
// number ending in 号, then an optional building and room.
var zhAddressRE = regexp.MustCompile(`(?:[一-龥]{2,3}(?:省|自治区))?(?:[一-龥]{1,6}?[市州盟])?(?:[一-龥]{1,6}?[区县旗])?(?:[一-龥]{1,8}?(?:镇|乡|街道))?` +
	`[一-龥0-9]{1,10}?(?:路|街|大道|道|巷|胡同|弄)[0-9]{1,5}(?:弄[0-9]{1,4})?号(?:[0-9]{1,4}(?:号楼|栋|幢|单元|室|楼))*`)

// cjkAddressLead matches what may precede a Japanese or Chinese address
// inside its match, since nothing separates words there: "地址是",
// "住在", "寄到".
var cjkAddressLead = regexp.MustCompile(`^.*(?:地址|住址|住所|是|为|為|在|到|至|于|：|:)`)

// cjkAddressStart is the first municipal, road or block mark of a
// Japanese or Chinese address: the lead is looked for before it.
const cjkAddressStart = "都道府県省市区町村郡州县路街号丁"

func buildCJKAddress(text string, m []int, role llms.ChatMessageType) (finding, bool) {
	s, e := m[0], m[1]
	v := text[s:e]
	if i := strings.IndexAny(v, cjkAddressStart); i > 0 {
		if lead := cjkAddressLead.FindString(v[:i]); lead != "" {
			s += len(lead)
			v = text[s:e]
		}
	}
	if r, _ := utf8.DecodeRuneInString(text[e:]); unicode.IsDigit(r) {
		return finding{}, false
	}
	if utf8.RuneCountInString(v) < 5 {
		return finding{}, false
	}
	return addressFinding(text, s, e, v, role)
}

// euStreetAddressRE matches a German-style address: a street name ending
// in straße, weg, gasse, … (or such a word after an adjective: "Berliner
// Straße") and a house number, then an optional postcode and town.
var euStreetAddressRE = regexp.MustCompile(`(?:\p{Lu}[\p{L}-]*\s+)?(?:\p{Lu}[\p{L}-]*(?:straße|strasse|str\.|weg|gasse|allee|platz|damm|ufer)|Straße|Strasse|Weg|Gasse|Allee|Platz)` +
	`\s+[0-9]{1,4}(?:\s?[a-z]\b)?(?:,\s*[0-9]{4,5}\s+\p{Lu}[\p{L}-]+(?:\s+\p{Lu}[\p{L}-]+)?)?`)

// romanceAddressRE matches a French, Spanish, Italian or Portuguese
// address: "12 rue de la Paix, 75002 Paris", "Calle Mayor 5", "Via Roma
// 10".
var romanceAddressRE = regexp.MustCompile(`[0-9]{1,4}(?:\s?(?:bis|ter))?,?\s+(?:(?i:rue|avenue|boulevard|bd|place|chemin|impasse|quai|route|cours)|allée|Allée)\s+` +
	`(?:(?:de\s+la|de\s+l['’]|du|des|de|d['’]|la|le|l['’])\s*)?\p{Lu}[\p{L}'’-]*(?:\s+(?:(?:de|du|des|la|le|d['’])\s+)?\p{Lu}[\p{L}'’-]*){0,3}` +
	`(?:,\s*[0-9]{4,5}\s+\p{Lu}[\p{L}-]+(?:\s+\p{Lu}[\p{L}-]+)?)?` +
	`|(?:Calle|Avenida|Paseo|Plaza|Via|Viale|Piazza|Corso|Rua)\s+(?:(?:de\s+la|del|de|della|di)\s+)?\p{Lu}[\p{L}'’-]*(?:\s+\p{Lu}[\p{L}'’-]*){0,2},?\s+(?:n\.?\s?º?\s?)?[0-9]{1,4}\b`)

func buildEUAddress(text string, m []int, role llms.ChatMessageType) (finding, bool) {
	s, e := m[0], m[1]
	if !standalone(text, s, e) {
		return finding{}, false
	}
	return addressFinding(text, s, e, text[s:e], role)
}

// ----------------------------------------------------------------------------
// Names

// koSurnames are the common Korean family names: a name said with 님 or
// 씨, or in an introduction, starts with one.
const koSurnames = "김이박최정강조윤장임한오서신권황안송류유전홍고문양손배백허남심노하곽성차주우구민진나지엄채원천방공현함변염여추도소석선설마길연위표명기반라왕금옥육인맹제모탁국은편용예경봉사부"

// zhSurnames are common Chinese family names, in simplified and
// traditional spelling: a name said with 先生, 女士, … starts with one.
const zhSurnames = "王李张張刘劉陈陳杨楊黄黃赵趙吴吳周徐孙孫马馬朱胡郭何高林罗羅郑鄭梁谢謝宋唐许許韩韓冯馮邓鄧曹彭曾肖田董袁潘于蒋蔣蔡余杜叶葉程苏蘇魏吕呂丁任沈姚卢盧姜崔钟鍾谭譚陆陸汪范金石廖贾賈夏韦韋付方白邹鄒孟熊秦邱江尹薛闫閆段雷侯龙龍史陶黎贺賀顾顧毛郝龚龔邵万萬钱錢严嚴覃武戴莫孔向汤湯欧歐阳陽司上官"

// notKoNames are words said with 님 or 씨 that are titles or kinship
// terms, not names ("고객님", "선생님").
var notKoNames = map[string]bool{}

// notJaNames are words said with 様 or さん that are not names
// ("お客様", "皆様").
var notJaNames = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`고객 선생 사장 부장 과장 차장 대리 팀장 실장 원장 교수 기사 회원 손님 여러분 담당자 담당 상담사 상담원
		매니저 선배 후배 형 언니 누나 오빠 아저 아주머 어머 아버 할머 할아버 고모 이모 삼촌 의사 간호사 작가 감독 대표 이사 주인 사모
		신부 목사 수녀 판사 검사 변호사 소장 국장 회장 반장 점장 주임 기장 선장 조장 아드 따님 아드님 영감 도련 아가 당신 님 그분 이분 저분
		부모 조부모 시부모 장인 장모 박사 석사 교장 총장 학장 구청장 시장 도지사 의원 세무사 회계사 기자 선수 코치 관장 전무 상무 집사
		권사 장로 하나 예수 부처 마음 주부 한국인 한국사람 여자 남자 노인 공무원 전업주부 고등학생 사장 인턴 조리사 방문객 문의 주문
		정말 진짜 사실 오늘 내일 이번 배송 감사 신입 정규직 임산부`) {
		notKoNames[w] = true
	}
	for _, w := range strings.Fields(`お客 客 皆 皆さま 奥 子 お子 神 王 殿 患者 会員 担当 担当者 店員 先方 御中 各位 お母 お父 お姉 お兄 大家 職員 運転手 社長 部長 課長 店長 先輩
		母 父 姉 兄 妹 弟 娘 息子 旦那 隣 医者 同 多 模 仕 異 一 左 今 各 貴 仏 苦労 馳走 世話 愁傷 陰 遠 学生 会社員 主婦 日本人`) {
		notJaNames[w] = true
	}
}

// koNameRE matches a Korean name with 님 or 씨 ("김민지 님", "김민지씨").
var koNameRE = regexp.MustCompile(`([가-힣]{2,4})\s?(님|씨)`)

// koIntroRE matches a Korean self-introduction: "제 이름은 김민지예요",
// "저는 김민지입니다", "김민지라고 합니다", and "김민지입니다" opening a
// message. Group 1 is what precedes the name, group 2 the name.
var koIntroRE = regexp.MustCompile(`(제\s?이름은|내\s?이름은|저는|전|^|[,.!?]\s*)\s*([가-힣]{2,4}?)(?:입니다|이에요|예요|이고요|이고|(?:이)?라고\s?(?:합니다|해요|하고|불러))`)

// jaNameRE matches a Japanese name with an honorific ("田中様", "田中 花子
// さん", "田中さくらさん", "スミスさん").
var jaNameRE = regexp.MustCompile(`([一-龥々]{1,4}(?:\s?[ぁ-ゖ]{2,4}|\s[一-龥々]{1,4})?|[ァ-ヶー]{2,8})\s?(様|さま|さん|先生|殿)`)

// jaIntroRE matches a Japanese self-introduction: "田中花子と申します",
// "田中さくらと申します", "名前は田中です", "スミスといいます".
var jaIntroRE = regexp.MustCompile(`(名前は|私は|わたしは)?\s*([一-龥々]{1,4}(?:\s?[一-龥々]{1,4}|\s?[ぁ-ゖ]{2,4})?|[ァ-ヶー]{2,8})\s*(と申します|といいます|と言います|です)`)

// zhNameRE matches a Chinese surname or name with an honorific ("王先生",
// "王小明先生", "李女士").
var zhNameRE = regexp.MustCompile(`([一-龥]{1,3})(先生|女士|小姐)`)

// zhIntroRE matches a Chinese self-introduction: "我叫王小明", "我的名字是王小明"
// ("我是" introduces a name only with an honorific, "我是王先生": "我是上班族"
// is no name).
var zhIntroRE = regexp.MustCompile(`(我叫|我的名字是|我的名字叫)([一-龥]{2,3})`)

// honorificName builds the finding for a name said with an honorific:
// the user's own when the assistant addresses them by it (a vocative
// opening a message or clause), otherwise a person the speaker names
// (contact_name).
func honorificName(text string, s, e int, role llms.ChatMessageType) finding {
	f := finding{start: s, end: e, kind: "name", base: "contact_name", value: text[s:e], cat: Entity}
	if selfLead.MatchString(text[max(0, s-40):s]) {
		// "我是王先生": the speaker's own name.
		return selfIntroFinding(text, s, e, text[s:e], role, false)
	}
	if role == llms.ChatMessageTypeAI {
		lead := cjkGreeting.ReplaceAllString(itext.StripGreeting(clauseBefore(text, s, 40)), "")
		next, _ := utf8.DecodeRuneInString(text[e:])
		if strings.TrimSpace(lead) == "" || strings.ContainsRune(",、，!！。", next) {
			f.base, f.mode, f.weak = "user_name", firstWins, true
		}
	}
	return f
}

// cjkGreeting matches greetings in Korean, Japanese and Chinese (and the
// punctuation after them) before a name the assistant addresses.
var cjkGreeting = regexp.MustCompile(`(?:안녕하세요|안녕하십니까|반갑습니다|こんにちは|こんばんは|おはようございます|いつもお世話になっております|お世話になっております|您好|你好|早上好|晚上好)[\s,、，!！。]*`)

// selfLead is what precedes a name the speaker gives as their own.
var selfLead = regexp.MustCompile(`(?:저는|제\s?이름은|我是|我叫|我的名字是|本人|私は|わたしは|名前は)\s*$`)

func buildKoName(text string, m []int, role llms.ChatMessageType) (finding, bool) {
	name, s, _ := group(text, m, 1)
	e := m[1]
	if r, _ := utf8.DecodeLastRuneInString(text[:s]); s > 0 && unicode.Is(unicode.Hangul, r) {
		return finding{}, false
	}
	if !koName(name) {
		return finding{}, false
	}
	return honorificName(text, s, e, role), true
}

// koName reports whether a run of Hangul may be a person's name: it
// starts with a family name and is no title.
func koName(name string) bool {
	r, _ := utf8.DecodeRuneInString(name)
	return strings.ContainsRune(koSurnames, r) && !notKoNames[name] && !notKoNames[strings.TrimSuffix(name, "님")]
}

func buildKoIntro(text string, m []int, role llms.ChatMessageType) (finding, bool) {
	lead, ls, _ := group(text, m, 1)
	name, s, e := group(text, m, 2)
	if r, _ := utf8.DecodeLastRuneInString(text[:s]); s > 0 && unicode.Is(unicode.Hangul, r) {
		return finding{}, false
	}
	if !koName(name) {
		return finding{}, false
	}
	if !strings.Contains(lead, "이름") && !strings.HasPrefix(lead, "저") && !strings.HasPrefix(lead, "전") {
		// A bare "김민지입니다" introduces the speaker only when it opens the
		// message (after a greeting), as on a phone line.
		if !koIntroLead.MatchString(clauseBefore(text, ls, 200)) {
			return finding{}, false
		}
	}
	return selfIntroFinding(text, s, e, name, role, strings.Contains(lead, "이름")), true
}

// koIntroLead is what may precede a bare "김민지입니다" for it to introduce
// the speaker: nothing, or a greeting.
var koIntroLead = regexp.MustCompile(`^\s*(?:안녕하세요|안녕하십니까|여보세요|반갑습니다|처음 뵙겠습니다)?[\s,!.]*$`)

// selfIntroFinding is the finding for a name the speaker gives as their
// own; strong marks a "my name is" rather than a passing "I'm".
func selfIntroFinding(text string, s, e int, name string, role llms.ChatMessageType, strong bool) finding {
	base := "user_name"
	if role == llms.ChatMessageTypeAI {
		base = "agent_name"
	}
	weak := !strong || !correctionCue.MatchString(clauseBefore(text, s, 40))
	return finding{start: s, end: e, kind: "name", base: base, value: name, cat: Entity, mode: firstWins, weak: weak}
}

// hasKana reports whether text holds hiragana or katakana: it is
// Japanese, not Chinese, which shares 先生 and the Han letters.
func hasKana(text string) bool {
	return strings.IndexFunc(text, func(r rune) bool { return r >= 0x3041 && r <= 0x30FF }) >= 0
}

func buildJaName(text string, m []int, role llms.ChatMessageType) (finding, bool) {
	name, s, _ := group(text, m, 1)
	honorific, _, _ := group(text, m, 2)
	e := m[1]
	if honorific == "先生" && !hasKana(text) {
		return finding{}, false // Chinese: zhNameRE's
	}
	if notJaNames[name] || notJaNames[strings.TrimPrefix(name, "お")] || strings.HasPrefix(text[e:], "々") {
		return finding{}, false
	}
	if r, _ := utf8.DecodeLastRuneInString(text[:s]); s > 0 && unicode.In(r, unicode.Katakana) {
		return finding{}, false
	}
	return honorificName(text, s, e, role), true
}

func buildJaIntro(text string, m []int, role llms.ChatMessageType) (finding, bool) {
	lead, _, _ := group(text, m, 1)
	name, s, e := group(text, m, 2)
	verb, _, _ := group(text, m, 3)
	if verb == "です" && lead != "名前は" {
		return finding{}, false // "私は学生です": a name only after 名前は
	}
	if notJaNames[name] {
		return finding{}, false
	}
	return selfIntroFinding(text, s, e, name, role, lead == "名前は" || verb != "です"), true
}

func buildZhName(text string, m []int, role llms.ChatMessageType) (finding, bool) {
	name, s, _ := group(text, m, 1)
	if hasKana(text) {
		return finding{}, false // Japanese: jaNameRE's
	}
	// Only the family name and given name before the honorific: the
	// longest tail of the run that starts with a family name.
	for name != "" {
		r, n := utf8.DecodeRuneInString(name)
		if strings.ContainsRune(zhSurnames, r) {
			break
		}
		name, s = name[n:], s+n
	}
	if name == "" {
		return finding{}, false
	}
	return honorificName(text, s, m[1], role), true
}

func buildZhIntro(text string, m []int, role llms.ChatMessageType) (finding, bool) {
	name, s, e := group(text, m, 2)
	if r, _ := utf8.DecodeRuneInString(name); !strings.ContainsRune(zhSurnames, r) {
		return finding{}, false
	}
	return selfIntroFinding(text, s, e, name, role, true), true
}

// intlSelfIntro is the part of the self-introduction expression for
// French, German, Spanish and Italian.
const intlSelfIntro = `|je\s+m['’]appelle|mon\s+nom\s+est|ich\s+hei(?:ße|sse)|mein\s+name\s+ist|me\s+llamo|mi\s+nombre\s+es|mi\s+chiamo`

// ----------------------------------------------------------------------------
// Amount keys

// intlAmountKeys map a word in the clause before an amount, in Korean,
// Japanese, Chinese, German, French or Spanish, to the amount's key.
var intlAmountKeys = []struct{ stem, key string }{
	{"환불", "refund_amount"}, {"返金", "refund_amount"}, {"退款", "refund_amount"}, {"rückerstatt", "refund_amount"}, {"rembours", "refund_amount"}, {"reembols", "refund_amount"},
	{"가격", "price"}, {"価格", "price"}, {"値段", "price"}, {"价格", "price"}, {"价钱", "price"}, {"preis", "price"}, {"prix", "price"}, {"precio", "price"},
	{"결제", "payment"}, {"지불", "payment"}, {"支払", "payment"}, {"支付", "payment"}, {"付款", "payment"}, {"bezahlt", "payment"}, {"payé", "payment"}, {"pagado", "payment"},
	{"합계", "total"}, {"총액", "total"}, {"合計", "total"}, {"合计", "total"}, {"总计", "total"}, {"总共", "total"}, {"gesamt", "total"},
	{"수수료", "fee"}, {"요금", "fee"}, {"料金", "fee"}, {"手数料", "fee"}, {"费用", "fee"}, {"手续费", "fee"}, {"gebühr", "fee"}, {"frais", "fee"},
	{"보증금", "deposit"}, {"保証金", "deposit"}, {"押金", "deposit"}, {"定金", "deposit"}, {"kaution", "deposit"},
	{"잔액", "balance"}, {"残高", "balance"}, {"余额", "balance"},
	{"예산", "budget"}, {"予算", "budget"}, {"预算", "budget"},
}

// intlAmountKey names the amount at text[s:e] after the nearest word of
// intlAmountKeys in its clause, before it or after it (Korean and
// Japanese put the verb last: "3만 원 결제했어요"), or "".
func intlAmountKey(text string, s, e int) string {
	before, after := clauseBefore(text, s, 60), clauseAfter(text, e, 40)
	key, dist := "", -1
	for _, k := range intlAmountKeys {
		if i := strings.LastIndex(before, k.stem); i >= 0 && (dist < 0 || len(before)-i < dist) {
			key, dist = k.key, len(before)-i
		}
		if i := strings.Index(after, k.stem); i >= 0 && (dist < 0 || i < dist) {
			key, dist = k.key, i
		}
	}
	return key
}
