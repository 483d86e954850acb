package standin

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Language names a generated conversation's language.
type Language string

// The languages Talk writes.
const (
	Korean   Language = "ko"
	Japanese Language = "ja"
	Chinese  Language = "zh"
	German   Language = "de"
	English  Language = "en"
	Code     Language = "code" // Go source with English comments
)

// Languages lists every language Talk writes.
var Languages = []Language{Korean, Japanese, Chinese, German, English, Code}

// phrases are the building blocks of each language's sentences: everyday
// customer-service talk, with the script's own punctuation.
var phrases = map[Language][]string{
	Korean: {"안녕하세요", "주문하신 상품은", "어제 발송되었습니다", "배송 조회를 해 보니", "서울 강남구 테헤란로", "고객님의 전화번호는",
		"환불 요청을 접수했습니다", "결제 금액은 129,990원입니다", "다음 주 화요일까지", "택배 기사님께서", "문 앞에 두고 가셨다고 합니다",
		"교환을 원하시면", "영수증을 함께 보내 주세요", "회의가 길어져서", "커피 머신이 또 고장 났어요", "내일 오전에 다시 연락드리겠습니다",
		"김민지 님께서", "주소를 변경하고 싶습니다", "포인트가 적립되지 않았어요", "쿠폰을 사용할 수 있나요", "재고가 부족해서",
		"죄송합니다만", "확인해 보겠습니다", "감사합니다", "그렇군요", "정말 다행이네요", "처리 상태를 알려 주세요", "상담원 연결을 원합니다"},
	Japanese: {"こんにちは", "ご注文の商品は", "昨日発送されました", "配送状況を確認したところ", "東京都渋谷区神南一丁目", "お客様の電話番号は",
		"返金のご依頼を承りました", "お支払い金額は12,800円です", "来週の火曜日までに", "配達員の方が", "玄関前に置いたとのことです",
		"交換をご希望でしたら", "領収書も一緒にお送りください", "会議が長引いたので", "コーヒーメーカーがまた壊れました", "明日の午前中に改めてご連絡します",
		"田中様が", "住所を変更したいのですが", "ポイントが付与されていません", "クーポンは使えますか", "在庫が不足しているため",
		"申し訳ございませんが", "確認いたします", "ありがとうございます", "なるほど", "本当に良かったです", "処理状況を教えてください"},
	Chinese: {"你好", "您订购的商品", "昨天已经发货了", "查询物流后发现", "上海市浦东新区世纪大道", "您的电话号码是",
		"退款申请已经受理", "支付金额为899元", "下周二之前", "快递员说", "已经放在门口了",
		"如果您想换货", "请一并寄回发票", "会议拖得很久", "咖啡机又坏了", "明天上午我们会再联系您",
		"王先生", "我想修改收货地址", "积分没有到账", "优惠券可以使用吗", "由于库存不足",
		"非常抱歉", "我来帮您查一下", "谢谢", "原来如此", "真是太好了", "请告诉我处理进度"},
	German: {"Guten Tag", "Ihre Bestellung", "wurde gestern verschickt", "laut Sendungsverfolgung", "Müllerstraße 12 in München", "Ihre Telefonnummer lautet",
		"wir haben Ihre Rückerstattung bearbeitet", "der Betrag beläuft sich auf 249,90 €", "bis nächsten Dienstag", "der Zusteller hat",
		"das Paket vor der Tür abgelegt", "falls Sie einen Umtausch wünschen", "legen Sie bitte die Quittung bei", "die Besprechung dauerte länger",
		"die Kaffeemaschine ist schon wieder kaputt", "morgen früh melden wir uns erneut", "Frau Schröder", "ich möchte meine Anschrift ändern",
		"die Treuepunkte wurden nicht gutgeschrieben", "kann ich den Gutschein einlösen", "wegen Lieferengpässen", "es tut uns leid",
		"ich prüfe das sofort", "vielen Dank", "verstehe", "das ist erfreulich", "bitte teilen Sie mir den Bearbeitungsstand mit"},
	English: {"Hello there", "your order", "was shipped yesterday", "according to the tracking page", "221B Baker Street in London", "your phone number is",
		"we processed your refund request", "the amount comes to $129.99", "by next Tuesday", "the courier said", "the parcel was left at the door",
		"if you would like an exchange", "please include the receipt", "the meeting ran long", "the coffee machine is broken again",
		"we will get back to you tomorrow morning", "Ms. Johnson", "I would like to change my address", "the loyalty points were not credited",
		"can I still use the coupon", "because stock is running low", "we are sorry", "let me check that for you", "thank you",
		"I see", "that is good news", "please tell me the status of my case"},
	Code: {"func (s *Store) Load(ctx context.Context, id string) (*Order, error) {", "if err != nil {", "return nil, fmt.Errorf(\"load %q: %w\", id, err)",
		"}", "for i, item := range order.Items {", "total += item.Price * float64(item.Qty)", "// Retry once: the upstream API drops idle connections.",
		"rows, err := s.db.QueryContext(ctx, `SELECT id, status FROM orders WHERE customer_id = $1`, customerID)", "defer rows.Close()",
		"var out []Order", "if len(out) == 0 {", "return ErrNotFound", "ctx, cancel := context.WithTimeout(ctx, 5*time.Second)", "defer cancel()",
		"resp, err := http.DefaultClient.Do(req)", "switch resp.StatusCode {", "case http.StatusOK:", "case http.StatusTooManyRequests:",
		"log.Printf(\"order %s: %d items\", o.ID, len(o.Items))", "type Order struct {", "ID string `json:\"id\"`", "Status string `json:\"status\"`",
		"x := map[string]int{\"a\": 1, \"b\": 2}", "sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })"},
}

