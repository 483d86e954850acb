package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/cloudwego/eino/schema"
	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/bench/internal/runner"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// wordCount is a toy price: one token per word plus one per message.
func wordCount(msgs []llms.ChatMessage) int {
	n := 0
	for _, m := range msgs {
		n += 1 + len(strings.Fields(m.GetContent()))
	}
	return n
}

// recorder records what the summarizer model is sent (the priced input)
// and what the extractive summarizer is asked to fold.
type recorder struct {
	mu      sync.Mutex
	priced  [][]llms.ChatMessage
	folded  [][]llms.ChatMessage
	service summary.Service
}

func (r *recorder) count(msgs []llms.ChatMessage) int {
	r.mu.Lock()
	r.priced = append(r.priced, msgs)
	r.mu.Unlock()
	return wordCount(msgs)
}

func (r *recorder) Summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	r.mu.Lock()
	r.folded = append(r.folded, req.Messages)
	r.mu.Unlock()
	return r.service.Summarize(ctx, req)
}

// testEnv is a section environment with a message trigger of 4 and the
// recorder as price and summarizer.
func testEnv(rec *recorder) runner.PeerEnv {
	cfg := memory.DefaultConfig()
	cfg.TriggerMessageCount = 4
	return runner.PeerEnv{
		CountMessages: rec.count,
		NewSummarizer: func() summary.Service { return rec },
		Strata:        cfg,
	}
}

var tinyConversation = [][2]string{
	{"Hi, my order number is 48213 and it has not arrived.", "Sorry to hear that. Which address did you ship it to?"},
	{"It went to 12 Rue de Rivoli, Paris.", "Thanks. I see the parcel is held at the depot."},
	{"Please deliver it on Friday instead.", "Done: delivery is booked for Friday."},
	{"Also my phone is 555-0142.", "Noted, the courier will call 555-0142."},
	{"Thanks, that is all.", "You're welcome!"},
}

// replayTurns feeds the first n turns of tinyConversation to p and returns
// the model input of every turn.
func replayTurns(t *testing.T, p runner.PeerPolicy, n int) [][]llms.ChatMessage {
	t.Helper()
	ctx := context.Background()
	var inputs [][]llms.ChatMessage
	for _, turn := range tinyConversation[:n] {
		in, err := p.ModelInput(ctx, turn[0])
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, in)
		if err := p.Save(ctx, []llms.ChatMessage{llms.HumanChatMessage{Content: turn[0]}, llms.AIChatMessage{Content: turn[1]}}); err != nil {
			t.Fatal(err)
		}
	}
	return inputs
}

func contents(msgs []llms.ChatMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.GetContent()
	}
	return out
}

func TestEinoCarriedStateCountsCallsAndTokens(t *testing.T) {
	rec := &recorder{service: summary.NewExtractiveService()}
	p, err := newEinoPolicy(context.Background(), testEnv(rec), true)
	if err != nil {
		t.Fatal(err)
	}
	inputs := replayTurns(t, p, 5)

	// Turns 1 and 2 stay below the trigger (1 and 3 messages): the model
	// sees the history plus the user message.
	if got, want := contents(inputs[1]), []string{tinyConversation[0][0], tinyConversation[0][1], tinyConversation[1][0]}; !reflect.DeepEqual(got, want) {
		t.Fatalf("turn 2 input = %q, want %q", got, want)
	}
	// Turn 3 has 5 messages > 4: one summary message replaces them all.
	if len(inputs[2]) != 1 {
		t.Fatalf("turn 3: %d messages after the fold, want 1 summary: %q", len(inputs[2]), contents(inputs[2]))
	}
	sum := inputs[2][0].GetContent()
	if _, ok := inputs[2][0].(llms.HumanChatMessage); !ok {
		t.Errorf("the summary is a %T, want a user message", inputs[2][0])
	}
	for _, want := range []string{"48213", summary.FactsHeader, tinyConversation[2][0], tinyConversation[0][0]} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	// Turn 4: summary, turn 3's answer, the new user message; no fold.
	if got := contents(inputs[3]); len(got) != 3 || got[0] != sum || got[1] != tinyConversation[2][1] || got[2] != tinyConversation[3][0] {
		t.Fatalf("turn 4 input = %q", got)
	}
	// Turn 5: 5 messages again, the second fold, which starts from the
	// first summary.
	if len(inputs[4]) != 1 {
		t.Fatalf("turn 5: %d messages, want the second summary", len(inputs[4]))
	}

	u := p.Usage()
	if u.Calls != 2 || len(rec.priced) != 2 || len(rec.folded) != 2 {
		t.Fatalf("calls %d, priced %d, folded %d; want 2 each", u.Calls, len(rec.priced), len(rec.folded))
	}
	// Priced: eino's system instruction, the conversation, its user
	// instruction; the usage sums exactly what the counter returned.
	want := 0
	for i, in := range rec.priced {
		want += wordCount(in)
		if _, ok := in[0].(llms.SystemChatMessage); !ok {
			t.Errorf("call %d: priced input starts with a %T, want eino's system instruction", i, in[0])
		}
		last, ok := in[len(in)-1].(llms.HumanChatMessage)
		if !ok || !strings.Contains(last.Content, "<all_user_messages>") {
			t.Errorf("call %d: priced input does not end with eino's user instruction", i)
		}
		if got, want := contents(in[1:len(in)-1]), contents(rec.folded[i]); !reflect.DeepEqual(got, want) {
			t.Errorf("call %d: priced conversation %q, folded %q", i, got, want)
		}
	}
	if u.InputTokens != want || want == 0 {
		t.Errorf("input tokens %d, want %d", u.InputTokens, want)
	}
	// The summarizer folds the conversation only: 5 messages, then the
	// first summary plus 4 messages.
	if got, want := contents(rec.folded[0]), []string{
		tinyConversation[0][0], tinyConversation[0][1], tinyConversation[1][0], tinyConversation[1][1], tinyConversation[2][0],
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("first fold = %q, want %q", got, want)
	}
	if got := contents(rec.folded[1]); len(got) != 5 || got[0] != sum || got[4] != tinyConversation[4][0] {
		t.Errorf("second fold = %q", got)
	}
}

