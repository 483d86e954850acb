package agent_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/tmc/langchaingo/tools"

	"github.com/strata-go/strata/agent"
	"github.com/strata-go/strata/agent/agenttest"
	"github.com/strata-go/strata/internal/testutil"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

func newAgent(t testing.TB, model llms.Model, mgr *memory.Manager, opts ...agent.Option) *agent.Agent {
	t.Helper()
	a, err := agent.New(model, mgr, append([]agent.Option{agent.WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func roles(msgs []llms.MessageContent) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Role)
	}
	return out
}

func TestRunAssemblesAndSaves(t *testing.T) {
	ctx := context.Background()
	mgr := newManager(t, 0, 0)
	if err := mgr.SaveTurn(ctx, "s", "alice", "hello", "hi there"); err != nil {
		t.Fatal(err)
	}
	model := agenttest.NewScript(agenttest.Text("your order is late"))
	a := newAgent(t, model, mgr, agent.WithSystemPrompt("Be brief."), agent.WithModelVariant("v2"))
	res, err := a.Run(ctx, "s", "alice", "where is my order?")
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "your order is late" || res.ModelCalls != 1 || res.ToolRounds != 0 {
		t.Fatalf("result = %+v", res)
	}
	req := model.LastRequest()
	want := "system: Be brief.\nhuman: hello\nai: hi there\nhuman: where is my order?\n"
	if got := req.Text(); got != want {
		t.Fatalf("request:\n%s\nwant:\n%s", got, want)
	}
	if len(req.Options.Tools) != 0 {
		t.Fatalf("tools offered without tools: %v", req.ToolNames())
	}
	got := stored(t, mgr, "s", "alice")
	wantStored := []string{"human: hello", "ai: hi there", "human: where is my order?", "ai: your order is late"}
	if !slices.Equal(got, wantStored) {
		t.Fatalf("stored %q", got)
	}
	msgs, _ := mgr.Messages(ctx, "s", "alice", 0, 0)
	if msgs[3].Metadata[store.MetadataModelVariant] != "v2" || msgs[2].Metadata != nil {
		t.Fatalf("metadata: user %v, assistant %v", msgs[2].Metadata, msgs[3].Metadata)
	}
}

func TestRunToolLoopSavesWholeTurn(t *testing.T) {
	ctx := context.Background()
	mgr := newManager(t, 0, 0)
	tool := &orderLookup{}
	model := agenttest.NewScript(
		agenttest.ToolCalls(agenttest.Call("c1", "lookup_order", `{"order_id":"#C-7000"}`)),
		agenttest.ToolCalls(
			agenttest.Call("c2", "lookup_order", `{"order_id":"#C-7001"}`),
			agenttest.Call("c3", "lookup_order", `{"order_id":"#Z-1"}`)),
		agenttest.Text("#C-7000 was replaced by #C-7001, which is processing."),
	)
	a := newAgent(t, model, mgr, agent.WithSystemPrompt("sys"), agent.WithTools(tool), agent.WithModelVariant("m1"))
	res, err := a.Run(ctx, "s", "alice", "status of #C-7000?")
	if err != nil {
		t.Fatal(err)
	}
	if res.ToolRounds != 2 || res.ModelCalls != 3 || tool.calls.Load() != 3 {
		t.Fatalf("rounds %d, calls %d, tool calls %d", res.ToolRounds, res.ModelCalls, tool.calls.Load())
	}
	want := []string{
		"human: status of #C-7000?",
		`ai:  [c1 lookup_order {"order_id":"#C-7000"}]`,
		"tool c1: " + orders["#C-7000"],
		`ai:  [c2 lookup_order {"order_id":"#C-7001"}; c3 lookup_order {"order_id":"#Z-1"}]`,
		"tool c2: " + orders["#C-7001"],
		"tool c3: error: order #Z-1 not found",
		"ai: #C-7000 was replaced by #C-7001, which is processing.",
	}
	if got := lines(res.Messages); !slices.Equal(got, want) {
		t.Fatalf("turn:\n%s", strings.Join(got, "\n"))
	}
	if got := stored(t, mgr, "s", "alice"); !slices.Equal(got, want) {
		t.Fatalf("stored:\n%s", strings.Join(got, "\n"))
	}
	msgs, _ := mgr.Messages(ctx, "s", "alice", 0, 0)
	for _, m := range msgs {
		switch m.Role {
		case store.RoleAssistant:
			if m.Metadata[store.MetadataModelVariant] != "m1" {
				t.Fatalf("assistant message without variant: %+v", m)
			}
		case store.RoleTool:
			if m.Name != "lookup_order" {
				t.Fatalf("tool result without name: %+v", m)
			}
		}
	}
	// The third call saw both rounds, in order, with the tool offered.
	reqs := model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	if got := roles(reqs[2].Messages); !slices.Equal(got, []string{"system", "human", "ai", "tool", "ai", "tool", "tool"}) {
		t.Fatalf("roles %v", got)
	}
	if names := reqs[0].ToolNames(); !slices.Equal(names, []string{"lookup_order"}) {
		t.Fatalf("tools %v", names)
	}
	if err := trimmer.Validate(res.Prompt); err != nil {
		t.Fatal(err)
	}
	// Tool results carry the function name (Gemini needs it) on every provider.
	for _, m := range reqs[2].Messages {
		for _, p := range m.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok && r.Name != "lookup_order" {
				t.Fatalf("response without name: %+v", r)
			}
		}
	}
}

