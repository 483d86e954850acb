// Package agenttest provides a scripted, recording langchaingo model for
// testing agents offline: it answers every GenerateContent call from a script
// or a function, remembers what it was sent, and streams its text through
// llms.WithStreamingFunc like a real provider.
package agenttest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"
)

// ErrScriptExhausted is returned by a scripted Model asked for more answers
// than its script holds.
var ErrScriptExhausted = errors.New("agenttest: script exhausted")

// Request is one recorded GenerateContent call.
type Request struct {
	Messages []llms.MessageContent
	Options  llms.CallOptions
}

// Text renders the request's text for assertions: one "<role>: <text>" line
// per message, tool calls as "<role>: call <name> <args>" and tool results as
// "<role>: result <name> <content>".
func (r Request) Text() string {
	var b strings.Builder
	for _, m := range r.Messages {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				fmt.Fprintf(&b, "%s: %s\n", m.Role, p.Text)
			case llms.ToolCall:
				if p.FunctionCall != nil {
					fmt.Fprintf(&b, "%s: call %s %s\n", m.Role, p.FunctionCall.Name, p.FunctionCall.Arguments)
				}
			case llms.ToolCallResponse:
				fmt.Fprintf(&b, "%s: result %s %s\n", m.Role, p.Name, p.Content)
			}
		}
	}
	return b.String()
}

// ToolNames returns the names of the tools offered in the request.
func (r Request) ToolNames() []string {
	var names []string
	for _, t := range r.Options.Tools {
		if t.Function != nil {
			names = append(names, t.Function.Name)
		}
	}
	for _, f := range r.Options.Functions {
		names = append(names, f.Name)
	}
	return names
}

// LastText returns the text of the request's last message.
func (r Request) LastText() string {
	if len(r.Messages) == 0 {
		return ""
	}
	var b strings.Builder
	for _, p := range r.Messages[len(r.Messages)-1].Parts {
		switch p := p.(type) {
		case llms.TextContent:
			b.WriteString(p.Text)
		case llms.ToolCallResponse:
			b.WriteString(p.Content)
		}
	}
	return b.String()
}

// ReplyFunc computes the model's answer to one request.
type ReplyFunc func(ctx context.Context, req Request) (*llms.ContentResponse, error)

// Model is a scripted llms.Model that records every request. It is safe for
// concurrent use.
type Model struct {
	reply ReplyFunc

	mu       sync.Mutex
	requests []Request
}

var _ llms.Model = (*Model)(nil)

// New returns a Model that answers with reply.
func New(reply ReplyFunc) *Model { return &Model{reply: reply} }

// NewScript returns a Model that gives the responses in order, one per call,
// and fails with ErrScriptExhausted afterwards. A nil response makes that
// call fail.
func NewScript(responses ...*llms.ContentResponse) *Model {
	var mu sync.Mutex
	next := 0
	return New(func(context.Context, Request) (*llms.ContentResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(responses) {
			return nil, ErrScriptExhausted
		}
		r := responses[next]
		next++
		if r == nil {
			return nil, fmt.Errorf("agenttest: scripted failure at call %d", next)
		}
		return r, nil
	})
}

// Text is a response holding a plain answer.
func Text(s string) *llms.ContentResponse {
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: s, StopReason: "stop"}}}
}

// ToolCalls is a response asking for the given tool calls.
func ToolCalls(calls ...llms.ToolCall) *llms.ContentResponse {
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: calls, StopReason: "tool_calls"}}}
}

// Call is a function tool call with the given id, name and JSON arguments.
func Call(id, name, args string) llms.ToolCall {
	return llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: name, Arguments: args}}
}

// GenerateContent implements llms.Model: it records the request, computes
// the answer and, when a streaming function is set, streams the answer's
// text to it word by word.
func (m *Model) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var opts llms.CallOptions
	for _, o := range options {
		o(&opts)
	}
	req := Request{Messages: cloneContents(msgs), Options: opts}
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	resp, err := m.reply(ctx, req)
	if err != nil {
		return nil, err
	}
	if opts.StreamingFunc != nil && resp != nil && len(resp.Choices) > 0 {
		for _, chunk := range chunks(resp.Choices[0].Content) {
			if err := opts.StreamingFunc(ctx, []byte(chunk)); err != nil {
				return nil, err
			}
		}
	}
	return resp, nil
}

// Call implements llms.Model.
func (m *Model) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// Requests returns a copy of every request received so far.
func (m *Model) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.requests...)
}

// LastRequest returns the newest request (the zero Request when none).
func (m *Model) LastRequest() Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.requests) == 0 {
		return Request{}
	}
	return m.requests[len(m.requests)-1]
}

// chunks splits s after each space, so that joining them gives s back.
func chunks(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

func cloneContents(in []llms.MessageContent) []llms.MessageContent {
	out := make([]llms.MessageContent, len(in))
	for i, m := range in {
		out[i] = llms.MessageContent{Role: m.Role, Parts: append([]llms.ContentPart(nil), m.Parts...)}
	}
	return out
}
