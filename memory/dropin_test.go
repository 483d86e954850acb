package memory_test

// The langchaingo drop-in suite: langchaingo's own tests for its memory
// types (buffer, window buffer, token buffer, chat message history), for
// chains with memory and for agents with memory, re-expressed so that each
// case runs twice — once on langchaingo's types, once on Strata's adapters
// (NewConversationMemory, Manager.Memory, Manager.ChatHistory). A case that
// fails on langchaingo's side is a wrong case; one that fails only on
// Strata's side is a drop-in difference to fix.

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	lcmemory "github.com/tmc/langchaingo/memory"
	"github.com/tmc/langchaingo/prompts"
	"github.com/tmc/langchaingo/schema"
	"github.com/tmc/langchaingo/tools"

	"github.com/strata-go/strata/memory"
)

// memOpts are the settings a case asks of a memory, in a side-neutral form.
type memOpts struct {
	kind           string // "buffer" (default), "window" or "token"
	window         int    // window size in turns, for "window"
	tokenLimit     int    // for "token"
	returnMessages bool
	inputKey       string
	outputKey      string
	memoryKey      string
	humanPrefix    string
	aiPrefix       string
	preload        []llms.ChatMessage
}

// side builds memories and histories of one implementation.
type side struct {
	name string
	mem  func(t *testing.T, o memOpts) schema.Memory
	hist func(t *testing.T, preload []llms.ChatMessage) schema.ChatMessageHistory
}

func (o memOpts) lcOptions() []lcmemory.ConversationBufferOption {
	var opts []lcmemory.ConversationBufferOption
	if o.returnMessages {
		opts = append(opts, lcmemory.WithReturnMessages(true))
	}
	if o.inputKey != "" {
		opts = append(opts, lcmemory.WithInputKey(o.inputKey))
	}
	if o.outputKey != "" {
		opts = append(opts, lcmemory.WithOutputKey(o.outputKey))
	}
	if o.memoryKey != "" {
		opts = append(opts, lcmemory.WithMemoryKey(o.memoryKey))
	}
	if o.humanPrefix != "" {
		opts = append(opts, lcmemory.WithHumanPrefix(o.humanPrefix))
	}
	if o.aiPrefix != "" {
		opts = append(opts, lcmemory.WithAIPrefix(o.aiPrefix))
	}
	if o.preload != nil {
		opts = append(opts, lcmemory.WithChatHistory(lcmemory.NewChatMessageHistory(
			lcmemory.WithPreviousMessages(append([]llms.ChatMessage(nil), o.preload...)))))
	}
	return opts
}

func (o memOpts) strataOptions() []memory.MemoryOption {
	var opts []memory.MemoryOption
	if o.returnMessages {
		opts = append(opts, memory.WithReturnMessages(true))
	}
	if o.inputKey != "" {
		opts = append(opts, memory.WithInputKey(o.inputKey))
	}
	if o.outputKey != "" {
		opts = append(opts, memory.WithOutputKey(o.outputKey))
	}
	if o.memoryKey != "" {
		opts = append(opts, memory.WithMemoryKey(o.memoryKey))
	}
	if o.humanPrefix != "" {
		opts = append(opts, memory.WithHumanPrefix(o.humanPrefix))
	}
	if o.aiPrefix != "" {
		opts = append(opts, memory.WithAIPrefix(o.aiPrefix))
	}
	return opts
}

var langchaingoSide = side{
	name: "langchaingo",
	mem: func(_ *testing.T, o memOpts) schema.Memory {
		switch o.kind {
		case "window":
			return lcmemory.NewConversationWindowBuffer(o.window, o.lcOptions()...)
		case "token":
			return lcmemory.NewConversationTokenBuffer(&scriptedModel{}, o.tokenLimit, o.lcOptions()...)
		}
		return lcmemory.NewConversationBuffer(o.lcOptions()...)
	},
	hist: func(_ *testing.T, preload []llms.ChatMessage) schema.ChatMessageHistory {
		return lcmemory.NewChatMessageHistory(lcmemory.WithPreviousMessages(append([]llms.ChatMessage(nil), preload...)))
	},
}