func TestModelFailureSavesUserOnly(t *testing.T) {
	ctx := context.Background()
	mgr := newManager(t, 0, 0)
	boom := errors.New("boom")
	model := agenttest.New(func(context.Context, agenttest.Request) (*llms.ContentResponse, error) { return nil, boom })
	a := newAgent(t, model, mgr)
	res, err := a.Run(ctx, "s", "alice", "hello?")
	if !errors.Is(err, boom) || res != nil {
		t.Fatalf("res %v, err %v", res, err)
	}
	if got := stored(t, mgr, "s", "alice"); !slices.Equal(got, []string{"human: hello?"}) {
		t.Fatalf("stored %q", got)
	}
}

func TestModelFailureAfterToolRoundSavesUserOnly(t *testing.T) {
	ctx := context.Background()
	mgr := newManager(t, 0, 0)
	model := agenttest.NewScript(agenttest.ToolCalls(agenttest.Call("c1", "lookup_order", `{"order_id":"#A-1234"}`)), nil)
	a := newAgent(t, model, mgr, agent.WithTools(&orderLookup{}))
	if _, err := a.Run(ctx, "s", "alice", "where?"); err == nil {
		t.Fatal("no error")
	}
	if got := stored(t, mgr, "s", "alice"); !slices.Equal(got, []string{"human: where?"}) {
		t.Fatalf("stored %q", got)
	}
}

func TestOwnershipErrorAbortsBeforeModel(t *testing.T) {
	ctx := context.Background()
	mgr := newManager(t, 0, 0)
	if err := mgr.SaveTurn(ctx, "s", "bob", "mine", "yes"); err != nil {
		t.Fatal(err)
	}
	model := agenttest.NewScript(agenttest.Text("leak"))
	a := newAgent(t, model, mgr)
	if _, err := a.Run(ctx, "s", "alice", "let me in"); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("err = %v", err)
	}
	if n := len(model.Requests()); n != 0 {
		t.Fatalf("model called %d times", n)
	}
	if got := stored(t, mgr, "s", "bob"); len(got) != 2 {
		t.Fatalf("stored %q", got)
	}
}

func TestMaxToolRounds(t *testing.T) {
	ctx := context.Background()
	mgr := newManager(t, 0, 0)
	n := 0
	model := agenttest.New(func(context.Context, agenttest.Request) (*llms.ContentResponse, error) {
		n++
		return agenttest.ToolCalls(agenttest.Call(fmt.Sprintf("c%d", n), "lookup_order", `{"order_id":"#A-1234"}`)), nil
	})
	a := newAgent(t, model, mgr, agent.WithTools(&orderLookup{}), agent.WithMaxToolRounds(2))
	_, err := a.Run(ctx, "s", "alice", "loop")
	if !errors.Is(err, agent.ErrMaxToolRounds) {
		t.Fatalf("err = %v", err)
	}
	if got := len(model.Requests()); got != 3 {
		t.Fatalf("%d model calls, want 3", got)
	}
	// The user message and the two completed rounds are saved; the third,
	// unexecuted request is not.
	got := stored(t, mgr, "s", "alice")
	if len(got) != 5 || got[0] != "human: loop" || !strings.HasPrefix(got[4], "tool c2: ") {
		t.Fatalf("stored %q", got)
	}
	msgs, _ := mgr.LoadHistory(ctx, "s", "alice")
	if err := trimmer.Validate(msgs); err != nil {
		t.Fatalf("saved history invalid: %v", err)
	}
}

