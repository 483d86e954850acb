package memory_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/trimmer"
)

// byteEstimator prices a text at one token per byte, so that budgets in
// these tests are exact.
var byteEstimator = trimmer.EstimatorFunc(func(s string) int { return len(s) })

func promptManager(t *testing.T, window, output int) *memory.Manager {
	t.Helper()
	cfg := memory.DefaultConfig()
	cfg.ContextWindowTokens, cfg.OutputReserveTokens = window, output
	cfg.Estimator = byteEstimator
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg, memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	return mgr
}

// Manager.Prompt returns the system prompt first, then the history fitted
// into ContextWindowTokens − OutputReserveTokens − reserve (less the system
// prompt): the oldest messages before the last user message go first, the
// tool rounds after it only once those are gone, a tool call and its
// results only together, and the last user message stays.
func TestPromptFitsTheOneBudget(t *testing.T) {
	x := func(n int) string { return strings.Repeat("x", n) }
	// Every message costs 100 tokens: 80 of text plus the per-message
	// overhead (trimmer.MessageOverheadTokens = 20).
	history := []llms.ChatMessage{
		llms.HumanChatMessage{Content: "1" + x(79)},
		llms.AIChatMessage{Content: "2" + x(79)},
		llms.HumanChatMessage{Content: "3" + x(79)},
		llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: "c1", Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "f", Arguments: "4" + x(78)}}}},
		llms.ToolChatMessage{ID: "c1", Content: "5" + x(79)},
		llms.AIChatMessage{Content: "6" + x(79)},
		llms.HumanChatMessage{Content: "7" + x(79)},
	}
	system := x(100) // 100 tokens
	mgr := promptManager(t, 1000, 200)
	if cost := trimmer.New(1000, 200, byteEstimator).Cost(history); cost != 700 {
		t.Fatalf("test setup: history costs %d, want 700", cost)
	}
	// Budget for the history: 1000 − 200 − 100 (system prompt) − reserve.
	for _, tc := range []struct {
		reserve int
		want    string // first characters of the kept messages
	}{
		{0, "1234567"}, // 700 fits exactly
		{1, "234567"},  // 699: the oldest message goes
		{250, "4567"},  // 450: old plain messages go first
		{301, "67"},    // 399: the tool group goes whole, though dropping its call alone would fit
		{350, "67"},    // 350
		{10_000, "7"},  // nothing fits: the last user message stays
	} {
		got, _ := mgr.Prompt(system, history, tc.reserve)
		if len(got) == 0 || got[0].GetType() != llms.ChatMessageTypeSystem || got[0].GetContent() != system {
			t.Fatalf("reserve %d: the prompt does not start with the system prompt: %q", tc.reserve, contents(got))
		}
		if k := keptIDs(got[1:]); k != tc.want {
			t.Errorf("reserve %d: kept %q, want %q", tc.reserve, k, tc.want)
		}
	}
	// A turn in progress: the tool round after the question goes only once
	// every older message is gone, and the question stays.
	turn := append(slices.Clone(history),
		llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: "c2", Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "f", Arguments: "8" + x(78)}}}},
		llms.ToolChatMessage{ID: "c2", Content: "9" + x(79)})
	for _, tc := range []struct {
		reserve int
		want    string
	}{
		{100, "456789"}, // 600 for 900: the oldest messages go first
		{400, "789"},    // 300: every older message goes before the tool round
		{450, "7"},      // 250: then the tool round, never the question
	} {
		if k := keptIDs(promptOf(mgr, system, turn, tc.reserve)[1:]); k != tc.want {
			t.Errorf("turn in progress, reserve %d: kept %q, want %q", tc.reserve, k, tc.want)
		}
	}
	// Without a system prompt there is no system message, and its tokens are
	// free for history.
	if k := keptIDs(promptOf(mgr, "", history, 100)); k != "1234567" {
		t.Errorf("no system prompt: kept %q", k)
	}
	// The output reserve comes from the configuration: 300 of output and
	// 100 of reserve trim like 200 and 200.
	other := promptManager(t, 1000, 300)
	if a, b := keptIDs(promptOf(other, system, history, 100)[1:]), keptIDs(promptOf(mgr, system, history, 200)[1:]); a != b || a != "34567" {
		t.Errorf("output reserve 300 + reserve 100 kept %q; output 200 + reserve 200 kept %q", a, b)
	}
	// The input is not modified.
	if history[0].GetContent() != "1"+x(79) || len(history) != 7 {
		t.Fatal("Prompt modified its input")
	}
}

// keptIDs is the first character of each message (the tool call's of its
// arguments), checking on the way that no tool result lost its call.
func keptIDs(msgs []llms.ChatMessage) string {
	var b strings.Builder
	calls := map[string]bool{}
	for _, m := range msgs {
		switch v := m.(type) {
		case llms.AIChatMessage:
			if len(v.ToolCalls) > 0 {
				for _, c := range v.ToolCalls {
					calls[c.ID] = true
				}
				b.WriteByte(v.ToolCalls[0].FunctionCall.Arguments[0])
				continue
			}
		case llms.ToolChatMessage:
			if !calls[v.ID] {
				return "orphan tool result " + v.ID
			}
		}
		b.WriteByte(m.GetContent()[0])
	}
	return b.String()
}

// The prompt of a hierarchical session: system prompt, then the summary
// blocks, then the verbatim window.
func TestPromptOfHierarchicalHistory(t *testing.T) {
	f := newFixture(t, hierConfig())
	seed(t, f.store, "s", "alice", 16)
	h, err := f.mgr.Load(context.Background(), "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := f.mgr.Prompt("You are helpful.", h.Messages, trimmer.ToolDefinitionTokens)
	if len(got) != len(h.Messages)+1 || got[0].GetContent() != "You are helpful." {
		t.Fatalf("prompt = %q", contents(got))
	}
	wantContents(t, got[1:], contents(h.Messages)...)
	if got[1].GetType() != llms.ChatMessageTypeSystem || got[2].GetType() != llms.ChatMessageTypeSystem {
		t.Fatal("summary blocks do not follow the system prompt")
	}
}

// promptOf is Manager.Prompt without its report.
func promptOf(m *memory.Manager, system string, history []llms.ChatMessage, reserve int) []llms.ChatMessage {
	prompt, _ := m.Prompt(system, history, reserve)
	return prompt
}
