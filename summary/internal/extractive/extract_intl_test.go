package extractive_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	. "github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/summary/internal/extractive"
)

func TestExtractKorean(t *testing.T) {
	runExtractCases(t, []extractCase{
		{"self-introduction, order id, amount in 원",
			[]llms.ChatMessage{user("안녕하세요, 저는 김민지입니다. 주문번호 ORD-58213 건으로 연락드려요. 결제 금액은 129,990원이었어요.")},
			map[string]string{"user_name": "김민지", "order_id": "ORD-58213", "payment": "129,990원"}},
		{"e-mail, phone and road address glued to particles",
			[]llms.ChatMessage{user("제 이메일은 minji.kim@example.co.kr이고 전화번호는 010-1234-5678입니다. 주소는 서울시 강남구 테헤란로 152입니다.")},
			map[string]string{"email": "minji.kim@example.co.kr", "phone": "010-1234-5678", "delivery_address": "서울시 강남구 테헤란로 152"}},
		{"a bare road address in a delivery clause; counters are no addresses",
			[]llms.ChatMessage{user("테헤란로 152로 보내 주세요. 택배로 2개 보냈어요. 카드로 3만 원 결제했어요.")},
			map[string]string{"delivery_address": "테헤란로 152", "payment": "3만 원"}},
		{"won sign, 만 원 and +82",
			[]llms.ChatMessage{user("₩49,000 환불해 주시고 연락은 +82 10-9876-5432로 주세요. 쿠폰은 5만원이에요.")},
			map[string]string{"refund_amount": "₩49,000", "phone": "+82 10-9876-5432", "amount": "5만원"}},
		{"the assistant addressing the user with 님",
			[]llms.ChatMessage{agent("김민지 님, 확인했습니다.")},
			map[string]string{"user_name": "김민지 님"}},
		{"a recipient with 씨 said by the user",
			[]llms.ChatMessage{user("받는 사람은 박서준 씨예요.")},
			map[string]string{"contact_name": "박서준 씨"}},
		{"titles with 님 are no names; a road word before a counter is no address",
			[]llms.ChatMessage{agent("고객님, 선생님께 전달했습니다."), user("오후 3시로 5명 예약하고 싶어요.")},
			nil},
		{"kinship words, titles and occupations are no names",
			[]llms.ChatMessage{user("부모님이랑 박사님께 물어봤어요. 저는 주부입니다. 마음씨가 좋아요. 하나님 감사합니다.")},
			nil},
		{"an id shaped like a phone number after 주문번호 stays an id",
			[]llms.ChatMessage{user("주문번호는 2025-7745-2600이에요. 제 번호는 010-2222-3333입니다.")},
			map[string]string{"order_id": "2025-7745-2600", "phone": "010-2222-3333"}},
		{"a lot-number address and a delivery date",
			[]llms.ChatMessage{user("주소는 서울시 강남구 역삼동 123-45번지예요. 배송은 2026년 12월 5일에 받고 싶어요.")},
			map[string]string{"delivery_address": "서울시 강남구 역삼동 123-45번지", "delivery_date": "2026년 12월 5일"}},
		{"an old address is not a fact",
			[]llms.ChatMessage{user("예전 주소는 서울시 마포구 월드컵북로 10이었어요.")},
			nil},
	})
}

func TestExtractJapanese(t *testing.T) {
	runExtractCases(t, []extractCase{
		{"honorific, order id, 万円, phone and address without spaces",
			[]llms.ChatMessage{user("注文番号はJP-44817です。金額は12万円でした。電話番号は090-1234-5678、住所は東京都渋谷区神南1丁目2-3です。")},
			map[string]string{"order_id": "JP-44817", "amount": "12万円", "phone": "090-1234-5678", "delivery_address": "東京都渋谷区神南1丁目2-3"}},
		{"self-introduction with と申します; お客様 and 様々 are no names",
			[]llms.ChatMessage{user("田中花子と申します。"), agent("お客様、様々な方法がございます。")},
			map[string]string{"user_name": "田中花子"}},
		{"the assistant greeting the user by name",
			[]llms.ChatMessage{agent("こんにちは、田中様。ご連絡ありがとうございます。")},
			map[string]string{"user_name": "田中様"}},
		{"a given name in hiragana, in an introduction and with さん",
			[]llms.ChatMessage{user("田中さくらと申します。"), user("受取人は山田ゆみさんです。")},
			map[string]string{"user_name": "田中さくら", "contact_name": "山田ゆみさん"}},
		{"everyday words with 様 and さん are no names",
			[]llms.ChatMessage{user("お母さんと同様に、仕様を確認しました。ご苦労さまです。お医者さんに行きます。")},
			nil},
		{"dates keyed by what they are for",
			[]llms.ChatMessage{user("誕生日は1990年4月1日です。12月24日に届けてください。")},
			map[string]string{"birth_date": "1990年4月1日", "delivery_date": "12月24日"}},
		{"名前は… です is a name, 私は… です is not",
			[]llms.ChatMessage{user("私は学生です。名前は佐藤です。")},
			map[string]string{"user_name": "佐藤"}},
		{"yen sign, +81 and a block address with 番地",
			[]llms.ChatMessage{user("返金は¥3,980でお願いします。+81 90-1111-2222まで。神奈川県横浜市中区山下町123番地に住んでいます。")},
			map[string]string{"refund_amount": "¥3,980", "phone": "+81 90-1111-2222", "delivery_address": "神奈川県横浜市中区山下町123番地"}},
	})
}