// strataManager is a manager with summaries off whose takeLast window is
// turns turns (2 × turns messages).
func strataManager(t *testing.T, turns int) *memory.Manager {
	t.Helper()
	cfg := memory.DefaultConfig()
	cfg.MaxConversationTurns = turns
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg, memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	return mgr
}

var strataSide = side{
	name: "strata",
	mem: func(t *testing.T, o memOpts) schema.Memory {
		turns := 1000 // the buffer and the token buffer keep everything here
		if o.kind == "window" {
			turns = o.window
		}
		mgr := strataManager(t, turns)
		if o.preload != nil {
			if err := mgr.SaveMessages(context.Background(), "s", "alice", o.preload...); err != nil {
				t.Fatal(err)
			}
		}
		if opts := o.strataOptions(); len(opts) > 0 {
			return memory.NewConversationMemory(mgr, "s", "alice", opts...)
		}
		return mgr.Memory("s", "alice")
	},
	hist: func(t *testing.T, preload []llms.ChatMessage) schema.ChatMessageHistory {
		h := strataManager(t, 1000).ChatHistory("s", "alice")
		if len(preload) > 0 {
			if err := h.SetMessages(context.Background(), preload); err != nil {
				t.Fatal(err)
			}
		}
		return h
	},
}

// scriptedModel is an llms.Model that answers with its choices in turn (the
// last one repeated) and records the prompts it was given, rendered as
// "role: text" lines.
type scriptedModel struct {
	mu      sync.Mutex
	choices []llms.ContentChoice
	prompts []string
}

func replies(texts ...string) *scriptedModel {
	m := &scriptedModel{}
	for _, s := range texts {
		m.choices = append(m.choices, llms.ContentChoice{Content: s})
	}
	return m
}

func (l *scriptedModel) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	var b strings.Builder
	for _, m := range msgs {
		for _, p := range m.Parts {
			if t, ok := p.(llms.TextContent); ok {
				b.WriteString(string(m.Role) + ": " + t.Text + "\n")
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.prompts = append(l.prompts, b.String())
	if len(l.choices) == 0 {
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{}}}, nil
	}
	c := l.choices[min(len(l.prompts)-1, len(l.choices)-1)]
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{&c}}, nil
}

func (l *scriptedModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, l, prompt, opts...)
}

func (l *scriptedModel) prompt(i int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i < 0 {
		i += len(l.prompts)
	}
	if i < 0 || i >= len(l.prompts) {
		return ""
	}
	return l.prompts[i]
}

// lookupTool is a tools.Tool that answers "shipped" for any input.
type lookupTool struct{ calls []string }

func (*lookupTool) Name() string        { return "lookup" }
func (*lookupTool) Description() string { return "looks an order up" }
func (l *lookupTool) Call(_ context.Context, in string) (string, error) {
	l.calls = append(l.calls, in)
	return "shipped", nil
}

// Helpers shared by the cases.

func load(t *testing.T, m schema.Memory) map[string]any {
	t.Helper()
	v, err := m.LoadMemoryVariables(context.Background(), map[string]any{})
	if err != nil {
		t.Fatalf("LoadMemoryVariables: %v", err)
	}
	return v
}

func save(t *testing.T, m schema.Memory, in, out map[string]any) {
	t.Helper()
	if err := m.SaveContext(context.Background(), in, out); err != nil {
		t.Fatalf("SaveContext: %v", err)
	}
}

func wantVars(t *testing.T, got, want map[string]any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("memory variables\n got %#v\nwant %#v", got, want)
	}
}

func wantInvalidInput(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, lcmemory.ErrInvalidInputValues) {
		t.Fatalf("err = %v, want one wrapping memory.ErrInvalidInputValues", err)
	}
}