func TestEinoResentHistoryFoldsEveryTurn(t *testing.T) {
	rec := &recorder{service: summary.NewExtractiveService()}
	p, err := newEinoPolicy(context.Background(), testEnv(rec), false)
	if err != nil {
		t.Fatal(err)
	}
	inputs := replayTurns(t, p, 5)
	// Turns 3, 4 and 5 hold 5, 7 and 9 messages: a fold each, always from
	// the complete history.
	if u := p.Usage(); u.Calls != 3 {
		t.Fatalf("calls = %d, want 3", u.Calls)
	}
	for i, n := range []int{5, 7, 9} {
		if got := len(rec.folded[i]); got != n {
			t.Errorf("fold %d: %d messages, want %d", i+1, got, n)
		}
	}
	for turn := 2; turn < 5; turn++ {
		if len(inputs[turn]) != 1 {
			t.Errorf("turn %d: %d messages, want 1 summary", turn+1, len(inputs[turn]))
		}
	}
	// Every user message is in the last summary (none is a summary here).
	last := inputs[4][0].GetContent()
	for _, turn := range tinyConversation {
		if !strings.Contains(last, turn[0]) {
			t.Errorf("last summary lacks the user message %q", turn[0])
		}
	}
}

func TestGenerateReplyAndStream(t *testing.T) {
	rec := &recorder{service: summary.NewExtractiveService()}
	m := NewExtractiveChatModel(rec, rec.count)
	input := []*schema.Message{
		schema.SystemMessage("summarize"),
		schema.UserMessage("My order number is 48213."),
		schema.AssistantMessage("Thanks, order 48213 found.", nil),
		schema.UserMessage("instructions"),
	}
	s, err := m.Stream(context.Background(), input)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if msg.Role != schema.Assistant || !strings.Contains(msg.Content, "48213") || !strings.HasSuffix(msg.Content, userMessagesBlock) {
		t.Errorf("reply = %q (%s)", msg.Content, msg.Role)
	}
	if got := contents(rec.folded[0]); len(got) != 2 || got[0] != "My order number is 48213." {
		t.Errorf("folded %q, want the two conversation messages", got)
	}
	if u := m.Usage(); u.Calls != 1 || u.InputTokens != wordCount(toLLMS(input)) {
		t.Errorf("usage %+v", u)
	}
	if got := renderReply(summary.Result{}); got != userMessagesBlock {
		t.Errorf("empty result renders %q", got)
	}
}

func TestMessageConversionRoundTrip(t *testing.T) {
	in := []llms.ChatMessage{
		llms.SystemChatMessage{Content: "be brief"},
		llms.HumanChatMessage{Content: "book it"},
		llms.AIChatMessage{Content: "", ToolCalls: []llms.ToolCall{{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "book", Arguments: `{"id":7}`}}}},
		llms.ToolChatMessage{ID: "c1", Content: "booked"},
		llms.AIChatMessage{Content: "Booked."},
	}
	if got := toLLMS(fromLLMS(in)); !reflect.DeepEqual(got, in) {
		t.Errorf("round trip:\n got %#v\nwant %#v", got, in)
	}
}

// TestRunQuickJSON runs the harness as strata-bench does (-quick -json)
// when the LoCoMo data is at hand, and checks the report's rows.
func TestRunQuickJSON(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "data"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "locomo", "locomo10.json")); err != nil {
		t.Skipf("LoCoMo not available (%v)", err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-quick", "-json", "-data", dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	var rep runner.PeersReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	byName := map[string]runner.PeerRow{}
	for _, r := range rep.Rows {
		byName[r.Name] = r
	}
	for _, p := range einoPeers() {
		row, ok := byName[p.Name]
		if !ok {
			t.Fatalf("no row %q in %v", p.Name, rep.Rows)
		}
		if !row.Summarizes || row.SummarizerCalls == 0 || row.SummarizerInputTokens == 0 || row.MeanTokens == 0 {
			t.Errorf("row %+v", row)
		}
		if !strings.Contains(rep.Body, p.Name) {
			t.Errorf("body lacks %q", p.Name)
		}
	}
	full, chunked := byName["full history"], byName["Strata chunked"]
	if full.MeanTokens == 0 || chunked.SummarizerCalls == 0 || chunked.MeanTokens >= full.MeanTokens {
		t.Errorf("full history %+v, Strata chunked %+v", full, chunked)
	}
	if len(rep.Headlines) != 1 || !strings.Contains(rep.Headlines[0], "eino") {
		t.Errorf("headlines %q", rep.Headlines)
	}
}