// enders close a sentence in each script.
var enders = map[Language][]string{
	Korean: {". ", "? ", "! "}, Japanese: {"。", "？", "！"}, Chinese: {"。", "？", "！"},
	German: {". ", "? ", "! "}, English: {". ", "? ", "! "}, Code: {"\n", "\n\t", "\n\n"},
}

// joiners join phrases within a sentence.
var joiners = map[Language]string{Korean: " ", Japanese: "、", Chinese: "，", German: ", ", English: ", ", Code: "\n\t"}

// Text returns a text of about runes characters in lang, drawn from rng.
func Text(rng *rand.Rand, lang Language, runes int) string {
	var b strings.Builder
	n := 0
	for n < runes {
		k := 2 + rng.IntN(4)
		for i := range k {
			p := phrases[lang][rng.IntN(len(phrases[lang]))]
			if i > 0 {
				b.WriteString(joiners[lang])
			}
			b.WriteString(p)
			n += len([]rune(p)) + 1
		}
		b.WriteString(enders[lang][rng.IntN(len(enders[lang]))])
	}
	return strings.TrimSpace(b.String())
}

// ToolResult returns a JSON tool result of about entries order records
// whose free-text fields are in lang.
func ToolResult(rng *rand.Rand, lang Language, entries int) string {
	type item struct {
		SKU   string  `json:"sku"`
		Name  string  `json:"name"`
		Qty   int     `json:"qty"`
		Price float64 `json:"price"`
	}
	type order struct {
		OrderID string `json:"order_id"`
		Status  string `json:"status"`
		Address string `json:"address"`
		Note    string `json:"note"`
		Items   []item `json:"items"`
	}
	var out []order
	for range entries {
		o := order{
			OrderID: fmt.Sprintf("#A-%04d", rng.IntN(10000)),
			Status:  []string{"shipped", "pending", "delivered", "returned"}[rng.IntN(4)],
			Address: Text(rng, lang, 15),
			Note:    Text(rng, lang, 30),
		}
		for range 1 + rng.IntN(3) {
			o.Items = append(o.Items, item{SKU: fmt.Sprintf("SKU-%06d", rng.IntN(1_000_000)), Name: Text(rng, lang, 8),
				Qty: 1 + rng.IntN(5), Price: float64(rng.IntN(100_000)) / 100})
		}
		out = append(out, o)
	}
	b, _ := json.Marshal(out)
	return string(b)
}
