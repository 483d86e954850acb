package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/adk/middlewares/summarization"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/bench/internal/runner"
	"github.com/strata-go/strata/summary"
)

// userMessagesBlock is the section that eino's summarization prompt asks
// the summarizer model to end with (all the user's messages, wrapped in
// these tags); the middleware then replaces it with the original user
// messages, the most recent first, up to its own budget.
const userMessagesBlock = "<all_user_messages>\n</all_user_messages>"

// ExtractiveChatModel is an eino chat model (model.BaseChatModel) that
// answers a summarization request with Strata's offline extractive
// summarizer, so that eino's summarization middleware and Strata fold a
// conversation with the same summarizer. It counts its calls and prices
// the input it is sent.
//
// It expects the middleware's default model input: system instructions
// first, then the conversation, then one user message with the
// summarization instructions. The conversation (instructions left out) is
// what the summarizer folds; the whole input is what is priced, as a
// summarizer model would be sent all of it.
type ExtractiveChatModel struct {
	svc   summary.Service
	count func([]llms.ChatMessage) int

	mu    sync.Mutex
	usage runner.PeerUsage
}

// NewExtractiveChatModel returns a chat model that summarizes with svc and
// prices each input with count.
func NewExtractiveChatModel(svc summary.Service, count func([]llms.ChatMessage) int) *ExtractiveChatModel {
	return &ExtractiveChatModel{svc: svc, count: count}
}

var _ model.BaseChatModel = (*ExtractiveChatModel)(nil)

// Generate summarizes the conversation in input and replies with the
// facts block, the narrative block and an empty user-messages block, which
// the middleware fills with the original user messages.
func (m *ExtractiveChatModel) Generate(ctx context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	t0 := time.Now()
	n := m.count(toLLMS(input))
	spent := time.Since(t0)
	m.mu.Lock()
	m.usage.Calls++
	m.usage.InputTokens += n
	m.usage.Pricing += spent
	m.mu.Unlock()

	res, err := m.svc.Summarize(ctx, summary.Request{Messages: toLLMS(conversationPart(input))})
	if err != nil && !errors.Is(err, summary.ErrEmptyReply) {
		return nil, err
	}
	return schema.AssistantMessage(renderReply(res), nil), nil
}

// Stream is Generate delivered as a one-chunk stream.
func (m *ExtractiveChatModel) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

// Usage returns the calls, the input tokens priced and the time spent
// pricing them, so far.
func (m *ExtractiveChatModel) Usage() runner.PeerUsage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.usage
}

// conversationPart drops the middleware's instructions from its model
// input: the leading system messages and the final user message.
func conversationPart(input []*schema.Message) []*schema.Message {
	i := 0
	for i < len(input) && input[i] != nil && input[i].Role == schema.System {
		i++
	}
	rest := input[i:]
	if n := len(rest); n > 0 && rest[n-1] != nil && rest[n-1].Role == schema.User {
		rest = rest[:n-1]
	}
	return rest
}

// renderReply renders an extractive result as a summarizer model's reply:
// the facts and narrative blocks as Strata renders them for a model, then
// the user-messages block eino's prompt asks for.
func renderReply(res summary.Result) string {
	var parts []string
	if b := summary.FactsBlock(res.Facts); b != "" {
		parts = append(parts, b)
	}
	if b := summary.NarrativeBlock(res.Narrative); b != "" {
		parts = append(parts, b)
	}
	parts = append(parts, userMessagesBlock)
	return strings.Join(parts, "\n\n")
}

// einoPolicy is one conversation's memory under eino's summarization
// middleware: before each model call the middleware sees the agent's
// messages plus the new user message and, above its trigger, replaces them
// with one summary message.
type einoPolicy struct {
	mw    adk.ChatModelAgentMiddleware
	model *ExtractiveChatModel
	// carry keeps the middleware's rewritten messages as the history of
	// the next turn; without it the history stays complete and the
	// middleware starts from all of it at every turn.
	carry bool
	msgs  []*schema.Message
}

// einoConfig is the middleware configuration of the comparison: the
// summarizer model, a message trigger and a token trigger; everything
// else is eino's default.
func einoConfig(m *ExtractiveChatModel, triggerMessages, triggerTokens int) *summarization.Config {
	return &summarization.Config{
		Model: m,
		Trigger: &summarization.TriggerCondition{
			ContextMessages: triggerMessages,
			ContextTokens:   triggerTokens,
		},
	}
}

