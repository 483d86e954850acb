package runner

import (
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/trimmer"
)

// perMessageOverhead is added to every message when pricing a context: the
// role markers and separators of the OpenAI chat format (3 tokens per
// message in OpenAI's own counting recipe).
const perMessageOverhead = 3

// counter counts tokens exactly, with tiktoken cl100k_base (offline BPE,
// one shared encoder) memoised per text. Every policy of a comparison is
// priced by the same counter.
type counter struct {
	est trimmer.Estimator
}

func newCounter() (*counter, error) {
	tik, err := trimmer.NewTiktokenEstimator(trimmer.EncodingCL100kBase)
	if err != nil {
		return nil, err
	}
	return &counter{est: trimmer.NewCachedEstimator(tik)}, nil
}

// text counts one text.
func (c *counter) text(s string) int { return c.est.Estimate(s) }

// messages prices what a model receives: every message's content, an
// assistant's tool calls (name and arguments), plus perMessageOverhead per
// message.
func (c *counter) messages(msgs []llms.ChatMessage) int {
	n := 0
	for _, m := range msgs {
		if m == nil {
			continue
		}
		n += perMessageOverhead + c.text(m.GetContent())
		if ai, ok := m.(llms.AIChatMessage); ok {
			for _, tc := range ai.ToolCalls {
				if tc.FunctionCall != nil {
					n += c.text(tc.FunctionCall.Name) + c.text(tc.FunctionCall.Arguments)
				}
			}
		}
	}
	return n
}

// lines counts a multi-line text line by line (each line memoised), plus
// one token per line break; used for summarizer prompts, whose lines
// repeat from call to call.
func (c *counter) lines(s string) int {
	n := 0
	for i, l := range strings.Split(s, "\n") {
		if i > 0 {
			n++
		}
		n += c.text(l)
	}
	return n
}

// contextText is the text a model sees in msgs: contents and tool-call
// names and arguments, one message per line.
func contextText(msgs []llms.ChatMessage) string {
	var b strings.Builder
	for _, m := range msgs {
		if m == nil {
			continue
		}
		b.WriteString(m.GetContent())
		if ai, ok := m.(llms.AIChatMessage); ok {
			for _, tc := range ai.ToolCalls {
				if tc.FunctionCall != nil {
					b.WriteString(" ")
					b.WriteString(tc.FunctionCall.Name)
					b.WriteString(" ")
					b.WriteString(tc.FunctionCall.Arguments)
				}
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