func histMessages(t *testing.T, h schema.ChatMessageHistory) []llms.ChatMessage {
	t.Helper()
	msgs, err := h.Messages(context.Background())
	if err != nil {
		t.Fatalf("Messages: %v", err)
	}
	return msgs
}

func wantMessages(t *testing.T, got, want []llms.ChatMessage) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("messages\n got %#v\nwant %#v", got, want)
	}
}

var h = func(s string) llms.ChatMessage { return llms.HumanChatMessage{Content: s} }
var ai = func(s string) llms.ChatMessage { return llms.AIChatMessage{Content: s} }

// everyType holds one message of every langchaingo type and shape.
var everyType = []llms.ChatMessage{
	llms.SystemChatMessage{Content: "be brief"},
	llms.HumanChatMessage{Content: "where is #A-1?"},
	llms.AIChatMessage{Content: "", ToolCalls: []llms.ToolCall{{ID: "c1", Type: "function",
		FunctionCall: &llms.FunctionCall{Name: "lookup", Arguments: `{"id":"A-1"}`}}}},
	llms.ToolChatMessage{ID: "c1", Content: "shipped"},
	llms.AIChatMessage{Content: "it shipped", ReasoningContent: "the tool said so"},
	llms.GenericChatMessage{Role: "critic", Name: "rev", Content: "too terse"},
	llms.AIChatMessage{Content: "calling", FunctionCall: &llms.FunctionCall{Name: "track", Arguments: `{"id":"A-1"}`}},
	llms.FunctionChatMessage{Name: "track", Content: "in transit"},
	llms.AIChatMessage{Content: "done"},
}

type dropCase struct {
	name string
	run  func(t *testing.T, s side)
}