// newEinoPolicy builds the policy with a fresh middleware and summarizer.
func newEinoPolicy(ctx context.Context, env runner.PeerEnv, carry bool) (*einoPolicy, error) {
	m := NewExtractiveChatModel(env.NewSummarizer(), env.CountMessages)
	mw, err := summarization.New(ctx, einoConfig(m, env.Strata.TriggerMessageCount, tokenTrigger(env)))
	if err != nil {
		return nil, fmt.Errorf("eino summarization: %w", err)
	}
	return &einoPolicy{mw: mw, model: m, carry: carry}, nil
}

// tokenTrigger is Strata chunked's token trigger: FoldTokenFraction of the
// context window.
func tokenTrigger(env runner.PeerEnv) int {
	return int(env.Strata.FoldTokenFraction * float64(env.Strata.ContextWindowTokens))
}

// ModelInput runs the middleware on the history plus the user message and
// returns what the model would be sent.
func (p *einoPolicy) ModelInput(ctx context.Context, user string) ([]llms.ChatMessage, error) {
	msgs := make([]*schema.Message, 0, len(p.msgs)+1)
	msgs = append(append(msgs, p.msgs...), schema.UserMessage(user))
	_, st, err := p.mw.BeforeModelRewriteState(ctx, &adk.ChatModelAgentState{Messages: msgs}, nil)
	if err != nil {
		return nil, err
	}
	if p.carry {
		p.msgs = st.Messages
	} else {
		p.msgs = msgs
	}
	return toLLMS(st.Messages), nil
}

// Save keeps the turn's replies after the history (its user message is
// already there, or folded into the summary).
func (p *einoPolicy) Save(_ context.Context, msgs []llms.ChatMessage) error {
	if len(msgs) == 0 {
		return errors.New("eino policy: a turn without messages")
	}
	p.msgs = append(p.msgs, fromLLMS(msgs[1:])...)
	return nil
}

// Usage reports the summarizer model's use.
func (p *einoPolicy) Usage() runner.PeerUsage { return p.model.Usage() }

// Close does nothing: the policy holds no resources.
func (p *einoPolicy) Close() {}

// toLLMS converts eino messages to langchaingo's, for pricing and for the
// extractive summarizer.
func toLLMS(msgs []*schema.Message) []llms.ChatMessage {
	out := make([]llms.ChatMessage, 0, len(msgs))
	for _, m := range msgs {
		if m == nil {
			continue
		}
		switch m.Role {
		case schema.System:
			out = append(out, llms.SystemChatMessage{Content: text(m)})
		case schema.Assistant:
			ai := llms.AIChatMessage{Content: text(m)}
			for _, tc := range m.ToolCalls {
				ai.ToolCalls = append(ai.ToolCalls, llms.ToolCall{ID: tc.ID, Type: "function",
					FunctionCall: &llms.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
			}
			out = append(out, ai)
		case schema.Tool:
			out = append(out, llms.ToolChatMessage{ID: m.ToolCallID, Content: text(m)})
		default:
			out = append(out, llms.HumanChatMessage{Content: text(m)})
		}
	}
	return out
}

// text is a message's text: its content, or its text parts joined by new
// lines when the content is empty.
func text(m *schema.Message) string {
	if m.Content != "" {
		return m.Content
	}
	var parts []string
	for _, p := range m.UserInputMultiContent {
		if p.Type == schema.ChatMessagePartTypeText && p.Text != "" {
			parts = append(parts, p.Text)
		}
	}
	for _, p := range m.AssistantGenMultiContent {
		if p.Type == schema.ChatMessagePartTypeText && p.Text != "" {
			parts = append(parts, p.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// fromLLMS converts langchaingo messages to eino's.
func fromLLMS(msgs []llms.ChatMessage) []*schema.Message {
	out := make([]*schema.Message, 0, len(msgs))
	for _, m := range msgs {
		switch v := m.(type) {
		case llms.SystemChatMessage:
			out = append(out, schema.SystemMessage(v.Content))
		case llms.AIChatMessage:
			var calls []schema.ToolCall
			for _, tc := range v.ToolCalls {
				if tc.FunctionCall == nil {
					continue
				}
				calls = append(calls, schema.ToolCall{ID: tc.ID, Type: "function",
					Function: schema.FunctionCall{Name: tc.FunctionCall.Name, Arguments: tc.FunctionCall.Arguments}})
			}
			out = append(out, schema.AssistantMessage(v.Content, calls))
		case llms.ToolChatMessage:
			out = append(out, schema.ToolMessage(v.Content, v.ID))
		case nil:
		default:
			out = append(out, schema.UserMessage(m.GetContent()))
		}
	}
	return out
}
