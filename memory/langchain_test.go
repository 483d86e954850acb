package memory_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// scriptedLLM is a recording llms.Model: it remembers every prompt it was
// given and answers with reply(prompt).
type scriptedLLM struct {
	mu      sync.Mutex
	prompts []string
	reply   func(prompt string) string
}

func (l *scriptedLLM) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	var b strings.Builder
	for _, m := range msgs {
		for _, p := range m.Parts {
			if t, ok := p.(llms.TextContent); ok {
				b.WriteString(t.Text)
			}
		}
	}
	prompt := b.String()
	l.mu.Lock()
	l.prompts = append(l.prompts, prompt)
	l.mu.Unlock()
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: l.reply(prompt)}}}, nil
}

func (l *scriptedLLM) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, l, prompt, opts...)
}

func (l *scriptedLLM) lastPrompt() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.prompts[len(l.prompts)-1]
}

// orderSummarizer remembers the order id mentioned in the folded messages.
func orderSummarizer() summary.Service {
	return summary.ServiceFunc(func(_ context.Context, req summary.Request) (summary.Result, error) {
		res := summary.Result{Narrative: "The user is tracking an order."}
		for _, m := range req.Messages {
			if strings.Contains(m.GetContent(), "#A-1234") {
				res.Facts = append(res.Facts, summary.Fact{Key: "order_id", Value: "#A-1234", Category: summary.Entity})
			}
		}
		return res, nil
	})
}

func smallHierManager(t *testing.T) *memory.Manager {
	t.Helper()
	cfg := hierConfig()
	cfg.TriggerMessageCount, cfg.RecentMessageCount = 6, 4
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg,
		memory.WithSummaries(summary.NewInMemoryStore(0), orderSummarizer()), memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	return mgr
}

func TestMemoryWithConversationChain(t *testing.T) {
	mgr := smallHierManager(t)
	llm := &scriptedLLM{reply: func(string) string { return "ok" }}
	chain := chains.NewConversation(llm, mgr.Memory("s", "alice"))
	ctx := context.Background()
	inputs := []string{"My order is #A-1234", "It is late", "Any news?", "Still waiting", "Hello again", "What was my order?"}
	for _, in := range inputs {
		if _, err := chains.Run(ctx, chain, in); err != nil {
			t.Fatal(err)
		}
	}
	// The first turn left the verbatim window long ago; the fold carries it.
	p := llm.lastPrompt()
	if !strings.Contains(p, "Conversation Facts:\n- order_id: #A-1234") {
		t.Fatalf("fact missing from prompt:\n%s", p)
	}
	if strings.Contains(p, "Human: My order is #A-1234") {
		t.Fatalf("old turn still verbatim:\n%s", p)
	}
	if !strings.Contains(p, "Human: Hello again\nAI: ok") {
		t.Fatalf("recent turn missing:\n%s", p)
	}
	msgs, err := mgr.Messages(ctx, "s", "alice", 0, 0)
	if err != nil || len(msgs) != 12 {
		t.Fatalf("stored %d messages, %v", len(msgs), err)
	}
}

func TestMemoryWithConversationalAgentExecutor(t *testing.T) {
	mgr := smallHierManager(t)
	llm := &scriptedLLM{reply: func(string) string { return "Do I need to use a tool? No\nAI: noted" }}
	exec := agents.NewExecutor(agents.NewConversationalAgent(llm, nil), agents.WithMemory(mgr.Memory("s", "alice")))
	ctx := context.Background()
	for _, in := range []string{"My order is #A-1234", "two", "three", "four", "five"} {
		out, err := chains.Run(ctx, exec, in)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(out) != "noted" {
			t.Fatalf("out = %q", out)
		}
	}
	if err := mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := chains.Run(ctx, exec, "which order?"); err != nil {
		t.Fatal(err)
	}
	p := llm.lastPrompt()
	if !strings.Contains(p, "- order_id: #A-1234") || strings.Contains(p, "Human: My order is") {
		t.Fatalf("prompt does not carry the folded fact:\n%s", p)
	}
	msgs, _ := mgr.Messages(ctx, "s", "alice", 0, 0)
	if msgs[1].Content != " noted" { // stored exactly as the agent returned it
		t.Fatalf("stored answer = %q", msgs[1].Content)
	}
}

func TestMemoryReturnMessagesAndKeys(t *testing.T) {
	mgr := smallHierManager(t)
	ctx := context.Background()
	mem := memory.NewConversationMemory(mgr, "s", "alice", memory.WithReturnMessages(true), memory.WithMemoryKey("chat"))
	if got := mem.MemoryVariables(ctx); len(got) != 1 || got[0] != "chat" {
		t.Fatalf("MemoryVariables = %v", got)
	}
	if err := mem.SaveContext(ctx, map[string]any{"question": "hi"}, map[string]any{"text": "hello"}); err != nil {
		t.Fatal(err)
	}
	if err := mem.SaveContext(ctx, map[string]any{"input": "a", "other": "b"}, map[string]any{"output": 42}); err == nil {
		t.Fatal("non-string output accepted")
	}
	vars, err := mem.LoadMemoryVariables(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs, ok := vars["chat"].([]llms.ChatMessage)
	if !ok || len(msgs) != 2 || msgs[0].GetContent() != "hi" || msgs[1].GetContent() != "hello" {
		t.Fatalf("vars = %#v", vars)
	}
	if err := mem.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if vars, _ := mem.LoadMemoryVariables(ctx, nil); len(vars["chat"].([]llms.ChatMessage)) != 0 {
		t.Fatal("Clear kept messages")
	}
}

func TestChatHistoryAdapter(t *testing.T) {
	mgr := smallHierManager(t)
	ctx := context.Background()
	h := mgr.ChatHistory("s", "alice")
	_ = h.AddUserMessage(ctx, "one")
	_ = h.AddAIMessage(ctx, "two")
	if err := h.SetMessages(ctx, []llms.ChatMessage{llms.HumanChatMessage{Content: "x"}}); err != nil {
		t.Fatal(err)
	}
	got, err := h.Messages(ctx)
	if err != nil || len(got) != 1 || got[0].GetContent() != "x" {
		t.Fatalf("Messages = %v, %v", got, err)
	}
	if got, err := mgr.ChatHistory("s", "bob").Messages(ctx); !errors.Is(err, memory.ErrNotOwner) || len(got) != 0 {
		t.Fatalf("another user read the history: %v, %v", got, err)
	}
	// A missing session reads as empty; Clear of a missing session is fine.
	if got, err := mgr.ChatHistory("missing", "alice").Messages(ctx); err != nil || len(got) != 0 {
		t.Fatalf("missing session = %v, %v", got, err)
	}
	if err := mgr.ChatHistory("missing", "alice").Clear(ctx); err != nil {
		t.Fatal(err)
	}
}
