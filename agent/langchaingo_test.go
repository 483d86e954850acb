package agent_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/prompts"
	"github.com/tmc/langchaingo/tools"

	"github.com/strata-go/strata/agent/agenttest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// The recipes for langchaingo's own agents over a Strata session. The
// executor only accepts string memory values, so history goes in as text:
// the conversational agent's prompt has a {{.history}} slot; the OpenAI
// functions agent gets one through an extra system message template.
// Either way the executor stores the input and the final answer only (never
// the tool calls); use agent.Agent for lossless turns.

// plainOrderTool is the order lookup as a string-input tools.Tool, the form
// langchaingo's agents call.
func plainOrderTool() tools.Tool {
	lookup := &orderLookup{}
	return funcTool{name: "lookup_order", fn: func(ctx context.Context, id string) (string, error) {
		return lookup.Call(ctx, fmt.Sprintf(`{"order_id":%q}`, strings.TrimSpace(id)))
	}}
}

var newInputRe = regexp.MustCompile(`(?s)New input: (.*?)\n`)

// reactBrain plays a ReAct model for agents.NewConversationalAgent: it looks
// orders up with the tool, answers "which order" questions from whatever
// order id the prompt holds (history included), and acknowledges the rest.
func reactBrain(_ context.Context, req agenttest.Request) (*llms.ContentResponse, error) {
	prompt := req.Text()
	input := ""
	if m := newInputRe.FindStringSubmatch(prompt); m != nil {
		input = m[1]
	}
	switch {
	case strings.Contains(prompt[strings.LastIndex(prompt, "New input:"):], "Observation:"):
		return agenttest.Text("Do I need to use a tool? No\nAI: Order #A-1234 has shipped with UPS."), nil
	case strings.Contains(input, "look up"):
		return agenttest.Text("Do I need to use a tool? Yes\nAction: lookup_order\nAction Input: " + orderID.FindString(input)), nil
	case strings.Contains(input, "Which order"):
		history := prompt[:strings.Index(prompt, "New input:")]
		return agenttest.Text("Do I need to use a tool? No\nAI: You asked about order " + orderID.FindString(history) + "."), nil
	}
	return agenttest.Text("Do I need to use a tool? No\nAI: Noted."), nil
}

func TestConversationalAgentRecipe(t *testing.T) {
	ctx := context.Background()
	mgr := newManager(t, 6, 4)
	llm := agenttest.New(reactBrain)
	exec := agents.NewExecutor(
		agents.NewConversationalAgent(llm, []tools.Tool{plainOrderTool()}),
		agents.WithMemory(mgr.Memory("s", "dana")))

	out, err := chains.Run(ctx, exec, "Please look up my order #A-1234.")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != "Order #A-1234 has shipped with UPS." {
		t.Fatalf("turn 1: %q", out)
	}
	if obs := llm.LastRequest().Text(); !strings.Contains(obs, `Observation: {"order_id":"#A-1234","status":"shipped"`) {
		t.Fatalf("tool result not in the scratchpad:\n%s", obs)
	}
	for _, in := range []string{"Thanks.", "Do you ship abroad?", "How long does it take?", "OK."} {
		if _, err := chains.Run(ctx, exec, in); err != nil {
			t.Fatal(err)
		}
		if err := mgr.Flush(ctx); err != nil { // deterministic folds
			t.Fatal(err)
		}
	}
	out, err = chains.Run(ctx, exec, "Which order did I ask about?")
	if err != nil {
		t.Fatal(err)
	}
	prompt := llm.LastRequest().Text()
	if !strings.Contains(prompt, summary.FactsHeader+"\n- order_id: #A-1234") {
		t.Fatalf("fact missing from the prompt:\n%s", prompt)
	}
	if strings.Contains(prompt, "Human: Please look up my order") {
		t.Fatalf("first turn still verbatim:\n%s", prompt)
	}
	if strings.TrimSpace(out) != "You asked about order #A-1234." {
		t.Fatalf("answer %q", out)
	}
	// The executor stores the input and the final answer of each turn only,
	// as the agent gave them (its answers keep the space after "AI:").
	if got := stored(t, mgr, "s", "dana"); len(got) != 12 || got[1] != "ai:  Order #A-1234 has shipped with UPS." {
		t.Fatalf("stored %q", got)
	}
}

