package memory_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// The languages of TestPlantedFactsInEveryScript: how each draws its six
// values, says them in its opening turns and talks about other things.

// plantedValues are the six values of one probe run, as said.
type plantedValues struct {
	order, amount, email, phone, address, name string
}

func (p plantedValues) list() [][2]string {
	return [][2]string{{"order id", p.order}, {"amount", p.amount}, {"email", p.email}, {"phone", p.phone}, {"address", p.address}, {"name", p.name}}
}

// scriptProbe is one language's probe: how its values are drawn and
// said, what the assistant answers (never repeating a value), and its
// filler.
type scriptProbe struct {
	lang string
	// plant draws the values and the opening turns (user, assistant) that
	// say each of them once.
	plant func(rng *rand.Rand) (plantedValues, [][2]string)
	// filler draws one turn of unrelated talk.
	filler func(rng *rand.Rand) [2]string
}

func pick[T any](rng *rand.Rand, xs ...T) T { return xs[rng.IntN(len(xs))] }

// grouped writes n with thousands separators ("129,990").
func grouped(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func randomEmail(rng *rand.Rand) string {
	return fmt.Sprintf("%s.%s%d@%s", pick(rng, "minji", "haru", "wei", "yuki", "jisoo", "lin", "sora", "hana"),
		pick(rng, "kim", "tanaka", "wang", "park", "sato", "chen", "lee", "ito"), rng.IntN(100),
		pick(rng, "example.com", "mail.example.co.kr", "example.jp", "example.cn", "corp.example.net"))
}

func randomOrder(rng *rand.Rand, prefixes ...string) string {
	return pick(rng,
		fmt.Sprintf("%s-%05d", pick(rng, prefixes...), 10000+rng.IntN(90000)),
		fmt.Sprintf("%s%08d", pick(rng, prefixes...), rng.IntN(100000000)),
		fmt.Sprintf("%d-%04d-%04d", 2020+rng.IntN(7), rng.IntN(10000), rng.IntN(10000)))
}

// hasFinalConsonant reports whether a Hangul syllable ends in a consonant
// (it takes 이에요 rather than 예요).
func hasFinalConsonant(s string) bool {
	r := []rune(s)
	last := r[len(r)-1]
	return last >= 0xAC00 && last <= 0xD7A3 && (last-0xAC00)%28 != 0
}

var koreanProbe = scriptProbe{
	lang: "Korean",
	plant: func(rng *rand.Rand) (plantedValues, [][2]string) {
		name := pick(rng, "김", "이", "박", "최", "정", "강", "윤", "한") + pick(rng, "민지", "서준", "지우", "하은", "도윤", "수아", "예준", "지민")
		p := plantedValues{
			order: randomOrder(rng, "ORD", "KR", "A"),
			amount: pick(rng,
				grouped(1000*(1+rng.IntN(999))-10*rng.IntN(2))+"원",
				"₩"+grouped(1000*(1+rng.IntN(999))),
				fmt.Sprintf("%d만 원", 1+rng.IntN(99)),
				fmt.Sprintf("%d만원", 1+rng.IntN(99))),
			email: randomEmail(rng),
			phone: pick(rng,
				fmt.Sprintf("010-%04d-%04d", rng.IntN(10000), rng.IntN(10000)),
				fmt.Sprintf("+82 10-%04d-%04d", rng.IntN(10000), rng.IntN(10000))),
			address: pick(rng,
				fmt.Sprintf("서울시 강남구 테헤란로 %d", 1+rng.IntN(500)),
				fmt.Sprintf("부산시 해운대구 해운대로 %d", 1+rng.IntN(900)),
				fmt.Sprintf("서울특별시 마포구 월드컵북로 %d", 1+rng.IntN(400)),
				fmt.Sprintf("테헤란로 %d", 1+rng.IntN(500)),
				fmt.Sprintf("세종대로 %d", 1+rng.IntN(200))),
			name: name,
		}
		is := "예요"
		if hasFinalConsonant(name) {
			is = "이에요"
		}
		intro := pick(rng, "안녕하세요, 저는 "+name+"입니다.", "제 이름은 "+name+is+".", "안녕하세요. "+name+"입니다.")
		if rng.IntN(3) == 0 {
			p.name = name + " 님"
			intro = "받는 사람은 " + p.name + "이에요."
		}
		return p, [][2]string{
			{intro + " 주문번호 " + p.order + " 건으로 문의드려요. 결제 금액은 " + p.amount + "이었어요.", "네, 확인해 보겠습니다. 어떤 문제가 있으신가요?"},
			{"상자가 찌그러져서 왔어요. 연락은 " + p.email + " 로 주시고, 전화번호는 " + p.phone + " 입니다.", "불편을 드려 죄송합니다. 연락처를 기록했습니다."},
			{"교환품은 " + p.address + " 로 보내 주세요.", "알겠습니다. 교환 절차를 진행하겠습니다."},
		}
	},
	filler: func(rng *rand.Rand) [2]string {
		users := []string{
			"요즘 날씨가 정말 좋네요. 주말에 한강에 가 볼까 해요.",
			"어제 친구랑 새로 생긴 카페에 갔는데 라떼가 맛있었어요.",
			"%d시쯤 퇴근하고 헬스장에 가는 게 요즘 루틴이에요.",
			"드라마를 %d편이나 몰아서 봤더니 눈이 피곤해요.",
			"강아지가 산책을 너무 좋아해서 하루에 두 번 나가요.",
			"다음 달에 제주도 여행을 계획하고 있어요. 바다가 보고 싶어요!",
			"요리를 배우고 있는데 김치찌개는 아직 어렵네요.",
			"책을 읽으려고 하는데 자꾸 휴대폰을 보게 돼요.",
			"동생이 대학에 합격해서 가족끼리 저녁을 먹었어요.",
			"비가 와서 우산을 챙겼는데 결국 안 썼어요.",
			"기타를 배운 지 %d개월 됐는데 손가락이 아파요.",
			"점심으로 비빔밥을 먹었는데 양이 많았어요.",
		}
		agents := []string{
			"좋은 계획이네요! 즐거운 시간 보내세요.",
			"정말 재미있으셨겠어요. 다음에도 이야기해 주세요.",
			"꾸준히 하시는 게 대단해요.",
			"그럴 때는 잠깐 쉬어 가는 것도 좋아요.",
			"맛있는 음식은 언제나 기분을 좋게 하죠.",
			"축하드려요! 기쁜 일이네요.",
		}
		u := pick(rng, users...)
		if strings.Contains(u, "%d") {
			u = fmt.Sprintf(u, 2+rng.IntN(9))
		}
		return [2]string{u, pick(rng, agents...)}
	},
}

var japaneseProbe = scriptProbe{
	lang: "Japanese",
	plant: func(rng *rand.Rand) (plantedValues, [][2]string) {
		family, given := pick(rng, "田中", "佐藤", "鈴木", "高橋", "伊藤", "渡辺", "山本", "中村"), pick(rng, "花子", "太郎", "美咲", "翔太", "陽菜", "大輔", "さくら")
		p := plantedValues{
			order: randomOrder(rng, "JP", "ORD", "T"),
			amount: pick(rng,
				grouped(100*(1+rng.IntN(9999)))+"円",
				"¥"+grouped(100*(1+rng.IntN(9999))),
				fmt.Sprintf("%d万円", 1+rng.IntN(99))),
			email: randomEmail(rng),
			phone: pick(rng,
				fmt.Sprintf("090-%04d-%04d", rng.IntN(10000), rng.IntN(10000)),
				fmt.Sprintf("080-%04d-%04d", rng.IntN(10000), rng.IntN(10000)),
				fmt.Sprintf("+81 90-%04d-%04d", rng.IntN(10000), rng.IntN(10000))),
			address: pick(rng,
				fmt.Sprintf("東京都渋谷区神南%d丁目%d-%d", 1+rng.IntN(3), 1+rng.IntN(20), 1+rng.IntN(30)),
				fmt.Sprintf("大阪府大阪市北区梅田%d-%d-%d", 1+rng.IntN(3), 1+rng.IntN(20), 1+rng.IntN(30)),
				fmt.Sprintf("神奈川県横浜市中区山下町%d番地", 1+rng.IntN(300))),
		}
		var intro string
		switch rng.IntN(3) {
		case 0:
			p.name = family + given
			intro = p.name + "と申します。"
		case 1:
			p.name = family
			intro = "名前は" + family + "です。"
		default:
			p.name = family + pick(rng, "様", "さん")
			intro = "受取人は" + p.name + "です。"
		}
		return p, [][2]string{
			{"こんにちは。" + intro + "注文番号は" + p.order + "です。金額は" + p.amount + "でした。", "お問い合わせありがとうございます。どのようなご用件でしょうか。"},
			{"商品が壊れていました。連絡先のメールは" + p.email + "、電話番号は" + p.phone + "です。", "大変申し訳ございません。連絡先を控えました。"},
			{"交換品は" + p.address + "に送ってください。", "承知いたしました。交換の手続きを進めます。"},
		}
	},
	filler: func(rng *rand.Rand) [2]string {
		users := []string{
			"今日はいい天気ですね。週末は公園に行こうと思っています。",
			"昨日友達と新しいカフェに行きました。ケーキがおいしかったです！",
			"最近は%d時ごろに起きて散歩しています。",
			"ドラマを%d話まとめて見てしまいました。",
			"犬が散歩が大好きで、毎日二回出かけます。",
			"来月は京都に旅行する予定です。紅葉が楽しみです。",
			"料理を習っていますが、天ぷらはまだ難しいです。",
			"本を読もうとしても、ついスマホを見てしまいます。",
			"妹が大学に合格したので、家族で夕食を食べました。",
			"雨が降ったので傘を持っていきましたが、使いませんでした。",
			"ギターを始めて%dか月になりますが、指が痛いです。",
			"お昼はラーメンを食べました。とても寒かったので温まりました。",
		}
		agents := []string{
			"いいですね！楽しんでください。",
			"それは楽しそうですね。またお話を聞かせてください。",
			"続けているのは素晴らしいです。",
			"たまには休むのも大切ですよ。",
			"おいしいものは気分を明るくしますね。",
			"おめでとうございます！",
		}
		u := pick(rng, users...)
		if strings.Contains(u, "%d") {
			u = fmt.Sprintf(u, 2+rng.IntN(9))
		}
		return [2]string{u, pick(rng, agents...)}
	},
}

var chineseProbe = scriptProbe{
	lang: "Chinese",
	plant: func(rng *rand.Rand) (plantedValues, [][2]string) {
		surname, given := pick(rng, "王", "李", "张", "刘", "陈", "杨", "赵", "周"), pick(rng, "小明", "丽", "伟", "芳", "建国", "静")
		p := plantedValues{
			order: randomOrder(rng, "CN", "DD", "JD"),
			amount: pick(rng,
				grouped(1+rng.IntN(99999))+"元",
				"¥"+grouped(1+rng.IntN(99999)),
				fmt.Sprintf("%d万元", 1+rng.IntN(99))),
			email: randomEmail(rng),
			phone: pick(rng,
				fmt.Sprintf("+86 1%d%d %04d %04d", 3+rng.IntN(7), rng.IntN(10), rng.IntN(10000), rng.IntN(10000)),
				fmt.Sprintf("1%d%d-%04d-%04d", 3+rng.IntN(7), rng.IntN(10), rng.IntN(10000), rng.IntN(10000))),
			address: pick(rng,
				fmt.Sprintf("上海市浦东新区世纪大道%d号", 1+rng.IntN(2000)),
				fmt.Sprintf("北京市朝阳区建国路%d号", 1+rng.IntN(200)),
				fmt.Sprintf("广东省深圳市南山区科技园路%d号", 1+rng.IntN(300))),
		}
		var intro string
		switch rng.IntN(3) {
		case 0:
			p.name = surname + given
			intro = "我叫" + p.name + "。"
		case 1:
			p.name = surname + given
			intro = "我的名字是" + p.name + "。"
		default:
			p.name = surname + pick(rng, "先生", "女士")
			intro = "收件人是" + p.name + "。"
		}
		return p, [][2]string{
			{"你好，" + intro + "订单号是" + p.order + "，金额是" + p.amount + "。", "您好，请问有什么可以帮您？"},
			{"收到的商品坏了。我的邮箱是" + p.email + "，电话是" + p.phone + "。", "非常抱歉，已记录您的联系方式。"},
			{"换货请寄到" + p.address + "。", "好的，我们会尽快为您办理换货。"},
		}
	},
	filler: func(rng *rand.Rand) [2]string {
		users := []string{
			"今天天气真好，周末想去公园走走。",
			"昨天和朋友去了一家新开的咖啡店，蛋糕很好吃！",
			"最近我每天%d点起床去跑步。",
			"我一口气看了%d集电视剧，眼睛好累。",
			"我家的狗特别喜欢散步，每天要出去两次。",
			"下个月打算去杭州旅行，想看看西湖。",
			"我在学做饭，但是红烧肉还是很难。",
			"想看书，可是总忍不住看手机。",
			"妹妹考上大学了，我们全家一起吃了晚饭。",
			"下雨了，我带了伞，结果没用上。",
			"学吉他已经%d个月了，手指很疼。",
			"中午吃了饺子，分量很大。",
		}
		agents := []string{
			"听起来不错！祝你玩得开心。",
			"真有意思，下次再跟我聊聊。",
			"能坚持下来真厉害。",
			"累的时候休息一下也很重要。",
			"好吃的东西总让人心情变好。",
			"恭喜恭喜！",
		}
		u := pick(rng, users...)
		if strings.Contains(u, "%d") {
			u = fmt.Sprintf(u, 2+rng.IntN(9))
		}
		return [2]string{u, pick(rng, agents...)}
	},
}

var germanProbe = scriptProbe{
	lang: "German",
	plant: func(rng *rand.Rand) (plantedValues, [][2]string) {
		p := plantedValues{
			order:  randomOrder(rng, "DE", "BE"),
			amount: pick(rng, fmt.Sprintf("%d,%02d €", 10+rng.IntN(990), rng.IntN(100)), fmt.Sprintf("%d.%03d,%02d €", 1+rng.IntN(9), rng.IntN(1000), rng.IntN(100))),
			email:  randomEmail(rng),
			phone:  pick(rng, fmt.Sprintf("+49 30 %04d %04d", rng.IntN(10000), rng.IntN(10000)), fmt.Sprintf("0151 %04d %04d", rng.IntN(10000), rng.IntN(10000))),
			address: pick(rng,
				fmt.Sprintf("Müllerstraße %d, 10115 Berlin", 1+rng.IntN(200)),
				fmt.Sprintf("Königsallee %d", 1+rng.IntN(100)),
				fmt.Sprintf("Berliner Straße %d", 1+rng.IntN(300))),
			name: pick(rng, "Jürgen", "Jörg", "Anneliese", "Björn") + " " + pick(rng, "Groß", "Müller", "Schäfer", "Weiß"),
		}
		return p, [][2]string{
			{pick(rng, "Hallo, ich heiße ", "Guten Tag, mein Name ist ") + p.name + ". Meine Bestellnummer ist " + p.order + ", der Betrag war " + p.amount + ".", "Danke, wie kann ich helfen?"},
			{"Die Lieferung war beschädigt. Schreiben Sie mir an " + p.email + " oder rufen Sie " + p.phone + " an.", "Das tut mir leid, ich habe Ihre Kontaktdaten notiert."},
			{"Bitte schicken Sie den Ersatz an " + p.address + ".", "In Ordnung, der Umtausch ist eingeleitet."},
		}
	},
	filler: func(rng *rand.Rand) [2]string {
		users := []string{
			"Das Wetter ist herrlich, am Wochenende fahren wir an den See.",
			"Gestern war ich mit Freunden im Café, der Kuchen war köstlich!",
			"Ich stehe jetzt jeden Tag um %d Uhr auf und gehe joggen.",
			"Wir haben %d Folgen einer Serie am Stück geschaut.",
			"Mein Hund liebt Spaziergänge, wir gehen zweimal täglich raus.",
			"Nächsten Monat reisen wir nach Österreich, ich freue mich auf die Berge.",
			"Ich lerne kochen, aber Knödel sind noch schwierig.",
			"Meine Schwester hat ihr Studium abgeschlossen, wir haben gefeiert.",
			"Es hat geregnet, und ich hatte natürlich keinen Schirm dabei.",
		}
		agents := []string{"Das klingt schön! Viel Spaß.", "Wie schön, erzählen Sie gern mehr.", "Toll, dass Sie dranbleiben.", "Herzlichen Glückwunsch!"}
		u := pick(rng, users...)
		if strings.Contains(u, "%d") {
			u = fmt.Sprintf(u, 2+rng.IntN(9))
		}
		return [2]string{u, pick(rng, agents...)}
	},
}

var frenchProbe = scriptProbe{
	lang: "French",
	plant: func(rng *rand.Rand) (plantedValues, [][2]string) {
		p := plantedValues{
			order:  randomOrder(rng, "FR", "CMD"),
			amount: fmt.Sprintf("%d,%02d €", 10+rng.IntN(990), rng.IntN(100)),
			email:  randomEmail(rng),
			phone: pick(rng,
				fmt.Sprintf("06 %02d %02d %02d %02d", rng.IntN(100), rng.IntN(100), rng.IntN(100), rng.IntN(100)),
				fmt.Sprintf("+33 6 %02d %02d %02d %02d", rng.IntN(100), rng.IntN(100), rng.IntN(100), rng.IntN(100))),
			address: pick(rng,
				fmt.Sprintf("%d rue de la Paix, 75002 Paris", 1+rng.IntN(100)),
				fmt.Sprintf("%d avenue Gambetta", 1+rng.IntN(300)),
				fmt.Sprintf("%d boulevard Saint-Michel", 1+rng.IntN(150))),
			name: pick(rng, "Hélène", "Zoé", "Françoise", "Jérôme") + " " + pick(rng, "Dubois", "Lefèvre", "Chevalier", "Bérard"),
		}
		return p, [][2]string{
			{"Bonjour, je m'appelle " + p.name + ". Ma commande n° " + p.order + " m'a coûté " + p.amount + ".", "Merci, que puis-je faire pour vous ?"},
			{"Le colis est arrivé abîmé. Écrivez-moi à " + p.email + " ou appelez le " + p.phone + ".", "Désolé, j'ai noté vos coordonnées."},
			{"Envoyez le remplacement au " + p.address + ", s'il vous plaît.", "C'est noté, l'échange est lancé."},
		}
	},
	filler: func(rng *rand.Rand) [2]string {
		users := []string{
			"Il fait beau aujourd'hui, ce week-end on ira au parc.",
			"Hier je suis allée dans un nouveau café, le gâteau était délicieux !",
			"Je me lève maintenant à %d heures pour courir.",
			"J'ai regardé %d épisodes d'une série d'affilée.",
			"Mon chien adore les promenades, on sort deux fois par jour.",
			"Le mois prochain, nous partons en Bretagne, j'ai hâte de voir la mer.",
			"J'apprends à cuisiner, mais les crêpes sont encore difficiles.",
			"Ma sœur a réussi ses examens, nous avons fêté ça en famille.",
			"Il a plu et, bien sûr, je n'avais pas de parapluie.",
		}
		agents := []string{"Ça a l'air super ! Amusez-vous bien.", "Quelle bonne idée, racontez-moi la suite.", "Bravo de persévérer.", "Félicitations !"}
		u := pick(rng, users...)
		if strings.Contains(u, "%d") {
			u = fmt.Sprintf(u, 2+rng.IntN(9))
		}
		return [2]string{u, pick(rng, agents...)}
	},
}