func TestCancelDuringToolAborts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgr := newManager(t, 0, 0)
	slow := tools.Tool(funcTool{name: "slow", fn: func(ctx context.Context, _ string) (string, error) {
		cancel()
		<-ctx.Done()
		return "", ctx.Err()
	}})
	model := agenttest.NewScript(agenttest.ToolCalls(agenttest.Call("c1", "slow", `{"input":"x"}`)), agenttest.Text("never"))
	a := newAgent(t, model, mgr, agent.WithTools(slow))
	if _, err := a.Run(ctx, "s", "alice", "go"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if got := stored(t, mgr, "s", "alice"); !slices.Equal(got, []string{"human: go"}) {
		t.Fatalf("stored %q", got)
	}
	if len(model.Requests()) != 1 {
		t.Fatal("model called after cancellation")
	}
}

// funcTool is a plain tools.Tool (no schema): it gets the "input" string.
type funcTool struct {
	name string
	fn   func(context.Context, string) (string, error)
}

func (f funcTool) Name() string                                       { return f.name }
func (f funcTool) Description() string                                { return "a plain tool" }
func (f funcTool) Call(ctx context.Context, s string) (string, error) { return f.fn(ctx, s) }

func TestPlainToolGetsStringInput(t *testing.T) {
	ctx := context.Background()
	var inputs []string
	echo := funcTool{name: "echo", fn: func(_ context.Context, s string) (string, error) {
		inputs = append(inputs, s)
		return "echo:" + s, nil
	}}
	model := agenttest.NewScript(
		agenttest.ToolCalls(
			agenttest.Call("a", "echo", `{"input":"one"}`),
			agenttest.Call("b", "echo", `{"__arg1":"two"}`),
			agenttest.Call("c", "echo", `"three"`),
			agenttest.Call("d", "echo", `{"q":"four"}`),
			agenttest.Call("e", "echo", `not json`),
			agenttest.Call("f", "nope", `{}`)),
		agenttest.Text("done"))
	a := newAgent(t, model, newManager(t, 0, 0), agent.WithTools(echo))
	res, err := a.Run(ctx, "s", "u", "go")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(inputs, []string{"one", "two", "three", "four", "not json"}) {
		t.Fatalf("inputs %q", inputs)
	}
	if last := res.Messages[len(res.Messages)-2]; last.GetContent() != `error: unknown tool "nope"` {
		t.Fatalf("unknown tool result %q", last.GetContent())
	}
	def := model.Requests()[0].Options.Tools[0].Function
	props := def.Parameters.(map[string]any)["properties"].(map[string]any)
	if _, ok := props["input"].(map[string]any); !ok {
		t.Fatalf("plain tool schema %#v", def.Parameters)
	}
}

