// Package standin is a stand-in OpenAI chat completions server for tests
// and benchmarks: it counts every prompt exactly as OpenAI does (a tiktoken
// encoding, 3 tokens per message plus its role and name, 3 priming the
// reply, tool calls and tool definitions included), refuses a prompt over
// the model's context window with OpenAI's context_length_exceeded error
// body, and reports usage.prompt_tokens, so that langchaingo's real openai
// client talks to it as to OpenAI.
package standin

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/strata-go/strata/trimmer"
)

// Message is one message of a request, as the server read it.
type Message struct {
	Role       string
	Content    string
	Name       string
	ToolCallID string
	ToolCalls  []ToolCall
}

// ToolCall is one tool call of an assistant message.
type ToolCall struct {
	ID, Name, Arguments string
}

// Request is a decoded chat completions request.
type Request struct {
	Model     string
	Messages  []Message
	Tools     []json.RawMessage
	MaxTokens int
	// PromptTokens is the prompt's count, as OpenAI would report it.
	PromptTokens int
}

// Reply is what the brain answers: a text, or tool calls.
type Reply struct {
	Text  string
	Calls []ToolCall
}

// Server is the stand-in. Its counters are safe for concurrent use.
type Server struct {
	URL      string
	Window   int
	Encoding string

	srv   *httptest.Server
	count trimmer.Estimator
	brain func(Request) Reply

	mu       sync.Mutex
	accepted []int // prompt tokens of the accepted requests, in order
	refused  []int // prompt tokens of the refused requests
}

// New starts a server for a model with a window-token context counting
// with encoding (trimmer.EncodingCL100kBase or EncodingO200kBase); brain
// answers every accepted request. Close it when done.
func New(window int, encoding string, brain func(Request) Reply) (*Server, error) {
	est, err := trimmer.NewTiktokenEstimator(encoding)
	if err != nil {
		return nil, err
	}
	s := &Server{Window: window, Encoding: encoding, count: est, brain: brain}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	return s, nil
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Accepted returns the prompt tokens of every accepted request, in order.
func (s *Server) Accepted() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.accepted...)
}

// Refused returns the prompt tokens of every refused request, in order.
func (s *Server) Refused() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.refused...)
}

// Count returns the prompt tokens of a request as OpenAI counts them.
func (s *Server) Count(r Request) int {
	n := 3 // the reply is primed with <|start|>assistant<|message|>
	for _, m := range r.Messages {
		n += 3 + s.count.Estimate(m.Role) + s.count.Estimate(m.Content)
		if m.Name != "" {
			n += 1 + s.count.Estimate(m.Name)
		}
		if m.ToolCallID != "" {
			n += s.count.Estimate(m.ToolCallID)
		}
		for _, c := range m.ToolCalls {
			n += 3 + s.count.Estimate(c.ID) + s.count.Estimate(c.Name) + s.count.Estimate(c.Arguments)
		}
	}
	if len(r.Tools) > 0 {
		n += 8 // the namespace that wraps the definitions
		for _, t := range r.Tools {
			n += 4 + s.count.Estimate(string(t))
		}
	}
	return n
}

type wireRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		Name       string          `json:"name"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools               []json.RawMessage `json:"tools"`
	MaxTokens           int               `json:"max_tokens"`
	MaxCompletionTokens int               `json:"max_completion_tokens"`
}

func decode(body []byte) (Request, error) {
	var in wireRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return Request{}, err
	}
	r := Request{Model: in.Model, Tools: in.Tools, MaxTokens: max(in.MaxTokens, in.MaxCompletionTokens)}
	for _, m := range in.Messages {
		msg := Message{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID}
		if len(m.Content) > 0 && string(m.Content) != "null" {
			if err := json.Unmarshal(m.Content, &msg.Content); err != nil {
				var parts []struct {
					Text string `json:"text"`
				}
				if err := json.Unmarshal(m.Content, &parts); err != nil {
					return Request{}, fmt.Errorf("content %s: %w", m.Content, err)
				}
				for _, p := range parts {
					msg.Content += p.Text
				}
			}
		}
		for _, c := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		r.Messages = append(r.Messages, msg)
	}
	return r, nil
}

func (s *Server) serve(w http.ResponseWriter, hr *http.Request) {
	body, err := io.ReadAll(hr.Body)
	if err != nil || hr.URL.Path != "/v1/chat/completions" {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("Unknown request URL: %s", hr.URL.Path))
		return
	}
	req, err := decode(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	req.PromptTokens = s.Count(req)
	if req.PromptTokens+req.MaxTokens > s.Window {
		s.mu.Lock()
		s.refused = append(s.refused, req.PromptTokens)
		s.mu.Unlock()
		var msg string
		if req.MaxTokens > 0 {
			msg = fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
				s.Window, req.PromptTokens+req.MaxTokens, req.PromptTokens, req.MaxTokens)
		} else {
			msg = fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.",
				s.Window, req.PromptTokens)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"message": msg, "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
		return
	}
	s.mu.Lock()
	s.accepted = append(s.accepted, req.PromptTokens)
	s.mu.Unlock()
	rep := s.brain(req)
	msg := map[string]any{"role": "assistant", "content": rep.Text}
	finish := "stop"
	if len(rep.Calls) > 0 {
		var calls []any
		for _, c := range rep.Calls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		msg["tool_calls"], finish = calls, "tool_calls"
	}
	out := s.count.Estimate(rep.Text)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-standin", "object": "chat.completion", "created": 1_700_000_000, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": req.PromptTokens, "completion_tokens": out, "total_tokens": req.PromptTokens + out},
	})
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ}})
}