func TestExtractChinese(t *testing.T) {
	runExtractCases(t, []extractCase{
		{"order id, 元 and yuan sign, +86 and an address after 地址是",
			[]llms.ChatMessage{user("订单号是CN-66120。金额是¥1,280元。电话+86 138 0013 8000，地址是上海市浦东新区世纪大道100号。")},
			map[string]string{"order_id": "CN-66120", "amount": "¥1,280元", "phone": "+86 138 0013 8000", "delivery_address": "上海市浦东新区世纪大道100号"}},
		{"self-introduction and an address after 住在",
			[]llms.ChatMessage{user("我叫王小明，我住在北京市朝阳区建国路88号。")},
			map[string]string{"user_name": "王小明", "delivery_address": "北京市朝阳区建国路88号"}},
		{"an order date",
			[]llms.ChatMessage{user("我在2026年11月3日下单的。")},
			map[string]string{"order_date": "2026年11月3日"}},
		{"我是 with an honorific is the speaker, without one no name; 老师 is no honorific",
			[]llms.ChatMessage{user("我是王先生。"), user("我是上班族，我的高中老师很好。")},
			map[string]string{"user_name": "王先生"}},
		{"the assistant addressing the user as 先生; a recipient 女士",
			[]llms.ChatMessage{agent("王先生，您好。"), user("收件人是李女士，退款3万元。")},
			map[string]string{"user_name": "王先生", "contact_name": "李女士", "refund_amount": "3万元"}},
	})
}

func TestExtractEuropean(t *testing.T) {
	runExtractCases(t, []extractCase{
		{"German order number, street with ß, euro amount with a decimal comma",
			[]llms.ChatMessage{user("Meine Bestellnummer ist 4711-AB, die Adresse ist Müllerstraße 12, 10115 Berlin. Der Betrag war 49,90 €.")},
			map[string]string{"order_id": "4711-AB", "delivery_address": "Müllerstraße 12, 10115 Berlin", "amount": "49,90 €"}},
		{"German name and a two-word street",
			[]llms.ChatMessage{user("Ich heiße Jürgen Groß und wohne in der Berliner Straße 5.")},
			map[string]string{"user_name": "Jürgen Groß", "delivery_address": "Berliner Straße 5"}},
		{"French name, order and address",
			[]llms.ChatMessage{user("Bonjour, je m'appelle Hélène Dubois. Ma commande n° FR-2291, adresse 12 rue de la Paix, 75002 Paris.")},
			map[string]string{"user_name": "Hélène Dubois", "order_id": "FR-2291", "delivery_address": "12 rue de la Paix, 75002 Paris"}},
		{"whose address: a friend's, a work one, the user's own despite famille and bearbeitet",
			[]llms.ChatMessage{
				user("L'adresse de mon amie est 3 rue Victor Hugo."),
				user("Meine Arbeitsadresse: Hauptstraße 9."),
				user("Ma famille et moi habitons au 8 avenue Foch."),
				user("Die Bestellung wurde bearbeitet, bitte an Gartenweg 4 liefern."),
			},
			map[string]string{"location": "3 rue Victor Hugo", "work_address": "Hauptstraße 9", "delivery_address": "Gartenweg 4"}},
		{"a house number with a letter",
			[]llms.ChatMessage{user("Ich wohne in der Lindenallee 17b, 50667 Köln.")},
			map[string]string{"delivery_address": "Lindenallee 17b, 50667 Köln"}},
		{"French phone numbers in pairs",
			[]llms.ChatMessage{user("Appelez-moi au 06 12 34 56 78 ou au +33 6 98 76 54 32.")},
			map[string]string{"phone": "06 12 34 56 78", "alternate_phone": "+33 6 98 76 54 32"}},
		{"Spanish name, order and address",
			[]llms.ChatMessage{user("Me llamo Íñigo Peña, mi pedido es ES-7781 y vivo en Calle Mayor 5.")},
			map[string]string{"user_name": "Íñigo Peña", "order_id": "ES-7781", "delivery_address": "Calle Mayor 5"}},
		{"English amounts keep their form",
			[]llms.ChatMessage{user("The refund is $1,240.50 and the fee $12.")},
			map[string]string{"refund_amount": "$1,240.50", "fee": "$12"}},
	})
}

// TestIntlSentencesInTheNarrative: the narrative of a Japanese or Chinese
// conversation is made of its own sentences, split at 。！？, in the
// conversation's script.
func TestIntlSentencesInTheNarrative(t *testing.T) {
	msgs := []llms.ChatMessage{
		user("注文番号はJP-44817です。商品が壊れていました！返金をお願いします。"),
		agent("承知いたしました。返金の手続きを進めます。"),
	}
	res, err := NewExtractiveService().Summarize(t.Context(), Request{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Narrative, "User: 注文番号はJP-44817です。") {
		t.Errorf("narrative lacks the user's first sentence, split at 。: %q", res.Narrative)
	}
	if strings.Contains(res.Narrative, "です。商品") {
		t.Errorf("narrative did not split at 。: %q", res.Narrative)
	}
}

// TestHasCJKIsRuneTest: hasCJK's byte test agrees with decoding the runes.
func TestHasCJKIsRuneTest(t *testing.T) {
	for _, s := range []string{"", "plain", "Müllerstraße ẞ “x” — …", "\u2fff", "\u3000", "。", "한", "\uff01", "\U0001F600", "\xff\xe3"} {
		want := strings.IndexFunc(s, func(r rune) bool { return r >= 0x3000 && r != utf8.RuneError }) >= 0
		if got := extractive.HasCJK(s); got != want && utf8.ValidString(s) {
			t.Errorf("HasCJK(%q) = %v, want %v", s, got, want)
		}
	}
}
