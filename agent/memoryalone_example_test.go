package agent_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/agent"
	"github.com/strata-go/strata/agent/agenttest"
	"github.com/strata-go/strata/memory"
)

// turn is the README's "memory alone" snippet: load, build the whole prompt
// with the manager's one prompt builder, convert it for the model, save.
func turn(ctx context.Context, mgr *memory.Manager, llm llms.Model, sessionID, userID, systemPrompt, input string) (string, error) {
	history, err := mgr.LoadHistory(ctx, sessionID, userID) // facts, narrative, recent messages
	if err != nil {
		return "", err
	}
	prompt, _ := mgr.Prompt(systemPrompt, append(history, llms.HumanChatMessage{Content: input}), 0)
	resp, err := llm.GenerateContent(ctx, agent.MessageContents(prompt))
	if err != nil {
		return "", err
	}
	if len(resp.Choices) == 0 {
		return "", errors.New("no answer")
	}
	answer := resp.Choices[0].Content
	if err := mgr.SaveTurn(ctx, sessionID, userID, input, answer); err != nil {
		return "", err
	}
	return answer, nil
}

// The memory alone, without an agent: Manager.Prompt returns the whole
// prompt, system prompt included, and MessageContents converts it — tool
// calls and tool results included — for llms.Model.GenerateContent.
func ExampleMessageContents() {
	ctx := context.Background()
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), memory.DefaultConfig())
	if err != nil {
		panic(err)
	}
	defer mgr.Close()

	// An earlier turn with a tool call, saved losslessly.
	_ = mgr.SaveMessages(ctx, "chat-1", "alice",
		llms.HumanChatMessage{Content: "Where is order #A-1?"},
		llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: "c1", Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "order_status", Arguments: `{"id":"A-1"}`}}}},
		llms.ToolChatMessage{ID: "c1", Content: "shipped"},
		llms.AIChatMessage{Content: "It has shipped."})

	llm := agenttest.NewScript(agenttest.Text("You asked about #A-1."))
	answer, err := turn(ctx, mgr, llm, "chat-1", "alice", "You are a support agent.", "Which order was it?")
	if err != nil {
		panic(err)
	}
	fmt.Println(answer)
	fmt.Print(llm.LastRequest().Text()) // what the model was sent

	// Output:
	// You asked about #A-1.
	// system: You are a support agent.
	// human: Where is order #A-1?
	// ai: call order_status {"id":"A-1"}
	// tool: result order_status shipped
	// ai: It has shipped.
	// human: Which order was it?
}
