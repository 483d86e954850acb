package extractive_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tmc/langchaingo/llms"

	. "github.com/strata-go/strata/summary"
)

// chatLines are templates of a long personal conversation between two
// friends: names, places, dates and events among small talk. %[1]s is a
// name, %[2]s a place, %[3]s a date, %[4]d a number.
var chatLines = []string{
	"Last weekend I went to the %[2]s pride parade with %[1]s, it was so uplifting!",
	"I finally signed up for the pottery class in %[2]s, it starts on %[3]s.",
	"That sounds amazing! How did it go?",
	"We adopted a puppy named %[1]s on %[3]s and the kids adore him.",
	"Haha, I know what you mean. Thanks for asking!",
	"I've been reading a lot lately, %[1]s recommended a book about %[2]s.",
	"My sister %[1]s is moving to %[2]s next month for a new job.",
	"I ran my first 10k in %[2]s on %[3]s, finished in %[4]d minutes.",
	"Wow, that's so cool. I'm proud of you!",
	"We're planning a camping trip to %[2]s with %[1]s in the summer.",
	"I started volunteering at the youth center, we had %[4]d kids on Friday.",
	"Yeah, it was a tough week but I'm feeling better now.",
	"I painted a sunset over the lake in %[2]s, it took me %[4]d hours.",
	"The support group meeting on %[3]s really helped me open up.",
	"Take care and talk soon!",
}

var (
	chatNames  = []string{"Caroline", "Melanie", "Jon", "Gina", "Oscar", "Luna", "Evan", "Priya", "Tomas", "Aiko"}
	chatPlaces = []string{"Boston", "Lake Tahoe", "Sweden", "Portland", "the Rockies", "Chicago", "Nara", "Lisbon"}
	chatDates  = []string{"May 7, 2023", "June 12", "3 July 2023", "August 20, 2023", "September 2", "2023-10-14"}
)

// chatScript is the vocabulary of a generated conversation: line
// templates (as chatLines) and what fills them.
type chatScript struct {
	lines, names, places, dates []string
	tail                        string // "%s" is a distinct word
}

var englishChat = chatScript{chatLines, chatNames, chatPlaces, chatDates, " That was the %s episode."}

// cjkChat is a conversation of the same kind in Korean, Japanese and
// Chinese, with the values those users write: amounts in 원, 円 and 元,
// road and block addresses, names with honorifics.
var cjkChat = chatScript{
	lines: []string{
		"지난 주말에 %[1]s 님이랑 %[2]s에 다녀왔어요. 정말 좋았어요!",
		"%[3]s에 도자기 수업을 신청했어요. 수강료는 %[4]d,000원이에요.",
		"우와, 재미있었겠네요. 어땠어요?",
		"%[1]s 씨가 테헤란로 %[4]d 근처로 이사했대요.",
		"先週、%[1]sさんと%[2]sに行きました。とても楽しかったです！",
		"陶芸教室に申し込みました。料金は%[4]d万円です。",
		"それはいいですね。どうでしたか？",
		"%[1]s様は東京都渋谷区神南1丁目%[4]d-3に引っ越しました。",
		"上周末我和%[1]s先生去了%[2]s，玩得很开心！",
		"我报名了陶艺课，学费是%[4]d元。",
		"听起来不错，感觉怎么样？",
		"我朋友搬到了上海市浦东新区世纪大道%[4]d号。",
	},
	names:  []string{"김민지", "박서준", "田中", "佐藤", "王", "李"},
	places: []string{"부산", "제주도", "京都", "大阪", "杭州", "西湖"},
	dates:  []string{"3월 7일", "5月12日", "七月三日"},
	tail:   " (%s)",
}

// chatMessages generates n messages of such a conversation; seed
// makes every batch's text distinct, so no memo serves a later batch.
func chatMessages(seed uint64, n int) []llms.ChatMessage { return scriptMessages(englishChat, seed, n) }

// scriptMessages generates n messages of a conversation in script sc.
func scriptMessages(sc chatScript, seed uint64, n int) []llms.ChatMessage {
	rng := rand.New(rand.NewPCG(seed, 42))
	out := make([]llms.ChatMessage, 0, n)
	for i := range n {
		line := fmt.Sprintf(sc.lines[rng.IntN(len(sc.lines))], sc.names[rng.IntN(len(sc.names))],
			sc.places[rng.IntN(len(sc.places))], sc.dates[rng.IntN(len(sc.dates))], 5+rng.IntN(200))
		// A distinct tail, as real messages differ.
		line += fmt.Sprintf(sc.tail, letterCode(seed*1000+uint64(i)))
		if i%2 == 0 {
			out = append(out, llms.HumanChatMessage{Content: line})
		} else {
			out = append(out, llms.AIChatMessage{Content: line})
		}
	}
	return out
}

// letterCode spells n in lower-case letters: a distinct word for every n.
func letterCode(n uint64) string {
	var b []byte
	for {
		b = append(b, byte('a'+n%26))
		n /= 26
		if n == 0 {
			return string(b)
		}
	}
}

// foldedConversation folds a conversation of chunks × size messages
// incrementally, as the chunked policy does, and returns the summary.
func foldedConversation(tb testing.TB, svc Service, chunks, size int) *Summary {
	return foldedScript(tb, svc, englishChat, chunks, size)
}

// foldedScript is foldedConversation in script sc.
func foldedScript(tb testing.TB, svc Service, sc chatScript, chunks, size int) *Summary {
	tb.Helper()
	var cur *Summary
	for c := range chunks {
		msgs := scriptMessages(sc, uint64(c+1), size)
		res, err := svc.Summarize(context.Background(), Request{SessionID: "bench", Messages: msgs, Existing: cur, Incremental: cur != nil})
		if err != nil {
			tb.Fatal(err)
		}
		next := Apply(cur, "bench", 1, res, int64((c+1)*size), MergeOptions{})
		cur = &next
	}
	return cur
}

// BenchmarkExtractiveIncrementalFold measures one incremental fold of the
// extractive summarizer (Summarize and Apply) of a 16-message chunk onto
// the summary of a long conversation: the work of the background fold
// under the chunked policy. Every iteration folds new text onto the same
// existing summary. Besides wall time it reports the process's CPU time per
// fold (cpu-ns/op, where the platform gives it), which is what limits
// background folding and what a busy machine does not inflate.
func BenchmarkExtractiveIncrementalFold(b *testing.B) { benchmarkIncrementalFold(b, englishChat) }

// BenchmarkExtractiveIncrementalFoldCJK is BenchmarkExtractiveIncrementalFold
// on a conversation in Korean, Japanese and Chinese.
func BenchmarkExtractiveIncrementalFoldCJK(b *testing.B) { benchmarkIncrementalFold(b, cjkChat) }

func benchmarkIncrementalFold(b *testing.B, sc chatScript) {
	for _, history := range []int{40, 400} {
		b.Run(fmt.Sprintf("history=%dchunks", history), func(b *testing.B) {
			svc := NewExtractiveService()
			existing := foldedScript(b, svc, sc, history, 16)
			batches := make([][]llms.ChatMessage, b.N)
			for i := range batches {
				batches[i] = scriptMessages(sc, uint64(1_000_000+i), 16)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU()
			for i := range b.N {
				res, err := svc.Summarize(context.Background(), Request{SessionID: "bench", Messages: batches[i], Existing: existing, Incremental: true})
				if err != nil {
					b.Fatal(err)
				}
				_ = Apply(existing, "bench", 1, res, existing.UpToSeq+16, MergeOptions{})
			}
			if cpu > 0 {
				b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