func TestWithFunctions(t *testing.T) {
	ctx := context.Background()
	var got []string
	defs := []llms.FunctionDefinition{{Name: "add", Description: "adds", Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}},
	}}}
	model := agenttest.NewScript(agenttest.ToolCalls(agenttest.Call("x", "add", `{"a":1,"b":2}`)), agenttest.Text("3"))
	a := newAgent(t, model, newManager(t, 0, 0), agent.WithFunctions(defs, func(_ context.Context, name, args string) (string, error) {
		got = append(got, name+" "+args)
		return "3", nil
	}))
	if _, err := a.Run(ctx, "s", "u", "1+2"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{`add {"a":1,"b":2}`}) {
		t.Fatalf("calls %q", got)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	mgr := newManager(t, 0, 0)
	model := agenttest.NewScript()
	tool := &orderLookup{}
	var nilScript *agenttest.Model
	var nilTool *orderLookup
	for name, tc := range map[string]struct {
		model llms.Model
		mgr   *memory.Manager
		opts  []agent.Option
		want  string
	}{
		"nil model":       {nil, mgr, nil, "nil model"},
		"typed-nil model": {nilScript, mgr, nil, "nil *agenttest.Model"},
		"nil manager":     {model, nil, nil, "nil memory manager"},
		"zero rounds":     {model, mgr, []agent.Option{agent.WithMaxToolRounds(0)}, "max tool rounds"},
		"bad window":      {model, mgr, []agent.Option{agent.WithContextWindow(0, 10)}, "WithContextWindow(0, 10)"},
		"bad provider":    {model, mgr, []agent.Option{agent.WithProvider("cohere")}, "unknown provider"},
		"duplicate tool":  {model, mgr, []agent.Option{agent.WithTools(tool, tool)}, "two tools"},
		"nil tool":        {model, mgr, []agent.Option{agent.WithTools(nil)}, "is nil"},
		"typed-nil tool":  {model, mgr, []agent.Option{agent.WithTools(nilTool)}, "is nil"},
		"nil function":    {model, mgr, []agent.Option{agent.WithFunctions([]llms.FunctionDefinition{{Name: "f"}}, nil)}, "is nil"},
	} {
		a, err := agent.New(tc.model, tc.mgr, tc.opts...)
		if err == nil || a != nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: agent %v, err %v; want an error containing %q", name, a, err, tc.want)
		}
	}
}

// TestTypedNilModelFailsAtNew: a constructor that failed returns a typed nil
// next to its error; ignoring the error must fail at New, not panic in Run.
func TestTypedNilModelFailsAtNew(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	llm, ctorErr := openai.New() // no key: a nil *openai.LLM and an error
	if ctorErr == nil || llm != nil {
		t.Fatalf("openai.New without a key: %v, %v", llm, ctorErr)
	}
	a, err := agent.New(llm, newManager(t, 0, 0))
	if err == nil || a != nil {
		t.Fatalf("New accepted a nil *openai.LLM: %v", a)
	}
	if !strings.Contains(err.Error(), "nil *openai.LLM") || !strings.Contains(err.Error(), "constructor") {
		t.Fatalf("err = %v", err)
	}
}

