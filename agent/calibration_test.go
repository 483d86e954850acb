package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/strata-go/strata/agent"
	"github.com/strata-go/strata/internal/standin"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/trimmer"
)

// The budget as the provider counts it: conversations in Korean, Japanese,
// Chinese, German and English, and Korean with JSON tool results, pressed
// against a 4 096-token window with a 512-token output reserve, through
// langchaingo's real openai client to a stand-in OpenAI server that counts
// every prompt exactly (cl100k_base or o200k_base) and refuses what does
// not fit. The memory runs on the defaults: no estimator configured.

const (
	calWindow  = 4096
	calReserve = 512
	calUsable  = calWindow - calReserve
)

// calSeed is the seed of the generated conversations: STRATA_SEED, or the
// clock.
func calSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("STRATA_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (replay with STRATA_SEED=%d)", seed, seed)
	return seed
}

// calConversation is one generated conversation.
type calConversation struct {
	name  string
	lang  standin.Language
	tools bool // every turn looks an order up first: JSON tool results
}

var calConversations = []calConversation{
	{"ko", standin.Korean, false}, {"ja", standin.Japanese, false}, {"zh", standin.Chinese, false},
	{"de", standin.German, false}, {"en", standin.English, false}, {"code", standin.Code, false},
	{"ko+json", standin.Korean, true},
}

// calBrain answers in the conversation's language, at random lengths; with
// tools, a user message is first answered with an order lookup.
func calBrain(seed uint64, c calConversation) func(standin.Request) standin.Reply {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 7))
	calls := 0
	return func(r standin.Request) standin.Reply {
		mu.Lock()
		defer mu.Unlock()
		if c.tools && r.Messages[len(r.Messages)-1].Role == "user" {
			calls++
			return standin.Reply{Calls: []standin.ToolCall{{ID: fmt.Sprintf("call_%d", calls), Name: "lookup_orders",
				Arguments: fmt.Sprintf(`{"customer":"C-%d"}`, rng.IntN(1000))}}}
		}
		return standin.Reply{Text: standin.Text(rng, c.lang, calLen(c.lang, 60+rng.IntN(300)))}
	}
}

var lookupDef = llms.FunctionDefinition{
	Name:        "lookup_orders",
	Description: "Looks up a customer's recent orders and returns them as JSON.",
	Parameters: map[string]any{"type": "object", "properties": map[string]any{
		"customer": map[string]any{"type": "string", "description": "The customer id, e.g. C-17."}},
		"required": []string{"customer"}},
}

type calOutcome struct {
	failed  int
	refused []int
	shares  []float64 // provider's prompt count / usable window, of pressed calls
}

func (o calOutcome) median() float64 {
	if len(o.shares) == 0 {
		return 0
	}
	s := slices.Clone(o.shares)
	slices.Sort(s)
	return s[len(s)/2]
}

// calLen is a message length in characters: scripts with spaces take
// about three characters for one CJK character's tokens.
func calLen(lang standin.Language, n int) int {
	if lang == standin.German || lang == standin.English || lang == standin.Code {
		return 3 * n
	}
	return n
}

func calTurns() int {
	if testing.Short() {
		return 30
	}
	return 80
}

func calManager(t *testing.T) *memory.Manager {
	t.Helper()
	cfg := memory.DefaultConfig()
	cfg.ContextWindowTokens, cfg.OutputReserveTokens = calWindow, calReserve
	cfg.MaxConversationTurns = 50 // takeLast 100 messages: the budget, not the window, decides
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg, memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	return mgr
}

// runAgentConversation runs one conversation through agent.Run.
func runAgentConversation(t *testing.T, seed uint64, c calConversation, enc, model string) calOutcome {
	srv, err := standin.New(calWindow, enc, calBrain(seed, c))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	llm, err := openai.New(openai.WithToken("sk-test"), openai.WithBaseURL(srv.URL), openai.WithModel(model))
	if err != nil {
		t.Fatal(err)
	}
	mgr := calManager(t)
	rng := rand.New(rand.NewPCG(seed, 11))
	opts := []agent.Option{
		agent.WithSystemPrompt(standin.Text(rng, c.lang, 80)),
		agent.WithCallOptions(llms.WithModel(model), llms.WithMaxTokens(calReserve)),
	}
	if c.tools {
		opts = append(opts, agent.WithFunctions([]llms.FunctionDefinition{lookupDef}, func(context.Context, string, string) (string, error) {
			return standin.ToolResult(rng, c.lang, 1+rng.IntN(3)), nil
		}))
	}
	a := newAgent(t, llm, mgr, opts...)
	var out calOutcome
	for turn := range calTurns() {
		before := len(srv.Accepted())
		res, err := a.Run(context.Background(), "s", "u", standin.Text(rng, c.lang, calLen(c.lang, 40+rng.IntN(360))))
		if err != nil {
			t.Logf("turn %d failed: %v", turn, err)
			out.failed++
			continue
		}
		if acc := srv.Accepted(); res.Dropped > 0 && len(acc) > before {
			out.shares = append(out.shares, float64(acc[len(acc)-1])/calUsable)
		}
	}
	out.refused = srv.Refused()
	return out
}

// checkOutcome holds a conversation to the promise: no failed turn, at
// most one refused call, and a median pressed prompt of at least 80% of the
// usable window (never over it: the provider accepted it).
func checkOutcome(t *testing.T, o calOutcome) {
	t.Helper()
	t.Logf("failed %d, refused %v, pressed calls %d, median share %.3f", o.failed, o.refused, len(o.shares), o.median())
	if o.failed > 0 {
		t.Errorf("%d turns failed", o.failed)
	}
	if len(o.refused) > 1 {
		t.Errorf("%d calls refused, want at most 1", len(o.refused))
	}
	if len(o.shares) < calTurns()/3 {
		t.Errorf("only %d pressed calls: the conversation does not press the budget", len(o.shares))
	}
	if m := o.median(); m < 0.80 {
		t.Errorf("median share of the usable window %.3f < 0.80", m)
	}
}

