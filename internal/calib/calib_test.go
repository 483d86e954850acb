package calib

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/trimmer"
)

const (
	korean  = "주문하신 상품은 어제 발송되었습니다. 배송 조회를 해 보니 문 앞에 두고 가셨다고 합니다. "
	english = "Your order was shipped yesterday; the courier said the parcel was left at the door. "
)

// promptOf is a system prompt and turns messages of text, each of about
// size runes.
func promptOf(text string, turns, size int) []llms.ChatMessage {
	unit := utf8.RuneCountInString(text)
	msgs := []llms.ChatMessage{llms.SystemChatMessage{Content: "You are a helpful assistant."}}
	for i := range turns {
		body := strings.Repeat(text, max(1, (size+i%3*unit)/unit))
		msgs = append(msgs, llms.HumanChatMessage{Content: body}, llms.AIChatMessage{Content: body})
	}
	return msgs
}

// count is a provider that counts ASCII at rate ascii and everything else
// at rate other per character, plus OpenAI's framing.
func count(msgs []llms.ChatMessage, ascii, other float64) int {
	n := float64(ReplyPriming)
	for _, m := range msgs {
		var t text.Tally
		t.Add(m.GetContent())
		for c, k := range t.Chars {
			if text.Class(c).ASCII() {
				n += ascii * float64(k)
			} else {
				n += other * float64(k)
			}
		}
		n += PerMessage
	}
	return int(math.Round(n))
}

func relErr(x Vector, w Vector, reported int) float64 {
	return math.Abs(x.Dot(w)-float64(reported)) / float64(reported)
}

// TestFirstReportsOutlierAndChange: before any report the price is the
// prior; three reports fit a Korean provider's rate; one outlier in a full
// window (a count three times the true one) moves no estimate by more than
// 0.2% (unweighted least squares would move them by about 0.8%); a lasting
// change takes over as the window turns.
func TestFirstReportsOutlierAndChange(t *testing.T) {
	tb := New()
	if w, n := tb.Price("m"); w != Prior() || n != 0 {
		t.Fatalf("before any report: %v on %d reports, want the prior on 0", w, n)
	}
	if _, ok := tb.Fitted("m"); ok {
		t.Fatal("fitted before any report")
	}
	observe := func(msgs []llms.ChatMessage, reported int) {
		t.Helper()
		if err := tb.Observe("m", Sample{Reported: reported, Features: ClassFeatures(msgs, "", nil)}); err != nil {
			t.Fatal(err)
		}
	}
	probe := promptOf(korean, 4, 150)
	px := ClassFeatures(probe, "", nil)
	want := count(probe, 0.3, 1.2)
	if e := relErr(px, Prior(), want); e < 0.3 {
		t.Fatalf("the prior is %.0f%% off: the test does not test", 100*e)
	}
	for i := range 3 {
		p := promptOf(korean, 2+3*i, 60+40*i)
		observe(p, count(p, 0.3, 1.2))
	}
	w, _ := tb.Fitted("m")
	if e := relErr(px, w, want); e > 0.03 {
		t.Fatalf("after three reports the fit is %.1f%% off", 100*e)
	}
	for i := range Window - 4 {
		p := promptOf(korean, 1+i%9, 40+10*i)
		observe(p, count(p, 0.3, 1.2))
	}
	before, _ := tb.Fitted("m")
	p := promptOf(korean, 5, 100)
	observe(p, 3*count(p, 0.3, 1.2)) // a report about something else
	after, _ := tb.Fitted("m")
	for _, q := range [][]llms.ChatMessage{probe, p, promptOf(korean, 1, 40), promptOf(korean, 8, 300)} {
		qx := ClassFeatures(q, "", nil)
		if d := math.Abs(qx.Dot(after)-qx.Dot(before)) / qx.Dot(before); d > 0.002 {
			t.Fatalf("one outlier in a full window moved the estimate of a prompt of %d messages by %.1f%%", len(q), 100*d)
		}
	}
	price, _ := tb.Price("m")
	if e := (px.Dot(price) - float64(want)) / float64(want); e < 0 || e > 0.05 {
		t.Fatalf("price %+.1f%% off the count, want a small margin above", 100*e)
	}
	// The provider starts counting Korean at 1.5 a character.
	for i := range Window {
		p := promptOf(korean, 1+i%9, 40+10*i)
		observe(p, count(p, 0.3, 1.5))
	}
	w, _ = tb.Fitted("m")
	if e := relErr(px, w, count(probe, 0.3, 1.5)); e > 0.02 {
		t.Fatalf("after a window of the new rate the fit is %.1f%% off", 100*e)
	}
}

