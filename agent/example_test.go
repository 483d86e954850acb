package agent_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/tmc/langchaingo/prompts"
	"github.com/tmc/langchaingo/tools"

	"github.com/strata-go/strata/agent"
	"github.com/strata-go/strata/agent/agenttest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// orderStatus is a plain langchaingo tool: the model passes it an order id.
type orderStatus struct{}

func (orderStatus) Name() string { return "order_status" }
func (orderStatus) Description() string {
	return "Returns the status of an order, given its id (e.g. #A-1234)."
}
func (orderStatus) Call(_ context.Context, id string) (string, error) {
	if strings.TrimSpace(id) == "#A-1234" {
		return "shipped with UPS on May 2", nil
	}
	return "", fmt.Errorf("order %q not found", id)
}

// The quick start: a memory-backed agent with a tool, on any langchaingo
// model. Old turns are folded into facts and a narrative by the model.
func Example_quickStart() {
	llm, err := openai.New() // any llms.Model: googleai, anthropic, ollama, …
	if err != nil {
		log.Fatal(err) // e.g. OPENAI_API_KEY is not set
	}
	cfg := memory.DefaultConfig()
	cfg.Enabled = true // fold old turns into facts + a narrative
	// The model's budget is the manager's, defined once.
	cfg.ContextWindowTokens, cfg.OutputReserveTokens = 128_000, 4_096
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg,
		memory.WithSummaries(summary.NewInMemoryStore(0), summary.NewLLMService(llm)))
	if err != nil {
		log.Fatal(err)
	}
	defer mgr.Close()
	bot, err := agent.New(llm, mgr,
		agent.WithSystemPrompt("You are a helpful support agent."),
		agent.WithTools(orderStatus{})) // any langchaingo tools.Tool
	if err != nil {
		log.Fatal(err)
	}
	res, err := bot.Run(context.Background(), "session-42", "alice", "Where is my order #A-1234?")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text)
}

// A turn with a tool call, on a scripted model: the whole turn is saved.
func ExampleAgent_Run() {
	ctx := context.Background()
	mgr, _ := memory.NewManager(memory.NewInMemoryStore(), memory.DefaultConfig())
	defer mgr.Close()

	model := agenttest.NewScript( // asks for the tool, then answers
		agenttest.ToolCalls(agenttest.Call("call_1", "order_status", `{"input":"#A-1234"}`)),
		agenttest.Text("Your order #A-1234 shipped with UPS on May 2."))
	bot, err := agent.New(model, mgr,
		agent.WithSystemPrompt("You are a support agent."),
		agent.WithTools(orderStatus{}))
	if err != nil {
		log.Fatal(err)
	}
	res, err := bot.Run(ctx, "session-1", "dana", "Where is my order #A-1234?")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text)
	fmt.Println("tool rounds:", res.ToolRounds)

	saved, _ := mgr.Messages(ctx, "session-1", "dana", 0, 0)
	for _, m := range saved {
		if len(m.ToolCalls) > 0 {
			fmt.Printf("%s: calls %s %s\n", m.Role, m.ToolCalls[0].FunctionCall.Name, m.ToolCalls[0].FunctionCall.Arguments)
			continue
		}
		fmt.Printf("%s: %s\n", m.Role, m.Content)
	}
	// Output:
	// Your order #A-1234 shipped with UPS on May 2.
	// tool rounds: 1
	// user: Where is my order #A-1234?
	// assistant: calls order_status {"input":"#A-1234"}
	// tool: shipped with UPS on May 2
	// assistant: Your order #A-1234 shipped with UPS on May 2.
}

// Streaming: the answer's text reaches the callback as it arrives.
func ExampleAgent_RunStream() {
	ctx := context.Background()
	mgr, _ := memory.NewManager(memory.NewInMemoryStore(), memory.DefaultConfig())
	defer mgr.Close()
	bot, _ := agent.New(agenttest.NewScript(agenttest.Text("Hello Dana, how can I help?")), mgr)

	_, err := bot.RunStream(ctx, "session-1", "dana", "Hi, I'm Dana.", func(_ context.Context, chunk []byte) error {
		fmt.Printf("[%s]", chunk)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	// Output:
	// [Hello ][Dana, ][how ][can ][I ][help?]
}

// newFoldingManager keeps 4 messages verbatim once a session holds more
// than 6, folding older ones with the offline extractive summarizer.
func newFoldingManager() *memory.Manager {
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	cfg.TriggerMessageCount, cfg.RecentMessageCount = 6, 4
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg,
		memory.WithSummaries(summary.NewInMemoryStore(0), summary.NewExtractiveService()),
		memory.WithLogger(quiet))
	if err != nil {
		log.Fatal(err)
	}
	return mgr
}

// langchaingo's conversational (ReAct) agent with Strata memory: the
// executor loads the session's history as a string into the prompt's
// {{.history}} slot and saves each input and final answer. After a fold, the
// first turn's order id reaches the prompt as a fact.
func Example_conversationalAgent() {
	ctx := context.Background()
	mgr := newFoldingManager()
	defer mgr.Close()
	llm := agenttest.New(reactBrain) // a scripted ReAct model

	exec := agents.NewExecutor(
		agents.NewConversationalAgent(llm, []tools.Tool{plainOrderTool()}),
		agents.WithMemory(mgr.Memory("session-1", "dana")))
	for _, input := range []string{"Please look up my order #A-1234.", "Thanks.", "Do you ship abroad?", "OK."} {
		if _, err := chains.Run(ctx, exec, input); err != nil {
			log.Fatal(err)
		}
		_ = mgr.Flush(ctx) // wait for the background fold (tests and examples only)
	}
	answer, err := chains.Run(ctx, exec, "Which order did I ask about?")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.TrimSpace(answer))
	prompt := llm.LastRequest().Text()
	fmt.Println(strings.Contains(prompt, "- order_id: #A-1234"), strings.Contains(prompt, "Human: Please look up"))
	// Output:
	// You asked about order #A-1234.
	// true false
}

// langchaingo's OpenAI functions agent with Strata memory. Its prompt has no
// history slot and the executor only passes strings, so the history string
// goes into an extra system message template.
func Example_openAIFunctionsAgent() {
	ctx := context.Background()
	mgr := newFoldingManager()
	defer mgr.Close()
	llm := agenttest.New(functionsBrain) // a scripted function-calling model

	opts := agents.NewOpenAIOption()
	fa := agents.NewOpenAIFunctionsAgent(llm, []tools.Tool{plainOrderTool()},
		opts.WithSystemMessage("You are a support agent."),
		opts.WithExtraMessages([]prompts.MessageFormatter{
			prompts.NewSystemMessagePromptTemplate("Conversation memory:\n{{.history}}", []string{"history"}),
		}))
	exec := agents.NewExecutor(fa, agents.WithMemory(mgr.Memory("session-1", "dana")))
	for _, input := range []string{"Please look up my order #A-1234.", "Thanks.", "Do you ship abroad?", "OK."} {
		if _, err := chains.Run(ctx, exec, input); err != nil {
			log.Fatal(err)
		}
		_ = mgr.Flush(ctx)
	}
	answer, err := chains.Run(ctx, exec, "Which order did I ask about?")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(answer)
	slot := llm.LastRequest().Messages[1].Parts[0].(llms.TextContent).Text
	fmt.Println(strings.SplitN(slot, "\n", 4)[:3])
	// Output:
	// You asked about order #A-1234.
	// [Conversation memory: system: Conversation Facts: - order_id: #A-1234]
}