// TestAgentBudgetAsProviderCounts: agent.Run on the defaults, a model name
// the tokenizer table does not know (so the budget is learned from the
// provider's reports alone), and one it knows (exact from the first call).
func TestAgentBudgetAsProviderCounts(t *testing.T) {
	seed := calSeed(t)
	var mu sync.Mutex
	refused := 0
	t.Run("conversations", func(t *testing.T) {
		for _, enc := range []string{trimmer.EncodingCL100kBase, trimmer.EncodingO200kBase} {
			for _, c := range calConversations {
				t.Run(enc+"/"+c.name, func(t *testing.T) {
					t.Parallel()
					o := runAgentConversation(t, seed, c, enc, "standin-chat")
					checkOutcome(t, o)
					mu.Lock()
					refused += len(o.refused)
					mu.Unlock()
				})
			}
		}
		for model, enc := range map[string]string{"gpt-4": trimmer.EncodingCL100kBase, "gpt-4o-mini": trimmer.EncodingO200kBase} {
			t.Run(model+"/ko+json", func(t *testing.T) {
				t.Parallel()
				o := runAgentConversation(t, seed, calConversations[len(calConversations)-1], enc, model)
				checkOutcome(t, o)
				if len(o.refused) > 0 {
					t.Errorf("exact tokenizer known, yet %d calls refused", len(o.refused))
				}
			})
		}
	})
	// The budget is learned from the usage of accepted calls, not from
	// refusals: the one retry a conversation may use is seldom needed (a
	// budget that learned from refusals alone needs about one per
	// conversation).
	if refused > 2 {
		t.Errorf("%d calls refused over %d conversations", refused, 2*len(calConversations))
	}
}

// runDirectConversation is a langchaingo user calling the model directly:
// the prompt from the model's view of the manager, every reply's usage
// reported with ObserveUsage, the turn saved with SaveMessages. With tools,
// the user runs the model's tool calls and calls again, keeping room for
// the tool definitions as the view's estimator prices their JSON.
func runDirectConversation(t *testing.T, seed uint64, c calConversation, enc string) calOutcome {
	const model = "standin-chat"
	srv, err := standin.New(calWindow, enc, calBrain(seed, c))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	llm, err := openai.New(openai.WithToken("sk-test"), openai.WithBaseURL(srv.URL), openai.WithModel(model))
	if err != nil {
		t.Fatal(err)
	}
	mgr := calManager(t)
	view := mgr.ForModel(model)
	rng := rand.New(rand.NewPCG(seed, 13))
	system := standin.Text(rng, c.lang, 80)
	callOpts := []llms.CallOption{llms.WithMaxTokens(calReserve)}
	var tools []llms.Tool
	if c.tools {
		tools = []llms.Tool{{Type: "function", Function: &lookupDef}}
		callOpts = append(callOpts, llms.WithTools(tools))
	}
	ctx := context.Background()
	var out calOutcome
	for turn := range calTurns() {
		history, err := mgr.LoadHistory(ctx, "s", "u")
		if err != nil {
			t.Fatal(err)
		}
		input := standin.Text(rng, c.lang, calLen(c.lang, 40+rng.IntN(360)))
		msgs := []llms.ChatMessage{llms.HumanChatMessage{Content: input}}
		for round := 0; round < 3; round++ {
			reserve := 0
			if c.tools {
				defs, err := json.Marshal(tools)
				if err != nil {
					t.Fatal(err)
				}
				reserve = view.Config().Estimator.Estimate(string(defs))
			}
			prompt, rep := view.Prompt(system, append(slices.Clone(history), msgs...), reserve)
			resp, err := llm.GenerateContent(ctx, agent.MessageContents(prompt), callOpts...)
			if err != nil {
				t.Logf("turn %d failed: %v", turn, err)
				out.failed++
				break
			}
			choice := resp.Choices[0]
			if err := view.ObserveUsage(prompt, tools, choice.GenerationInfo); err != nil {
				t.Fatalf("turn %d: usage not taken: %v", turn, err)
			}
			if acc := srv.Accepted(); rep.Removed > 0 {
				out.shares = append(out.shares, float64(acc[len(acc)-1])/calUsable)
			}
			if len(choice.ToolCalls) == 0 {
				msgs = append(msgs, llms.AIChatMessage{Content: choice.Content})
				if err := mgr.SaveMessages(ctx, "s", "u", msgs...); err != nil {
					t.Fatal(err)
				}
				break
			}
			msgs = append(msgs, llms.AIChatMessage{Content: choice.Content, ToolCalls: choice.ToolCalls})
			for _, tc := range choice.ToolCalls {
				msgs = append(msgs, llms.ToolChatMessage{ID: tc.ID, Content: standin.ToolResult(rng, c.lang, 1+rng.IntN(3))})
			}
		}
	}
	out.refused = srv.Refused()
	return out
}

// TestDirectCallBudgetAsProviderCounts: the same promise for a user of
// the documented hook, without the agent (and without its retry).
func TestDirectCallBudgetAsProviderCounts(t *testing.T) {
	seed := calSeed(t)
	for _, enc := range []string{trimmer.EncodingCL100kBase, trimmer.EncodingO200kBase} {
		for _, c := range calConversations {
			t.Run(enc+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				o := runDirectConversation(t, seed, c, enc)
				checkOutcome(t, o)
				if len(o.refused) > 0 {
					t.Errorf("%d calls refused; the direct path has no retry", len(o.refused))
				}
			})
		}
	}
}