// TestOneReportMovesItsOwnClasses: Korean reports raise the price of
// Hangul and leave ASCII letters, which they hardly contain, at their
// prior.
func TestOneReportMovesItsOwnClasses(t *testing.T) {
	tb := New()
	tb.Price("m")
	var p []llms.ChatMessage
	for range 3 {
		p = append(p, llms.HumanChatMessage{Content: strings.Repeat("주문하신 상품은 어제 발송되었습니다. ", 12)})
	}
	if err := tb.Observe("m", Sample{Reported: count(p, 0.25, 2*2.0/3), Features: ClassFeatures(p, "", nil)}); err != nil {
		t.Fatal(err)
	}
	w, _ := tb.Fitted("m")
	prior := Prior()
	if r := w[text.ClassHangul] / prior[text.ClassHangul]; r < 1.6 {
		t.Fatalf("Hangul rate ×%.2f after a report at ×2", r)
	}
	if w[text.ClassLetter] != prior[text.ClassLetter] || w[FeatRuns+int(text.ClassLetter)] != 0 {
		t.Fatalf("letters moved: %v per letter, %v per word", w[text.ClassLetter], w[FeatRuns+int(text.ClassLetter)])
	}
}

func TestImplausibleReportsChangeNothing(t *testing.T) {
	tb := New()
	tb.Price("m")
	p := promptOf(english, 3, 200)
	x := ClassFeatures(p, "", nil)
	if err := tb.Observe("m", Sample{Reported: count(p, 0.3, 1), Features: x}); err != nil {
		t.Fatal(err)
	}
	want, _ := tb.Price("m")
	content := int(x.Content(Prior()))
	bad := x
	bad[text.ClassLetter] = -1
	nan := x
	nan[text.ClassDigit] = math.NaN()
	for name, s := range map[string]Sample{
		"zero":               {Reported: 0, Features: x},
		"negative":           {Reported: -7, Features: x},
		"absurd":             {Reported: MaxReported + 1, Features: x},
		"empty prompt":       {Reported: 600, Features: BaseFeatures(0, 4)},
		"negative feature":   {Reported: 600, Features: bad},
		"NaN feature":        {Reported: 600, Features: nan},
		"far below":          {Reported: content / 5, Features: x},
		"far above":          {Reported: content * 9, Features: x},
		"below the framing":  {Reported: 10, Features: BaseFeatures(500, 40)},
		"base far over":      {Reported: 500_000, Features: BaseFeatures(500, 4)},
		"base below framing": {Reported: 3, Features: BaseFeatures(500, 4)},
	} {
		if err := tb.Observe("m", s); !errors.Is(err, ErrImplausible) {
			t.Errorf("%s: %v, want ErrImplausible", name, err)
		}
	}
	if err := tb.Observe("never priced", Sample{Reported: count(p, 0.3, 1), Features: x}); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("unknown model: %v", err)
	}
	if got, n := tb.Price("m"); got != want || n != 1 {
		t.Fatalf("price changed by refused reports (%d reports)", n)
	}
	if tb.Len() != 1 {
		t.Fatalf("%d models", tb.Len())
	}
}