// functionsBrain plays a function-calling model for
// agents.NewOpenAIFunctionsAgent.
func functionsBrain(_ context.Context, req agenttest.Request) (*llms.ContentResponse, error) {
	msgs := req.Messages
	last := msgs[len(msgs)-1]
	if last.Role == llms.ChatMessageTypeTool {
		return agenttest.Text("Order #A-1234 has shipped with UPS."), nil
	}
	input := req.LastText()
	switch {
	case strings.Contains(input, "look up"):
		return agenttest.ToolCalls(agenttest.Call("call_1", "lookup_order", fmt.Sprintf(`{"__arg1":%q}`, orderID.FindString(input)))), nil
	case strings.Contains(input, "Which order"):
		memoryText := ""
		for _, m := range msgs {
			if m.Role == llms.ChatMessageTypeSystem {
				memoryText += m.Parts[0].(llms.TextContent).Text
			}
		}
		return agenttest.Text("You asked about order " + orderID.FindString(memoryText) + "."), nil
	}
	return agenttest.Text("Noted."), nil
}

// newFunctionsExecutor is the OpenAI functions agent recipe: the history
// string lands in a second system message.
func newFunctionsExecutor(llm llms.Model, mgr *memory.Manager, session, user string) *agents.Executor {
	opts := agents.NewOpenAIOption()
	fa := agents.NewOpenAIFunctionsAgent(llm, []tools.Tool{plainOrderTool()},
		opts.WithSystemMessage("You are a support agent."),
		opts.WithExtraMessages([]prompts.MessageFormatter{
			prompts.NewSystemMessagePromptTemplate("Conversation memory:\n{{.history}}", []string{"history"}),
		}))
	return agents.NewExecutor(fa, agents.WithMemory(mgr.Memory(session, user)))
}

func TestOpenAIFunctionsAgentRecipe(t *testing.T) {
	ctx := context.Background()
	mgr := newManager(t, 6, 4)
	llm := agenttest.New(functionsBrain)
	exec := newFunctionsExecutor(llm, mgr, "s", "dana")

	out, err := chains.Run(ctx, exec, "Please look up my order #A-1234.")
	if err != nil {
		t.Fatal(err)
	}
	if out != "Order #A-1234 has shipped with UPS." {
		t.Fatalf("turn 1: %q", out)
	}
	reqs := llm.Requests()
	if len(reqs) != 2 || len(reqs[0].Options.Functions) != 1 || reqs[0].Options.Functions[0].Name != "lookup_order" {
		t.Fatalf("requests %d, functions %v", len(reqs), reqs[0].ToolNames())
	}
	if got := roles(reqs[1].Messages); strings.Join(got, ",") != "system,system,human,ai,tool" {
		t.Fatalf("second call roles %v", got)
	}
	for _, in := range []string{"Thanks.", "Do you ship abroad?", "How long does it take?", "OK."} {
		if _, err := chains.Run(ctx, exec, in); err != nil {
			t.Fatal(err)
		}
		if err := mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	out, err = chains.Run(ctx, exec, "Which order did I ask about?")
	if err != nil {
		t.Fatal(err)
	}
	last := llm.LastRequest()
	if got := roles(last.Messages); strings.Join(got, ",") != "system,system,human" {
		t.Fatalf("roles %v", got)
	}
	mem := last.Messages[1].Parts[0].(llms.TextContent).Text
	if !strings.HasPrefix(mem, "Conversation memory:\nsystem: "+summary.FactsHeader+"\n- order_id: #A-1234") {
		t.Fatalf("memory slot:\n%s", mem)
	}
	if strings.Contains(mem, "Human: Please look up my order") {
		t.Fatalf("first turn still verbatim:\n%s", mem)
	}
	if out != "You asked about order #A-1234." {
		t.Fatalf("answer %q", out)
	}
}
