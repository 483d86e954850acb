// Command quickstart is Strata's quick start as a program: a memory-backed
// agent with a tool. With OPENAI_API_KEY set it talks to OpenAI (and folds
// old turns with it); without, it runs offline on a scripted stand-in model
// and the extractive summarizer.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

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
	if strings.Contains(id, "#A-1234") {
		return "shipped with UPS on May 2", nil
	}
	return "", fmt.Errorf("order %q not found", id)
}

// newModel returns OpenAI when OPENAI_API_KEY is set, else an offline
// stand-in that calls the tool once and then answers.
func newModel() (llms.Model, summary.Service, error) {
	if os.Getenv("OPENAI_API_KEY") == "" {
		model := agenttest.NewScript(
			agenttest.ToolCalls(agenttest.Call("call_1", "order_status", `{"input":"#A-1234"}`)),
			agenttest.Text("Your order #A-1234 shipped with UPS on May 2."))
		return model, summary.NewExtractiveService(), nil
	}
	llm, err := openai.New() // any llms.Model: googleai, anthropic, ollama, …
	if err != nil {
		return nil, nil, err
	}
	return llm, summary.NewLLMService(llm), nil
}

func main() {
	llm, summarizer, err := newModel()
	if err != nil {
		log.Fatal(err)
	}
	cfg := memory.DefaultConfig()
	cfg.Enabled = true // fold old turns into facts + a narrative
	// The model's budget is the manager's, defined once.
	cfg.ContextWindowTokens, cfg.OutputReserveTokens = 128_000, 4_096
	ms := memory.NewInMemoryStore() // keeps each session's messages, summary and fold lease
	mgr, err := memory.NewManager(ms, cfg,
		memory.WithSummaries(ms.Summaries(), summarizer))
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
