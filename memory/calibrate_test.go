package memory_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/trimmer"
)

func calibManager(t *testing.T, est trimmer.Estimator) *memory.Manager {
	t.Helper()
	cfg := memory.DefaultConfig()
	cfg.ContextWindowTokens, cfg.OutputReserveTokens = 4096, 512
	cfg.Estimator = est
	m, err := memory.NewManager(memory.NewInMemoryStore(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

const (
	korean  = "주문하신 상품은 어제 발송되었습니다. 배송 조회를 해 보니 문 앞에 두고 가셨다고 합니다. "
	english = "Your order was shipped yesterday; the courier said the parcel was left at the door. "
)

func conversation(text string, turns int) []llms.ChatMessage {
	var out []llms.ChatMessage
	for i := range turns {
		out = append(out, llms.HumanChatMessage{Content: fmt.Sprintf("%d. %s", i, strings.Repeat(text, 3))},
			llms.AIChatMessage{Content: strings.Repeat(text, 2)})
	}
	return append(out, llms.HumanChatMessage{Content: "?"})
}

func lineTexts(msgs []llms.ChatMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.GetType()) + ": " + m.GetContent()
	}
	return out
}

// report is a provider's usage for a prompt counted at ratio × the
// manager's estimate of its texts, plus OpenAI's framing.
func report(m *memory.Manager, prompt []llms.ChatMessage, ratio float64) map[string]any {
	est := m.Config().Estimator
	n := 3
	for _, msg := range prompt {
		n += 4 + int(ratio*float64(est.Estimate(msg.GetContent())))
	}
	return map[string]any{"PromptTokens": n}
}

// TestObserveUsageRefusesBadReports: an unknown model, a missing,
// negative, non-numeric or absurd count, or an empty prompt is an error
// and changes nothing; a good report then does change the price.
func TestObserveUsageRefusesBadReports(t *testing.T) {
	m := calibManager(t, nil)
	view := m.ForModel("local-model")
	history := conversation(korean, 40)
	want, _ := view.Prompt("sys", history, 0)
	probe := strings.Repeat(korean, 10)
	base := view.Config().Estimator.Estimate(probe)

	for name, info := range map[string]map[string]any{
		"nil":             nil,
		"no count":        {"CompletionTokens": 12},
		"zero":            {"PromptTokens": 0},
		"negative":        {"PromptTokens": -4000},
		"not a number":    {"PromptTokens": "4000"},
		"absurdly large":  {"PromptTokens": 1e12},
		"absurdly small":  {"PromptTokens": 5},
		"far over":        {"PromptTokens": 500_000},
		"NaN-like float":  {"PromptTokens": float64(-1) / 3},
		"anthropic wrong": {"InputTokens": -1},
	} {
		if err := view.ObserveUsage(want, nil, info); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := view.ObserveUsage(nil, nil, map[string]any{"PromptTokens": 100}); err == nil {
		t.Error("empty prompt: accepted")
	}
	err := m.ForModel("never-priced").ObserveUsage(want, nil, report(m, want, 2))
	if err == nil || !strings.Contains(err.Error(), "no prompt was priced") {
		t.Errorf("unknown model: %v", err)
	}
	if got := view.Config().Estimator.Estimate(probe); got != base {
		t.Fatalf("estimate %d after refused reports, want %d", got, base)
	}
	if got, _ := view.Prompt("sys", history, 0); !slices.Equal(lineTexts(got), lineTexts(want)) {
		t.Fatal("refused reports changed the prompt")
	}

	// Not vacuous: a plausible report does change the price.
	if err := view.ObserveUsage(want, nil, report(m, want, 2)); err != nil {
		t.Fatal(err)
	}
	if got := view.Config().Estimator.Estimate(probe); got < 19*base/10 {
		t.Fatalf("estimate %d after a report at 2×, want about %d", got, 2*base)
	}
	if got, _ := view.Prompt("sys", history, 0); len(got) >= len(want) {
		t.Fatalf("prompt of %d messages after a report at 2×, was %d", len(got), len(want))
	}
}

// TestCalibrationPerModelAndClass: what one view learns serves every view
// of its model, and no other model; what Korean reports teach raises the
// price of Korean text and barely moves English text's, whose letters no
// report has shown.
func TestCalibrationPerModelAndClass(t *testing.T) {
	m := calibManager(t, nil)
	ko := conversation(korean, 40)
	plainKo, _ := m.Prompt("", ko, 0)
	koText, enText := strings.Repeat(korean, 10), strings.Repeat(english, 10)
	koBase, enBase := m.Config().Estimator.Estimate(koText), m.Config().Estimator.Estimate(enText)

	a := m.ForModel("local-model")
	p, _ := a.Prompt("", ko, 0)
	for range 3 {
		if err := a.ObserveUsage(p, nil, report(m, p, 1.8)); err != nil {
			t.Fatal(err)
		}
	}
	b := m.ForModel("local-model") // another session's view
	if got, _ := b.Prompt("", ko, 0); len(got) >= len(plainKo) {
		t.Fatalf("the model's other view keeps %d messages, as uncalibrated (%d)", len(got), len(plainKo))
	}
	koGot, enGot := b.Config().Estimator.Estimate(koText), b.Config().Estimator.Estimate(enText)
	t.Logf("Korean text %d → %d tokens, English text %d → %d", koBase, koGot, enBase, enGot)
	if float64(koGot) < 1.75*float64(koBase) {
		t.Fatalf("Korean text priced %d tokens after reports at 1.8×, was %d", koGot, koBase)
	}
	if float64(enGot) > 1.15*float64(enBase) || enGot < enBase {
		t.Fatalf("Korean reports moved English text from %d to %d tokens", enBase, enGot)
	}
	if got, _ := m.ForModel("other-model").Prompt("", ko, 0); !slices.Equal(lineTexts(got), lineTexts(plainKo)) {
		t.Fatal("one model's reports changed another model's prompts")
	}
	if got, _ := m.Prompt("", ko, 0); !slices.Equal(lineTexts(got), lineTexts(plainKo)) {
		t.Fatal("a model's reports changed the manager's own prompts")
	}
}

// TestExactTokenizerFromTheFirstCall: a known OpenAI model is priced by
// its tiktoken encoding before any report, unless an estimator was
// configured.
func TestExactTokenizerFromTheFirstCall(t *testing.T) {
	o200k, err := trimmer.NewTiktokenEstimator(trimmer.EncodingO200kBase)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat(korean, 5)
	m := calibManager(t, nil)
	if got, want := m.ForModel("gpt-4o").Config().Estimator.Estimate(text), o200k.Estimate(text); got != want {
		t.Fatalf("gpt-4o prices %d tokens, o200k_base counts %d", got, want)
	}
	if got, want := m.ForModel("local-model").Config().Estimator.Estimate(text), trimmer.EstimateScript(text); got != want {
		t.Fatalf("unknown model prices %d tokens, the default estimator %d", got, want)
	}
	own := trimmer.EstimatorFunc(func(s string) int { return len(s) })
	mo := calibManager(t, own)
	if got := mo.ForModel("gpt-4o").Config().Estimator.Estimate(text); got != len(text) {
		t.Fatalf("a configured estimator was replaced: %d", got)
	}
}

// TestCalibrationConcurrent: views of a few models pricing and reporting
// from many goroutines (run with -race).
func TestCalibrationConcurrent(t *testing.T) {
	m := calibManager(t, nil)
	ko := conversation(korean, 30)
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				v := m.ForModel(fmt.Sprintf("model-%d", (g+i)%3))
				p, _ := v.Prompt("sys", ko, 0)
				_ = v.ObserveUsage(p, nil, report(m, p, 1.5))
				_ = v.Config().Estimator.Estimate(korean)
			}
		}()
	}
	wg.Wait()
	for i := range 3 {
		v := m.ForModel(fmt.Sprintf("model-%d", i))
		if got, base := v.Config().Estimator.Estimate(strings.Repeat(korean, 10)), m.Config().Estimator.Estimate(strings.Repeat(korean, 10)); got <= base {
			t.Fatalf("model-%d: %d tokens, uncalibrated %d", i, got, base)
		}
	}
}
