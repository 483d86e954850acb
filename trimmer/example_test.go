package trimmer_test

import (
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/trimmer"
)

func ExampleTrimmer_Trim() {
	// One token per byte keeps the arithmetic visible; use
	// trimmer.NewEstimator() or NewTiktokenEstimator in real code.
	est := trimmer.EstimatorFunc(func(s string) int { return len(s) })
	tr := trimmer.New(210, 50, est)

	history := []llms.ChatMessage{
		llms.SystemChatMessage{Content: "Conversation Facts:\n- city: Paris"},
		llms.HumanChatMessage{Content: "What is the weather like?"},
		llms.AIChatMessage{ToolCalls: []llms.ToolCall{{
			ID: "call-1", Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`},
		}}},
		llms.ToolChatMessage{ID: "call-1", Content: `{"temp_c":21}`},
		llms.AIChatMessage{Content: "It is 21 °C in Paris."},
		llms.HumanChatMessage{Content: "And tomorrow?"},
	}

	// Budget: 210 − 28 (system prompt) − 50 (output reserve) = 132 tokens
	// for 249 tokens of history. The oldest question goes first, then the
	// tool call together with its result; the facts, the last answer and
	// the new question fit.
	trimmed := tr.Trim(history, "You are a helpful assistant.", 0)
	for _, m := range trimmed {
		fmt.Printf("%s: %q\n", m.GetType(), m.GetContent())
	}
	fmt.Println("valid:", trimmer.Validate(trimmed) == nil)
	// Output:
	// system: "Conversation Facts:\n- city: Paris"
	// ai: "It is 21 °C in Paris."
	// human: "And tomorrow?"
	// valid: true
}