func memoryCases() []dropCase {
	ctx := context.Background()
	return []dropCase{
		// memory/buffer_test.go
		{"buffer/empty history is an empty string", func(t *testing.T, s side) {
			wantVars(t, load(t, s.mem(t, memOpts{})), map[string]any{"history": ""})
		}},
		{"buffer/one turn", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{})
			save(t, m, map[string]any{"foo": "bar"}, map[string]any{"bar": "foo"})
			wantVars(t, load(t, m), map[string]any{"history": "Human: bar\nAI: foo"})
		}},
		{"buffer/return messages: empty is a non-nil empty slice", func(t *testing.T, s side) {
			wantVars(t, load(t, s.mem(t, memOpts{returnMessages: true})), map[string]any{"history": []llms.ChatMessage{}})
		}},
		{"buffer/return messages after a turn", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{returnMessages: true})
			save(t, m, map[string]any{"foo": "bar"}, map[string]any{"bar": "foo"})
			wantVars(t, load(t, m), map[string]any{"history": []llms.ChatMessage{h("bar"), ai("foo")}})
		}},
		{"buffer/preloaded history", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{preload: []llms.ChatMessage{h("bar"), ai("foo")}})
			wantVars(t, load(t, m), map[string]any{"history": "Human: bar\nAI: foo"})
		}},
		{"buffer/preloaded history of another shape", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{preload: []llms.ChatMessage{h("user message test"), ai("ai message test")}})
			wantVars(t, load(t, m), map[string]any{"history": "Human: user message test\nAI: ai message test"})
		}},
		{"buffer/three turns in order", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{})
			for _, p := range [][2]string{{"a", "1"}, {"b", "2"}, {"c", "3"}} {
				save(t, m, map[string]any{"input": p[0]}, map[string]any{"output": p[1]})
			}
			wantVars(t, load(t, m), map[string]any{"history": "Human: a\nAI: 1\nHuman: b\nAI: 2\nHuman: c\nAI: 3"})
		}},
		{"buffer/memory key", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{memoryKey: "chat_history"})
			if got := m.MemoryVariables(ctx); !reflect.DeepEqual(got, []string{"chat_history"}) {
				t.Fatalf("MemoryVariables = %v", got)
			}
			if got := m.GetMemoryKey(ctx); got != "chat_history" {
				t.Fatalf("GetMemoryKey = %q", got)
			}
			save(t, m, map[string]any{"in": "x"}, map[string]any{"out": "y"})
			wantVars(t, load(t, m), map[string]any{"chat_history": "Human: x\nAI: y"})
		}},
		{"buffer/prefixes", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{humanPrefix: "User", aiPrefix: "Bot"})
			save(t, m, map[string]any{"in": "x"}, map[string]any{"out": "y"})
			wantVars(t, load(t, m), map[string]any{"history": "User: x\nBot: y"})
		}},
		{"buffer/configured input key picks its value", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{inputKey: "question", outputKey: "answer"})
			save(t, m, map[string]any{"question": "q", "context": "c"}, map[string]any{"answer": "a", "sources": "s"})
			wantVars(t, load(t, m), map[string]any{"history": "Human: q\nAI: a"})
		}},
		{"buffer/configured input key missing is an error", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{inputKey: "question"})
			wantInvalidInput(t, m.SaveContext(ctx, map[string]any{"input": "q"}, map[string]any{"output": "a"}))
		}},
		{"buffer/configured output key missing is an error", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{outputKey: "answer"})
			wantInvalidInput(t, m.SaveContext(ctx, map[string]any{"input": "q"}, map[string]any{"text": "a"}))
		}},
		{"buffer/several inputs and no input key is an error", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{})
			wantInvalidInput(t, m.SaveContext(ctx, map[string]any{"input": "q", "other": "o"}, map[string]any{"output": "a"}))
		}},
		{"buffer/several outputs and no output key is an error", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{})
			wantInvalidInput(t, m.SaveContext(ctx, map[string]any{"input": "q"}, map[string]any{"output": "a", "text": "b"}))
		}},
		{"buffer/no input is an error", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{})
			wantInvalidInput(t, m.SaveContext(ctx, map[string]any{}, map[string]any{"output": "a"}))
		}},
		{"buffer/a non-string value is an error", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{})
			wantInvalidInput(t, m.SaveContext(ctx, map[string]any{"input": "q"}, map[string]any{"output": 42}))
		}},
		{"buffer/inputs and outputs are stored as given", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{returnMessages: true})
			save(t, m, map[string]any{"input": "  padded \n"}, map[string]any{"output": " answer\n\n"})
			wantVars(t, load(t, m), map[string]any{"history": []llms.ChatMessage{h("  padded \n"), ai(" answer\n\n")}})
		}},
		{"buffer/an empty output leaves an empty AI message", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{})
			save(t, m, map[string]any{"input": "q1"}, map[string]any{"output": ""})
			save(t, m, map[string]any{"input": "q2"}, map[string]any{"output": "a2"})
			wantVars(t, load(t, m), map[string]any{"history": "Human: q1\nAI: \nHuman: q2\nAI: a2"})
		}},
		{"buffer/history string of every message type is llms.GetBufferString's", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{preload: everyType})
			want, err := llms.GetBufferString(everyType, "Human", "AI")
			if err != nil {
				t.Fatal(err)
			}
			wantVars(t, load(t, m), map[string]any{"history": want})
			for _, line := range []string{"system: be brief", "\nAI: \ntool: shipped", "\ncritic: too terse", "\nfunction: in transit"} {
				if !strings.Contains(want, line) {
					t.Fatalf("%q not in %q", line, want)
				}
			}
		}},
		{"buffer/return messages of every message type", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{preload: everyType, returnMessages: true})
			wantVars(t, load(t, m), map[string]any{"history": everyType})
		}},
		{"buffer/clear", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{})
			save(t, m, map[string]any{"input": "q"}, map[string]any{"output": "a"})
			if err := m.Clear(ctx); err != nil {
				t.Fatal(err)
			}
			wantVars(t, load(t, m), map[string]any{"history": ""})
		}},
		{"buffer/clear with return messages", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{returnMessages: true})
			save(t, m, map[string]any{"input": "q"}, map[string]any{"output": "a"})
			if err := m.Clear(ctx); err != nil {
				t.Fatal(err)
			}
			wantVars(t, load(t, m), map[string]any{"history": []llms.ChatMessage{}})
		}},

		// memory/window_buffer_test.go
		{"window/empty", func(t *testing.T, s side) {
			wantVars(t, load(t, s.mem(t, memOpts{kind: "window", window: 2})), map[string]any{"history": ""})
		}},
		{"window/keeps the last two turns", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{kind: "window", window: 2})
			save(t, m, map[string]any{"foo": "bar1"}, map[string]any{"bar": "foo1"})
			wantVars(t, load(t, m), map[string]any{"history": "Human: bar1\nAI: foo1"})
			save(t, m, map[string]any{"foo": "bar2"}, map[string]any{"bar": "foo2"})
			wantVars(t, load(t, m), map[string]any{"history": "Human: bar1\nAI: foo1\nHuman: bar2\nAI: foo2"})
			save(t, m, map[string]any{"foo": "bar3"}, map[string]any{"bar": "foo3"})
			wantVars(t, load(t, m), map[string]any{"history": "Human: bar2\nAI: foo2\nHuman: bar3\nAI: foo3"})
		}},
		{"window/return messages", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{kind: "window", window: 2, returnMessages: true})
			for _, p := range [][2]string{{"bar1", "foo1"}, {"bar2", "foo2"}, {"bar3", "foo3"}} {
				save(t, m, map[string]any{"foo": p[0]}, map[string]any{"bar": p[1]})
			}
			wantVars(t, load(t, m), map[string]any{"history": []llms.ChatMessage{h("bar2"), ai("foo2"), h("bar3"), ai("foo3")}})
		}},
		{"window/return messages: empty is a non-nil empty slice", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{kind: "window", window: 2, returnMessages: true})
			wantVars(t, load(t, m), map[string]any{"history": []llms.ChatMessage{}})
		}},
		{"window/preloaded history", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{kind: "window", window: 2, preload: []llms.ChatMessage{
				h("bar1"), ai("foo1"), h("bar2"), ai("foo2"), h("bar3"), ai("foo3")}})
			wantVars(t, load(t, m), map[string]any{"history": "Human: bar2\nAI: foo2\nHuman: bar3\nAI: foo3"})
		}},
		{"window/one turn", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{kind: "window", window: 1, preload: []llms.ChatMessage{h("foo"), ai("bar"), h("foo1"), ai("bar1")}})
			wantVars(t, load(t, m), map[string]any{"history": "Human: foo1\nAI: bar1"})
		}},

		// memory/token_buffer_test.go (the limit is not reached)
		{"token/empty", func(t *testing.T, s side) {
			wantVars(t, load(t, s.mem(t, memOpts{kind: "token", tokenLimit: 2000})), map[string]any{"history": ""})
		}},
		{"token/one turn", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{kind: "token", tokenLimit: 2000})
			save(t, m, map[string]any{"foo": "bar"}, map[string]any{"bar": "foo"})
			wantVars(t, load(t, m), map[string]any{"history": "Human: bar\nAI: foo"})
		}},
		{"token/return messages", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{kind: "token", tokenLimit: 2000, returnMessages: true})
			wantVars(t, load(t, m), map[string]any{"history": []llms.ChatMessage{}})
			save(t, m, map[string]any{"foo": "bar"}, map[string]any{"bar": "foo"})
			wantVars(t, load(t, m), map[string]any{"history": []llms.ChatMessage{h("bar"), ai("foo")}})
		}},
		{"token/preloaded history", func(t *testing.T, s side) {
			m := s.mem(t, memOpts{kind: "token", tokenLimit: 2000, preload: []llms.ChatMessage{h("bar"), ai("foo")}})
			wantVars(t, load(t, m), map[string]any{"history": "Human: bar\nAI: foo"})
		}},

		// memory/chat_test.go
		{"history/add AI then user", func(t *testing.T, s side) {
			hs := s.hist(t, nil)
			if err := hs.AddAIMessage(ctx, "foo"); err != nil {
				t.Fatal(err)
			}
			if err := hs.AddUserMessage(ctx, "bar"); err != nil {
				t.Fatal(err)
			}
			wantMessages(t, histMessages(t, hs), []llms.ChatMessage{ai("foo"), h("bar")})
		}},
		{"history/previous messages then a user message", func(t *testing.T, s side) {
			hs := s.hist(t, []llms.ChatMessage{ai("foo"), llms.SystemChatMessage{Content: "bar"}})
			if err := hs.AddUserMessage(ctx, "zoo"); err != nil {
				t.Fatal(err)
			}
			wantMessages(t, histMessages(t, hs), []llms.ChatMessage{ai("foo"), llms.SystemChatMessage{Content: "bar"}, h("zoo")})
		}},
		{"history/empty is a non-nil empty slice", func(t *testing.T, s side) {
			wantMessages(t, histMessages(t, s.hist(t, nil)), []llms.ChatMessage{})
		}},
		{"history/every message type round-trips", func(t *testing.T, s side) {
			hs := s.hist(t, nil)
			for _, m := range everyType {
				if err := hs.AddMessage(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
			wantMessages(t, histMessages(t, hs), everyType)
		}},
		{"history/set messages replaces", func(t *testing.T, s side) {
			hs := s.hist(t, []llms.ChatMessage{h("old")})
			if err := hs.SetMessages(ctx, everyType); err != nil {
				t.Fatal(err)
			}
			wantMessages(t, histMessages(t, hs), everyType)
		}},
		{"history/clear", func(t *testing.T, s side) {
			hs := s.hist(t, []llms.ChatMessage{h("a"), ai("b")})
			if err := hs.Clear(ctx); err != nil {
				t.Fatal(err)
			}
			if got := histMessages(t, hs); len(got) != 0 {
				t.Fatalf("after Clear: %v", got)
			}
		}},
		{"history/under langchaingo's buffer", func(t *testing.T, s side) {
			hs := s.hist(t, nil)
			m := lcmemory.NewConversationBuffer(lcmemory.WithChatHistory(hs))
			save(t, m, map[string]any{"foo": "bar"}, map[string]any{"bar": ""})
			wantVars(t, load(t, m), map[string]any{"history": "Human: bar\nAI: "})
			wantMessages(t, histMessages(t, hs), []llms.ChatMessage{h("bar"), ai("")})
		}},
	}
}