func TestBounded(t *testing.T) {
	tb := New()
	long := strings.Repeat("x", 10*MaxModelLen)
	p := promptOf(english, 2, 100)
	s := Sample{Reported: count(p, 0.3, 1), Features: ClassFeatures(p, "", nil)}
	for i := range 4 * MaxModels {
		model := fmt.Sprintf("%d-%s", i, long)
		tb.Price(model)
		for range 2 {
			if err := tb.Observe(model, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := tb.Len(); n != MaxModels {
		t.Fatalf("%d models, bound %d", n, MaxModels)
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, k := range tb.models.Keys() {
		if len(k) > MaxModelLen {
			t.Fatalf("model name of %d bytes kept", len(k))
		}
	}
	for _, f := range tb.models.Values() {
		if f.n != 2 {
			t.Fatalf("a model kept %d reports, want 2", f.n)
		}
	}
}

// TestPriorIsTheDefaultEstimator: before any report a text is priced as
// the default estimator prices it, up to its rounding.
func TestPriorIsTheDefaultEstimator(t *testing.T) {
	for _, s := range []string{korean, english, "ご注文の商品は昨日発送されました。", "您订购的商品昨天已经发货了！",
		"Die Kaffeemaschine ist schon wieder kaputt: 249,90 €", "Привет 👋🏽", `{"order_id":"#A-1","qty":3}`, "func main() {\n\tx := 1\n}", "\xff\xfe"} {
		if got, want := Prior().Text(s, nil), float64(trimmer.EstimateScript(s)); math.Abs(got-want) > 3 {
			t.Errorf("%q: prior %.2f, default estimator %.0f", s, got, want)
		}
	}
}

// TestFeaturesAreWhatTheTrimmerPrices: the class features of a prompt
// count exactly the texts the trimmer prices in it (contents, tool calls'
// names and arguments), plus the tool definitions.
func TestFeaturesAreWhatTheTrimmerPrices(t *testing.T) {
	prompt := []llms.ChatMessage{
		llms.SystemChatMessage{Content: "Answer in Korean."},
		llms.HumanChatMessage{Content: korean},
		llms.AIChatMessage{Content: "확인해 보겠습니다", ToolCalls: []llms.ToolCall{
			{ID: "call_1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "lookup_orders", Arguments: `{"customer":"C-7"}`}},
			{ID: "call_2", Type: "function", FunctionCall: &llms.FunctionCall{Name: "lookup", Arguments: `{}`}}}},
		llms.ToolChatMessage{ID: "call_1", Content: `[{"order_id":"#A-0001","note":"문 앞"}]`},
		llms.ToolChatMessage{ID: "call_2", Content: `[]`},
		nil,
		&llms.AIChatMessage{Content: english},
	}
	runes := trimmer.EstimatorFunc(func(s string) int { return utf8.RuneCountInString(s) })
	tr := trimmer.New(100_000, 0, runes)
	want := tr.Cost(prompt) - len(prompt)*trimmer.MessageOverheadTokens + utf8.RuneCountInString("[tools]")
	x := ClassFeatures(prompt, "[tools]", nil)
	got := 0.0
	for c := range text.NumClasses {
		got += x[c]
	}
	if int(got) != want || x[FeatMessages] != 6 || x[FeatConst] != 1 {
		t.Fatalf("features count %v characters in %v messages, the trimmer prices %d characters in 6 (and a nil message)", got, x[FeatMessages], want)
	}
}

// TestConcurrentUse: pricing and reports of several models from many
// goroutines (run with -race).
func TestConcurrentUse(t *testing.T) {
	tb := New()
	prompts := [][]llms.ChatMessage{promptOf(korean, 2, 100), promptOf(english, 4, 300), promptOf(korean+english, 3, 200)}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				model := fmt.Sprintf("m%d", (g+i)%3)
				w, _ := tb.Price(model)
				p := prompts[(i/3)%len(prompts)]
				if w.Text(p[1].GetContent(), nil) <= 0 {
					t.Error("non-positive price")
					return
				}
				_ = tb.Observe(model, Sample{Reported: count(p, 0.3, 1.2), Features: ClassFeatures(p, "", nil)})
				tb.Fitted(model)
			}
		}()
	}
	wg.Wait()
	for m := range 3 {
		w, ok := tb.Fitted(fmt.Sprintf("m%d", m))
		if !ok {
			t.Fatalf("m%d has no fit", m)
		}
		for _, p := range prompts {
			if e := relErr(ClassFeatures(p, "", nil), w, count(p, 0.3, 1.2)); e > 0.03 {
				t.Fatalf("m%d: fit %.1f%% off", m, 100*e)
			}
		}
	}
}