// TestContextWindowMustMatchManager: the budget is the manager's;
// WithContextWindow only states it, and a different statement is refused
// at New with both budgets and the fields to set.
func TestContextWindowMustMatchManager(t *testing.T) {
	model := agenttest.NewScript()
	_, err := agent.New(model, newManager(t, 0, 0), agent.WithContextWindow(3000, 500))
	if !errors.Is(err, agent.ErrBudgetMismatch) {
		t.Fatalf("mismatch accepted: %v", err)
	}
	def := memory.DefaultConfig()
	for _, want := range []string{"WithContextWindow(3000, 500)", fmt.Sprint(def.ContextWindowTokens), fmt.Sprint(def.OutputReserveTokens),
		"memory.Config.ContextWindowTokens", "OutputReserveTokens"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// Matching values, or none, are accepted.
	mgr := newBudgetManager(t, 3000, 500)
	if _, err := agent.New(model, mgr, agent.WithContextWindow(3000, 500)); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.New(model, mgr); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.New(model, mgr, agent.WithContextWindow(3000, 400)); !errors.Is(err, agent.ErrBudgetMismatch) {
		t.Fatalf("reserve mismatch accepted: %v", err)
	}
}

// newBudgetManager is a takeLast manager with the given budget.
func newBudgetManager(t testing.TB, window, reserve int) *memory.Manager {
	t.Helper()
	cfg := memory.DefaultConfig()
	cfg.ContextWindowTokens, cfg.OutputReserveTokens = window, reserve
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg, memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	return mgr
}

// TestPromptBeforeEveryCall: every call's prompt is the manager's, fitted
// into window − output reserve − system prompt − tools × 200, and valid.
func TestPromptBeforeEveryCall(t *testing.T) {
	ctx := context.Background()
	const window, reserve, system = 500, 50, "You are terse."
	mgr := newBudgetManager(t, window, reserve)
	for i := range 8 {
		if err := mgr.SaveTurn(ctx, "s", "u", fmt.Sprintf("old question %d with some words in it", i), fmt.Sprintf("old answer %d with some words in it", i)); err != nil {
			t.Fatal(err)
		}
	}
	model := agenttest.NewScript(
		agenttest.ToolCalls(agenttest.Call("c1", "lookup_order", `{"order_id":"#A-1234"}`)),
		agenttest.Text("shipped"))
	a := newAgent(t, model, mgr, agent.WithSystemPrompt(system), agent.WithContextWindow(window, reserve), agent.WithTools(&orderLookup{}))
	res, err := a.Run(ctx, "s", "u", "where is #A-1234?")
	if err != nil {
		t.Fatal(err)
	}
	meter := trimmer.New(window, reserve, mgr.Config().Estimator)
	budget := meter.Budget(system, trimmer.ToolDefinitionTokens)
	if budget != window-reserve-trimmer.ToolDefinitionTokens-mgr.Config().Estimator.Estimate(system) {
		t.Fatalf("budget %d", budget)
	}
	for i, req := range model.Requests() {
		var msgs []llms.ChatMessage
		for _, m := range req.Messages {
			msgs = append(msgs, fromContent(m)...)
		}
		if err := trimmer.Validate(msgs); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if msgs[0].GetContent() != system {
			t.Fatalf("request %d does not open with the system prompt", i)
		}
		if cost := meter.Cost(msgs[1:]); cost > budget {
			t.Fatalf("request %d costs %d > budget %d", i, cost, budget)
		}
		if len(msgs) >= 18 {
			t.Fatalf("request %d not trimmed: %d messages", i, len(msgs))
		}
		if !strings.Contains(req.Text(), "human: where is #A-1234?") {
			t.Fatalf("request %d lost the user message", i)
		}
	}
	if res.Dropped == 0 || !strings.Contains(model.LastRequest().Text(), "result lookup_order") {
		t.Fatalf("dropped %d\n%s", res.Dropped, model.LastRequest().Text())
	}
	want, _ := mgr.Prompt(system, append(history(t, mgr, "s", "u", 16), res.Messages[:3]...), trimmer.ToolDefinitionTokens)
	if got := lines(res.Prompt); !slices.Equal(got, lines(want)) {
		t.Fatalf("prompt is not the manager's:\n%s", strings.Join(got, "\n"))
	}
	// Everything is stored even though little was sent.
	if got := stored(t, mgr, "s", "u"); len(got) != 16+4 {
		t.Fatalf("stored %d", len(got))
	}
}

// history returns the first n stored messages of a session as chat
// messages.
func history(t testing.TB, mgr *memory.Manager, session, user string, n int) []llms.ChatMessage {
	t.Helper()
	msgs, err := mgr.Messages(context.Background(), session, user, 0, n)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]llms.ChatMessage, len(msgs))
	for i, m := range msgs {
		out[i] = m.ChatMessage()
	}
	return out
}

// fromContent converts a request message back to chat messages.
func fromContent(m llms.MessageContent) []llms.ChatMessage {
	var text string
	var calls []llms.ToolCall
	var out []llms.ChatMessage
	for _, p := range m.Parts {
		switch p := p.(type) {
		case llms.TextContent:
			text += p.Text
		case llms.ToolCall:
			calls = append(calls, p)
		case llms.ToolCallResponse:
			out = append(out, llms.ToolChatMessage{ID: p.ToolCallID, Content: p.Content})
		}
	}
	switch m.Role {
	case llms.ChatMessageTypeSystem:
		return []llms.ChatMessage{llms.SystemChatMessage{Content: text}}
	case llms.ChatMessageTypeHuman:
		return []llms.ChatMessage{llms.HumanChatMessage{Content: text}}
	case llms.ChatMessageTypeAI:
		return []llms.ChatMessage{llms.AIChatMessage{Content: text, ToolCalls: calls}}
	}
	return out
}