func chainCases() []dropCase {
	ctx := context.Background()
	return []dropCase{
		// chains/conversation_test.go
		{"chains/conversation remembers the previous turn", func(t *testing.T, s side) {
			llm := replies("Hi Jim.", "Your name is Jim.")
			c := chains.NewConversation(llm, s.mem(t, memOpts{}))
			if _, err := chains.Run(ctx, c, "Hi! I'm Jim"); err != nil {
				t.Fatal(err)
			}
			out, err := chains.Run(ctx, c, "What is my name?")
			if err != nil || out != "Your name is Jim." {
				t.Fatalf("Run = %q, %v", out, err)
			}
			if p := llm.prompt(1); !strings.Contains(p, "Current conversation:\nHuman: Hi! I'm Jim\nAI: Hi Jim.\nHuman: What is my name?") {
				t.Fatalf("second prompt:\n%s", p)
			}
		}},
		{"chains/call returns text and saves the turn", func(t *testing.T, s side) {
			mem := s.mem(t, memOpts{returnMessages: false})
			c := chains.NewConversation(replies("pong"), mem)
			out, err := chains.Call(ctx, c, map[string]any{"input": "ping"})
			if err != nil || out["text"] != "pong" {
				t.Fatalf("Call = %v, %v", out, err)
			}
			wantVars(t, load(t, mem), map[string]any{"history": "Human: ping\nAI: pong"})
		}},
		{"chains/predict", func(t *testing.T, s side) {
			mem := s.mem(t, memOpts{})
			c := chains.NewConversation(replies("four"), mem)
			out, err := chains.Predict(ctx, c, map[string]any{"input": "2+2?"})
			if err != nil || out != "four" {
				t.Fatalf("Predict = %q, %v", out, err)
			}
			wantVars(t, load(t, mem), map[string]any{"history": "Human: 2+2?\nAI: four"})
		}},
		{"chains/input is stored as given", func(t *testing.T, s side) {
			mem := s.mem(t, memOpts{returnMessages: false})
			c := chains.NewConversation(replies("  spaced answer \n"), mem)
			if _, err := chains.Run(ctx, c, " spaced question"); err != nil {
				t.Fatal(err)
			}
			// The LLM chain trims the model's output itself; the memory adds
			// no trimming of its own.
			wantVars(t, load(t, mem), map[string]any{"history": "Human:  spaced question\nAI: spaced answer"})
		}},
		{"chains/an empty model output keeps roles alternating", func(t *testing.T, s side) {
			llm := replies("", "second")
			mem := s.mem(t, memOpts{})
			c := chains.NewConversation(llm, mem)
			for _, in := range []string{"first", "again"} {
				if _, err := chains.Run(ctx, c, in); err != nil {
					t.Fatal(err)
				}
			}
			wantVars(t, load(t, mem), map[string]any{"history": "Human: first\nAI: \nHuman: again\nAI: second"})
		}},
		{"chains/a memory with another input key is refused", func(t *testing.T, s side) {
			c := chains.NewConversation(replies("x"), s.mem(t, memOpts{inputKey: "question"}))
			_, err := chains.Run(ctx, c, "hi")
			wantInvalidInput(t, err)
		}},
		{"chains/a memory with another output key is refused", func(t *testing.T, s side) {
			c := chains.NewConversation(replies("x"), s.mem(t, memOpts{outputKey: "output"}))
			_, err := chains.Run(ctx, c, "hi")
			wantInvalidInput(t, err)
		}},
		{"chains/window memory in a conversation", func(t *testing.T, s side) {
			llm := replies("1", "2", "3")
			c := chains.NewConversation(llm, s.mem(t, memOpts{kind: "window", window: 1}))
			for _, in := range []string{"a", "b", "c"} {
				if _, err := chains.Run(ctx, c, in); err != nil {
					t.Fatal(err)
				}
			}
			if p := llm.prompt(2); !strings.Contains(p, "Current conversation:\nHuman: b\nAI: 2\nHuman: c") || strings.Contains(p, "Human: a") {
				t.Fatalf("third prompt:\n%s", p)
			}
		}},
	}
}

