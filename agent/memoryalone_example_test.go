package agent_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/strata-go/strata/agent"
	"github.com/strata-go/strata/agent/agenttest"
	"github.com/strata-go/strata/internal/standin"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/trimmer"
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

// The direct-call hook of the budget: the model's view of the manager
// builds the prompt, and every reply's usage is reported to it, so that the
// next prompts of the model are priced as its provider counts them. Here
// the provider is a stand-in OpenAI server that counts prompts exactly with
// cl100k_base and refuses any over its 4 096-token window.
func Example_budgetAsProviderCounts() {
	ctx := context.Background()
	srv, err := standin.New(4096, trimmer.EncodingCL100kBase, func(standin.Request) standin.Reply {
		return standin.Reply{Text: strings.Repeat("주문하신 상품은 어제 발송되었습니다. ", 12)}
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	llm, err := openai.New(openai.WithToken("sk-test"), openai.WithBaseURL(srv.URL), openai.WithModel("local-model"))
	if err != nil {
		log.Fatal(err)
	}
	cfg := memory.DefaultConfig()
	cfg.ContextWindowTokens, cfg.OutputReserveTokens = 4096, 512
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer mgr.Close()

	view := mgr.ForModel("local-model")
	const systemPrompt = "당신은 친절한 상담원입니다."
	for turn := range 20 {
		history, err := mgr.LoadHistory(ctx, "s", "u")
		if err != nil {
			log.Fatal(err)
		}
		input := fmt.Sprintf("%d번째 질문: %s", turn, strings.Repeat("배송 조회를 해 보니 문 앞에 두고 가셨다고 합니다. ", 10))
		prompt, _ := view.Prompt(systemPrompt, append(history, llms.HumanChatMessage{Content: input}), 0)
		resp, err := llm.GenerateContent(ctx, agent.MessageContents(prompt), llms.WithMaxTokens(512))
		if err != nil {
			log.Fatal(err) // a prompt refused for its size would end here
		}
		if err := view.ObserveUsage(prompt, nil, resp.Choices[0].GenerationInfo); err != nil {
			log.Printf("usage not used for the budget: %v", err)
		}
		if err := mgr.SaveTurn(ctx, "s", "u", input, resp.Choices[0].Content); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("refused prompts:", len(srv.Refused()))
	// Output:
	// refused prompts: 0
}
