package extractive_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	. "github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/summary/internal/extractive"
)

// FuzzExtractFacts: any text, as prose from the user or as a tool result
// or tool-call arguments, yields well-formed facts and a narrative within
// its cap, and never panics.
func FuzzExtractFacts(f *testing.F) {
	for _, seed := range []string{
		"My name is Dana Whitfield, order #A-7731, $129.99 on 2026-12-05 at 3pm, dana@example.com, +1 415 555 0134, 2 bags",
		`{"reservation_id":"NM1VX1","flights":[{"flight_number":"HAT136","date":"2024-05-20"}],"payment_methods":[{"id":"credit_card_1","amount":250.5}]}`,
		`[{"id":1},{"id":"x"},null,true,[["deep"]]]`,
		`{"a":{"b":{"c":{"d":{"e":"f"}}}}}`, `{"id":`, "₩50,000 KRW 가나다", "\xff\xfe", "",
		"Please ship to 4410 Larkspur Lane, Apt 3B, Portland, OR 97205. No calls after 6pm, I'm allergic to peanuts.",
		"This is Max, my dog. Hi, this is Dana. My old number 415-555-0134 no longer works, use 503-555-0199.",
		"SKU KT-2209, model number RTX4090, return RMA-77104; deliver it tomorrow or next Friday, in 2 weeks.",
		`[{"flight_number":"HAT1"},{"flight_number":"HAT2"},{"flight_number":"HAT3"},{"flight_number":"HAT4"}]`,
		"I'd prefer a window seat, thanks. Don't call me before 9am, I work nights. 1 Main St. 2 Oak Ave.",
		"DON'T\tRING me, I CAN\nNOT climb stairs; I need\na WHEELCHAIR. ORDER 12345, ſku KX-4471, 3 BAGS, 10:30 P.M.",
		"Never leave it at the door. I am unable to lift 2 boxes. Let’s go with the refund, it has\nbeen approved.",
		// Korean, Japanese, Chinese and European values (extract_intl.go).
		"안녕하세요, 저는 김민지입니다. 주문번호 ORD-58213 건이에요. 결제 금액은 129,990원, 쿠폰 3만 원. 전화 010-1234-5678, +82 10-1234-5678.",
		"주소는 서울시 강남구 테헤란로 152입니다. 택배로 2개, 카드로 3만원. 김민지 님, 고객님, 박서준씨. 예전 주소는 세종대로 1이에요. 주문번호는 2025-7745-2600",
		"こんにちは、田中様。注文番号はJP-44817です。金額は12万円、¥3,980でした！電話番号は090-1234-5678、住所は東京都渋谷区神南1丁目2-3です。",
		"田中花子と申します。名前は佐藤です。私は学生です。お客様、様々な方法。神奈川県横浜市中区山下町１２３番地。スミスさん",
		"您好，王先生。我叫王小明，订单号是CN-66120。金额是¥1,280元，3万元。电话+86 138 0013 8000，地址是上海市浦东新区世纪大道100号。收件人是李女士。",
		"Meine Bestellnummer ist 4711-AB, Müllerstraße 12, 10115 Berlin, Berliner Straße 5. 49,90 € und 1.249,50 EUR. Ich heiße Jürgen Groß. ICH HEIẞE X, STRAẞE 7",
		"Je m'appelle Hélène Dubois. Commande n° FR-2291, 12 rue de la Paix, 75002 Paris. Me llamo Íñigo Peña, pedido ES-7781, Calle Mayor 5. RÉSERVATION 12AB",
		"로\xff 1 丁目\xfe号 様\x80 ₩\xff1,000원 。！？。。",
		"서울시 강남구 역삼동 123-45번지, 배송은 2026년 12월 5일. 誕生日は1990年4月1日、12月24日に届けて。我在2026年11月3日下单。",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		// The prefilters are necessary conditions only: they never change
		// what is found.
		if m := extractive.PrefilterMismatch(text); m != "" {
			t.Fatal(m)
		}
		msgs := []llms.ChatMessage{
			llms.HumanChatMessage{Content: text},
			llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: "c", Type: "function", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: text}}}},
			llms.ToolChatMessage{ID: "c", Content: text},
		}
		facts := ExtractFacts(msgs, nil)
		keys := map[string]bool{}
		for _, fact := range facts {
			if strings.TrimSpace(fact.Key) == "" || strings.TrimSpace(fact.Value) == "" || !fact.Category.Valid() {
				t.Fatalf("malformed fact %+v", fact)
			}
			if keys[fact.Key] {
				t.Fatalf("duplicate key %q in %+v", fact.Key, facts)
			}
			keys[fact.Key] = true
			if utf8.ValidString(text) && !utf8.ValidString(fact.Value) {
				t.Fatalf("fact value is not UTF-8: %q", fact.Value)
			}
		}
		at := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
		res, err := NewExtractiveService().Summarize(t.Context(), Request{Messages: msgs, SentAt: []time.Time{at, at, at}})
		if err != nil && !strings.Contains(err.Error(), "found nothing") {
			t.Fatalf("Summarize: %v", err)
		}
		if n := utf8.RuneCountInString(res.Narrative); n > MaxExtractiveNarrative {
			t.Fatalf("narrative has %d runes, cap %d", n, MaxExtractiveNarrative)
		}
		if utf8.ValidString(text) && !utf8.ValidString(res.Narrative) {
			t.Fatalf("narrative is not UTF-8: %q", res.Narrative)
		}
	})
}