func agentCases() []dropCase {
	ctx := context.Background()
	return []dropCase{
		// agents/conversational_test.go
		{"agents/conversational agent remembers", func(t *testing.T, s side) {
			llm := replies("Do I need to use a tool? No\nAI: Hi Bob.", "Do I need to use a tool? No\nAI: You are Bob.")
			mem := s.mem(t, memOpts{})
			exec := agents.NewExecutor(agents.NewConversationalAgent(llm, nil), agents.WithMemory(mem))
			if _, err := chains.Run(ctx, exec, "Hi! my name is Bob"); err != nil {
				t.Fatal(err)
			}
			out, err := chains.Run(ctx, exec, "what is my name?")
			if err != nil || out != " You are Bob." {
				t.Fatalf("Run = %q, %v", out, err)
			}
			if p := llm.prompt(1); !strings.Contains(p, "Human: Hi! my name is Bob\nAI:  Hi Bob.") {
				t.Fatalf("second prompt:\n%s", p)
			}
			wantVars(t, load(t, mem), map[string]any{"history": "Human: Hi! my name is Bob\nAI:  Hi Bob.\nHuman: what is my name?\nAI:  You are Bob."})
		}},
		{"agents/conversational agent with a tool saves only the turn", func(t *testing.T, s side) {
			llm := replies("Do I need to use a tool? Yes\nAction: lookup\nAction Input: A-1",
				"Do I need to use a tool? No\nAI: It shipped.")
			tool := &lookupTool{}
			mem := s.mem(t, memOpts{returnMessages: false})
			exec := agents.NewExecutor(agents.NewConversationalAgent(llm, []tools.Tool{tool}), agents.WithMemory(mem))
			if _, err := chains.Run(ctx, exec, "where is A-1?"); err != nil {
				t.Fatal(err)
			}
			if len(tool.calls) != 1 || tool.calls[0] != "A-1" {
				t.Fatalf("tool calls = %q", tool.calls)
			}
			wantVars(t, load(t, mem), map[string]any{"history": "Human: where is A-1?\nAI:  It shipped."})
		}},
		{"agents/executor returning intermediate steps needs an output key", func(t *testing.T, s side) {
			llm := replies("Do I need to use a tool? No\nAI: ok")
			exec := agents.NewExecutor(agents.NewConversationalAgent(llm, nil),
				agents.WithMemory(s.mem(t, memOpts{})), agents.WithReturnIntermediateSteps())
			_, err := chains.Call(ctx, exec, map[string]any{"input": "hi"})
			wantInvalidInput(t, err)
			mem := s.mem(t, memOpts{outputKey: "output"})
			exec = agents.NewExecutor(agents.NewConversationalAgent(llm, nil),
				agents.WithMemory(mem), agents.WithReturnIntermediateSteps())
			if _, err := chains.Call(ctx, exec, map[string]any{"input": "hi"}); err != nil {
				t.Fatal(err)
			}
			wantVars(t, load(t, mem), map[string]any{"history": "Human: hi\nAI:  ok"})
		}},
		// agents/executor_test.go, OpenAI-functions agent with a history slot
		{"agents/OpenAI-functions agent with memory", func(t *testing.T, s side) {
			llm := &scriptedModel{choices: []llms.ContentChoice{
				{ToolCalls: []llms.ToolCall{{ID: "c1", Type: "function",
					FunctionCall: &llms.FunctionCall{Name: "lookup", Arguments: `{"__arg1":"A-1"}`}}}},
				{Content: "It shipped."},
				{Content: "You asked about A-1."},
			}}
			tool := &lookupTool{}
			mem := s.mem(t, memOpts{})
			a := agents.NewOpenAIFunctionsAgent(llm, []tools.Tool{tool},
				agents.NewOpenAIOption().WithSystemMessage("you are a helpful assistant"),
				agents.NewOpenAIOption().WithExtraMessages([]prompts.MessageFormatter{
					prompts.NewSystemMessagePromptTemplate("Conversation so far:\n{{.history}}", []string{"history"}),
				}))
			exec := agents.NewExecutor(a, agents.WithMemory(mem))
			out, err := chains.Run(ctx, exec, "where is A-1?")
			if err != nil || out != "It shipped." {
				t.Fatalf("Run = %q, %v", out, err)
			}
			if len(tool.calls) != 1 || tool.calls[0] != "A-1" {
				t.Fatalf("tool calls = %q", tool.calls)
			}
			if _, err := chains.Run(ctx, exec, "what did I ask?"); err != nil {
				t.Fatal(err)
			}
			if p := llm.prompt(2); !strings.Contains(p, "Conversation so far:\nHuman: where is A-1?\nAI: It shipped.") {
				t.Fatalf("third prompt:\n%s", p)
			}
			wantVars(t, load(t, mem), map[string]any{"history": "Human: where is A-1?\nAI: It shipped.\nHuman: what did I ask?\nAI: You asked about A-1."})
		}},
	}
}

func dropInCases() []dropCase {
	var all []dropCase
	all = append(all, memoryCases()...)
	all = append(all, chainCases()...)
	return append(all, agentCases()...)
}

// TestLangchaingoDropIn runs every case on langchaingo's types and on
// Strata's adapters.
func TestLangchaingoDropIn(t *testing.T) {
	cases := dropInCases()
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate case %q", c.name)
		}
		seen[c.name] = true
	}
	for _, s := range []side{langchaingoSide, strataSide} {
		t.Run(s.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, s) })
			}
		})
	}
}