func TestGeminiRequestShape(t *testing.T) {
	ctx := context.Background()
	mgr := newManager(t, 0, 0)
	// A stored mid-conversation system note and a parallel tool round.
	err := mgr.SaveMessages(ctx, "s", "u",
		llms.HumanChatMessage{Content: "hi"},
		llms.SystemChatMessage{Content: "user is a VIP"},
		llms.AIChatMessage{Content: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	model := agenttest.NewScript(
		agenttest.ToolCalls(
			llms.ToolCall{FunctionCall: &llms.FunctionCall{Name: "lookup_order", Arguments: `{"order_id":"#A-1234"}`}},
			llms.ToolCall{FunctionCall: &llms.FunctionCall{Name: "lookup_order", Arguments: `{"order_id":"#C-7001"}`}}),
		agenttest.Text("both found"))
	a := newAgent(t, model, mgr, agent.WithProvider(agent.ProviderGemini), agent.WithSystemPrompt("sys"), agent.WithTools(&orderLookup{}))
	res, err := a.Run(ctx, "s", "u", "check my orders")
	if err != nil {
		t.Fatal(err)
	}
	req := model.LastRequest()
	if got := roles(req.Messages); !slices.Equal(got, []string{"system", "human", "ai", "human", "ai", "tool"}) {
		t.Fatalf("roles %v", got)
	}
	// The system note joins the user message next to it (user turns alternate).
	if parts := req.Messages[1].Parts; len(parts) != 2 || parts[1].(llms.TextContent).Text != agent.SystemNotePrefix+"user is a VIP" {
		t.Fatalf("system note %+v", parts)
	}
	calls := req.Messages[4].Parts
	resps := req.Messages[5].Parts
	if len(calls) != 2 || len(resps) != 2 {
		t.Fatalf("calls %v, responses %v", calls, resps)
	}
	for i := range calls {
		c, r := calls[i].(llms.ToolCall), resps[i].(llms.ToolCallResponse)
		if c.ID == "" || c.ID != r.ToolCallID || r.Name != "lookup_order" {
			t.Fatalf("call %+v, response %+v", c, r)
		}
	}
	// The generated ids are stored, so the results pair with their calls.
	if err := trimmer.Validate(res.Messages); err != nil {
		t.Fatal(err)
	}
	if err := trimmer.Validate(res.Prompt); err != nil {
		t.Fatal(err)
	}
	hist, _ := mgr.LoadHistory(ctx, "s", "u")
	if err := trimmer.Validate(hist[3:]); err != nil {
		t.Fatal(err)
	}
}

func TestSingleSystemMerge(t *testing.T) {
	ctx := context.Background()
	mgr := newManager(t, 4, 2)
	for _, turn := range [][2]string{{"My order is #A-1234.", "Noted #A-1234."}, {"two", "2"}, {"three", "3"}} {
		if err := mgr.SaveTurn(ctx, "s", "u", turn[0], turn[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []agent.Provider{agent.ProviderGemini, agent.ProviderAnthropic, agent.ProviderOpenAI} {
		model := agenttest.NewScript(agenttest.Text("ok"))
		a := newAgent(t, model, mgr, agent.WithProvider(p), agent.WithSystemPrompt("You help."))
		res, err := a.Run(ctx, "s", "u", "which order?")
		if err != nil {
			t.Fatal(err)
		}
		req := model.LastRequest()
		var systems []string
		for _, m := range req.Messages {
			if m.Role == llms.ChatMessageTypeSystem {
				systems = append(systems, m.Parts[0].(llms.TextContent).Text)
			}
		}
		if req.Messages[0].Role != llms.ChatMessageTypeSystem || systems[0] != "You help." && p == agent.ProviderOpenAI {
			t.Fatalf("%s: first message %v", p, req.Messages[0])
		}
		switch p {
		case agent.ProviderOpenAI:
			if len(systems) != 3 || !strings.HasPrefix(systems[1], summary.FactsHeader) || !strings.HasPrefix(systems[2], summary.NarrativeHeader) {
				t.Fatalf("openai systems %q", systems)
			}
		default:
			if len(systems) != 1 || !strings.HasPrefix(systems[0], "You help.\n\n"+summary.FactsHeader+"\n- order_id: #A-1234") ||
				!strings.Contains(systems[0], "\n\n"+summary.NarrativeHeader) {
				t.Fatalf("%s systems %q", p, systems)
			}
		}
		if err := trimmer.Validate(res.Prompt); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		// Reset the session to the three seeded turns for the next provider.
		if err := mgr.DeleteSession(ctx, "s", "u"); err != nil {
			t.Fatal(err)
		}
		for _, turn := range [][2]string{{"My order is #A-1234.", "Noted #A-1234."}, {"two", "2"}, {"three", "3"}} {
			_ = mgr.SaveTurn(ctx, "s", "u", turn[0], turn[1])
		}
		_ = mgr.Flush(ctx)
	}
}

func TestAnthropicRequestShape(t *testing.T) {
	ctx := context.Background()
	model := agenttest.NewScript(
		agenttest.ToolCalls(agenttest.Call("t1", "lookup_order", `{"order_id":"#A-1234"}`), agenttest.Call("t2", "lookup_order", "")),
		agenttest.Text("ok"))
	a := newAgent(t, model, newManager(t, 0, 0), agent.WithProvider(agent.ProviderAnthropic), agent.WithTools(&orderLookup{}))
	if _, err := a.Run(ctx, "s", "u", "go"); err != nil {
		t.Fatal(err)
	}
	req := model.LastRequest()
	if got := roles(req.Messages); !slices.Equal(got, []string{"human", "ai", "ai", "tool", "tool"}) {
		t.Fatalf("roles %v", got)
	}
	for _, m := range req.Messages {
		if len(m.Parts) != 1 {
			t.Fatalf("message with %d parts: %+v", len(m.Parts), m)
		}
	}
	if args := req.Messages[2].Parts[0].(llms.ToolCall).FunctionCall.Arguments; args != "{}" {
		t.Fatalf("empty arguments sent as %q", args)
	}
}

func TestRunStream(t *testing.T) {
	ctx := context.Background()
	mgr := newManager(t, 0, 0)
	model := agenttest.NewScript(
		&llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "Let me check. ", ToolCalls: []llms.ToolCall{agenttest.Call("c1", "lookup_order", `{"order_id":"#A-1234"}`)}}}},
		agenttest.Text("It shipped with UPS."))
	a := newAgent(t, model, mgr, agent.WithTools(&orderLookup{}))
	var chunks []string
	res, err := a.RunStream(ctx, "s", "u", "where is #A-1234?", func(_ context.Context, c []byte) error {
		chunks = append(chunks, string(c))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(chunks, ""); got != "Let me check. It shipped with UPS." || len(chunks) < 4 {
		t.Fatalf("chunks %q", chunks)
	}
	if res.Text != "It shipped with UPS." {
		t.Fatalf("text %q", res.Text)
	}
	if got := stored(t, mgr, "s", "u"); len(got) != 4 {
		t.Fatalf("stored %q", got)
	}

	// A callback error stops the turn like a failed model call.
	stop := errors.New("client went away")
	model2 := agenttest.NewScript(agenttest.Text("a b c"))
	a2 := newAgent(t, model2, mgr)
	_, err = a2.RunStream(ctx, "s", "u", "again", func(context.Context, []byte) error { return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("err = %v", err)
	}
	if got := stored(t, mgr, "s", "u"); len(got) != 5 || got[4] != "human: again" {
		t.Fatalf("stored %q", got)
	}
	if _, err := a2.RunStream(ctx, "s", "u", "x", nil); err == nil {
		t.Fatal("nil callback accepted")
	}
}

func TestConcurrentRuns(t *testing.T) {
	ctx := context.Background()
	mgr := newManager(t, 6, 4)
	model := agenttest.New(func(_ context.Context, r agenttest.Request) (*llms.ContentResponse, error) {
		if strings.HasPrefix(r.LastText(), "{") {
			return agenttest.Text("done"), nil
		}
		return agenttest.ToolCalls(agenttest.Call("", "lookup_order", `{"order_id":"#A-1234"}`)), nil
	})
	a := newAgent(t, model, mgr, agent.WithTools(&orderLookup{}))
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			_, err := a.Run(ctx, fmt.Sprintf("s%d", i%2), "u", fmt.Sprintf("q%d", i))
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"s0", "s1"} {
		msgs, err := mgr.Messages(ctx, s, "u", 0, 0)
		if err != nil || len(msgs) != 16 {
			t.Fatalf("%s: %d messages, %v", s, len(msgs), err)
		}
		var chat []llms.ChatMessage
		for _, m := range msgs {
			chat = append(chat, m.ChatMessage())
		}
		if err := trimmer.Validate(chat); err != nil {
			t.Fatalf("%s: turns interleaved: %v", s, err)
		}
	}
}

// Some OpenAI-compatible servers number calls per response ("call_0" every
// round): each result still gets the name of the call it answers.
func TestReusedCallIDs(t *testing.T) {
	ctx := context.Background()
	echo := funcTool{name: "echo", fn: func(_ context.Context, s string) (string, error) { return s, nil }}
	model := agenttest.NewScript(
		agenttest.ToolCalls(agenttest.Call("call_0", "lookup_order", `{"order_id":"#A-1234"}`)),
		agenttest.ToolCalls(agenttest.Call("call_0", "echo", `{"input":"hi"}`)),
		agenttest.Text("done"))
	mgr := newManager(t, 0, 0)
	a := newAgent(t, model, mgr, agent.WithProvider(agent.ProviderGemini), agent.WithTools(&orderLookup{}, echo))
	res, err := a.Run(ctx, "s", "u", "go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range model.LastRequest().Messages {
		for _, p := range m.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok {
				names = append(names, r.Name)
			}
		}
	}
	if !slices.Equal(names, []string{"lookup_order", "echo"}) {
		t.Fatalf("response names %q", names)
	}
	if err := trimmer.Validate(res.Prompt); err != nil {
		t.Fatal(err)
	}
	msgs, _ := mgr.Messages(ctx, "s", "u", 0, 0)
	if msgs[2].Name != "lookup_order" || msgs[4].Name != "echo" {
		t.Fatalf("stored names %q, %q", msgs[2].Name, msgs[4].Name)
	}
}

func TestUsageSummed(t *testing.T) {
	info := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	model := agenttest.NewScript(
		&llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{agenttest.Call("c", "lookup_order", `{"order_id":"#A-1234"}`)},
			GenerationInfo: info("PromptTokens", 10, "CompletionTokens", 2, "TotalTokens", 12)}}},
		&llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "ok",
			GenerationInfo: info("PromptTokens", int32(20), "CompletionTokens", int32(3), "TotalTokens", int32(23))}}})
	a := newAgent(t, model, newManager(t, 0, 0), agent.WithTools(&orderLookup{}))
	res, err := a.Run(context.Background(), "s", "u", "go")
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage != (agent.Usage{PromptTokens: 30, CompletionTokens: 5, TotalTokens: 35}) {
		t.Fatalf("usage %+v", res.Usage)
	}
}

// TestQuietByDefault: without WithLogger the agent writes nothing, not even
// to slog.Default; with one, it reports failed tool calls.
func TestQuietByDefault(t *testing.T) {
	var global testutil.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&global, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(prev)

	script := func() *agenttest.Model {
		return agenttest.NewScript(agenttest.ToolCalls(agenttest.Call("c1", "lookup_order", `{"order_id":"#Z-1"}`)), agenttest.Text("not found"))
	}
	a, err := agent.New(script(), newManager(t, 0, 0), agent.WithTools(&orderLookup{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), "s", "u", "where is #Z-1?"); err != nil {
		t.Fatal(err)
	}
	if global.String() != "" {
		t.Fatalf("logged without a logger:\n%s", global.String())
	}
	var own testutil.Buffer
	a, err = agent.New(script(), newManager(t, 0, 0), agent.WithTools(&orderLookup{}),
		agent.WithLogger(slog.New(slog.NewTextHandler(&own, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), "s", "u", "where is #Z-1?"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(own.String(), "tool failed") || !strings.Contains(own.String(), "model call") || global.String() != "" {
		t.Fatalf("own logger:\n%s\nglobal:\n%s", own.String(), global.String())
	}
}
