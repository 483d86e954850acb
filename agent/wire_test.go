package agent_test

// Wire-level tests: langchaingo's real openai and googleai clients talk to
// httptest servers that record every request body and answer from a scripted
// "brain". Requests are decoded into a provider-neutral form (wireReq) so the
// same checks run for both providers.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/googleai"
	"github.com/tmc/langchaingo/llms/openai"
	"google.golang.org/api/option"
	"google.golang.org/grpc"

	"github.com/strata-go/strata/agent"
	"github.com/strata-go/strata/agent/agenttest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

// wireMsg is one message of a recorded request. Roles are the provider's:
// openai system/user/assistant/tool; gemini system (the systemInstruction)
// /user/model.
type wireMsg struct {
	Role    string
	Text    string
	Calls   []wireCall
	Results []wireResult
}

type wireCall struct{ ID, Name, Args string }

type wireResult struct{ ID, Name, Content string }

type wireReq struct {
	Path   string
	Msgs   []wireMsg
	Tools  []string
	Stream bool
	Body   string
}

func (r wireReq) roles() []string {
	out := make([]string, len(r.Msgs))
	for i, m := range r.Msgs {
		out[i] = m.Role
	}
	return out
}

// text is everything the model can read in the request.
func (r wireReq) text() string {
	var b strings.Builder
	for _, m := range r.Msgs {
		b.WriteString(m.Text + "\n")
		for _, c := range m.Calls {
			b.WriteString(c.Name + " " + c.Args + "\n")
		}
		for _, res := range m.Results {
			b.WriteString(res.Content + "\n")
		}
	}
	return b.String()
}

// reply is what the brain answers: text, or tool calls.
type reply struct {
	Text  string
	Calls []wireCall
}

// fakeServer is a recording chat API.
type fakeServer struct {
	kind  string // "openai" or "gemini"
	srv   *httptest.Server
	brain func(wireReq) reply

	mu   sync.Mutex
	reqs []wireReq
}

func newFakeServer(t testing.TB, kind string, brain func(wireReq) reply) *fakeServer {
	t.Helper()
	f := &fakeServer{kind: kind, brain: brain}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) requests() []wireReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]wireReq(nil), f.reqs...)
}

func (f *fakeServer) last() wireReq {
	r := f.requests()
	return r[len(r)-1]
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req wireReq
	switch f.kind {
	case "openai":
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, `{"error":{"message":"bad path or token"}}`, http.StatusNotFound)
			return
		}
		req, err = decodeOpenAI(body)
	case "gemini":
		if !strings.HasPrefix(r.URL.Path, "/v1beta/models/") || r.URL.Query().Get("key") != "test" {
			http.Error(w, `{"error":{"message":"bad path or key"}}`, http.StatusNotFound)
			return
		}
		req, err = decodeGemini(body)
		req.Stream = strings.HasSuffix(r.URL.Path, ":streamGenerateContent")
	case "anthropic":
		if r.URL.Path != "/messages" || r.Header.Get("x-api-key") != "sk-ant-test" {
			http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"bad path or key"}}`, http.StatusNotFound)
			return
		}
		req, err = decodeAnthropic(body)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.Path, req.Body = r.URL.Path, string(body)
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	rep := f.brain(req)
	switch f.kind {
	case "openai":
		writeOpenAI(w, rep, req.Stream)
	case "gemini":
		writeGemini(w, rep, req.Stream)
	case "anthropic":
		writeAnthropic(w, rep)
	}
}

func decodeOpenAI(body []byte) (wireReq, error) {
	var in struct {
		Messages []struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
		Stream bool `json:"stream"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return wireReq{}, err
	}
	req := wireReq{Stream: in.Stream}
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}
	for _, m := range in.Messages {
		wm := wireMsg{Role: m.Role}
		if len(m.Content) > 0 && string(m.Content) != "null" {
			if err := json.Unmarshal(m.Content, &wm.Text); err != nil {
				var parts []struct{ Text string }
				if err := json.Unmarshal(m.Content, &parts); err != nil {
					return wireReq{}, fmt.Errorf("content %s: %w", m.Content, err)
				}
				for _, p := range parts {
					wm.Text += p.Text
				}
			}
		}
		for _, tc := range m.ToolCalls {
			if tc.Type != "function" {
				return wireReq{}, fmt.Errorf("tool call type %q", tc.Type)
			}
			wm.Calls = append(wm.Calls, wireCall{ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments})
		}
		if m.Role == "tool" {
			wm.Results = []wireResult{{ID: m.ToolCallID, Content: wm.Text}}
			wm.Text = ""
		}
		req.Msgs = append(req.Msgs, wm)
	}
	return req, nil
}

type geminiPart struct {
	Text         *string `json:"text,omitempty"`
	FunctionCall *struct {
		Name string         `json:"name"`
		Args map[string]any `json:"args"`
	} `json:"functionCall,omitempty"`
	FunctionResponse *struct {
		Name     string         `json:"name"`
		Response map[string]any `json:"response"`
	} `json:"functionResponse,omitempty"`
}

func decodeGemini(body []byte) (wireReq, error) {
	var in struct {
		SystemInstruction *struct {
			Parts []geminiPart `json:"parts"`
		} `json:"systemInstruction"`
		Contents []struct {
			Role  string       `json:"role"`
			Parts []geminiPart `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return wireReq{}, err
	}
	var req wireReq
	for _, t := range in.Tools {
		for _, d := range t.FunctionDeclarations {
			req.Tools = append(req.Tools, d.Name)
		}
	}
	if in.SystemInstruction != nil {
		wm := wireMsg{Role: "system"}
		for _, p := range in.SystemInstruction.Parts {
			if p.Text == nil {
				return wireReq{}, fmt.Errorf("system instruction with a non-text part")
			}
			wm.Text += *p.Text
		}
		req.Msgs = append(req.Msgs, wm)
	}
	for _, c := range in.Contents {
		wm := wireMsg{Role: c.Role}
		for _, p := range c.Parts {
			switch {
			case p.Text != nil:
				wm.Text += *p.Text
			case p.FunctionCall != nil:
				args, _ := json.Marshal(p.FunctionCall.Args)
				wm.Calls = append(wm.Calls, wireCall{Name: p.FunctionCall.Name, Args: string(args)})
			case p.FunctionResponse != nil:
				content, _ := p.FunctionResponse.Response["response"].(string)
				wm.Results = append(wm.Results, wireResult{Name: p.FunctionResponse.Name, Content: content})
			default:
				return wireReq{}, fmt.Errorf("empty part in %s content", c.Role)
			}
		}
		req.Msgs = append(req.Msgs, wm)
	}
	return req, nil
}

// decodeAnthropic reads a Messages API request. Consecutive messages of one
// role are joined into one turn, as the API does.
func decodeAnthropic(body []byte) (wireReq, error) {
	var in struct {
		System   string `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Stream bool `json:"stream"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return wireReq{}, err
	}
	req := wireReq{Stream: in.Stream}
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	if in.System != "" {
		req.Msgs = append(req.Msgs, wireMsg{Role: "system", Text: in.System})
	}
	for _, m := range in.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return wireReq{}, fmt.Errorf("role %q", m.Role)
		}
		var blocks []struct {
			Type      string         `json:"type"`
			Text      string         `json:"text"`
			ID        string         `json:"id"`
			Name      string         `json:"name"`
			Input     map[string]any `json:"input"`
			ToolUseID string         `json:"tool_use_id"`
			Content   string         `json:"content"`
		}
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			var text string
			if err := json.Unmarshal(m.Content, &text); err != nil {
				return wireReq{}, fmt.Errorf("content %s", m.Content)
			}
			blocks = append(blocks, struct {
				Type      string         `json:"type"`
				Text      string         `json:"text"`
				ID        string         `json:"id"`
				Name      string         `json:"name"`
				Input     map[string]any `json:"input"`
				ToolUseID string         `json:"tool_use_id"`
				Content   string         `json:"content"`
			}{Type: "text", Text: text})
		}
		if n := len(req.Msgs); n == 0 || req.Msgs[n-1].Role != m.Role {
			req.Msgs = append(req.Msgs, wireMsg{Role: m.Role})
		}
		wm := &req.Msgs[len(req.Msgs)-1]
		for _, b := range blocks {
			switch b.Type {
			case "text":
				if b.Text == "" {
					return wireReq{}, fmt.Errorf("empty text block")
				}
				wm.Text += b.Text
			case "tool_use":
				args, _ := json.Marshal(b.Input)
				wm.Calls = append(wm.Calls, wireCall{ID: b.ID, Name: b.Name, Args: string(args)})
			case "tool_result":
				wm.Results = append(wm.Results, wireResult{ID: b.ToolUseID, Content: b.Content})
			default:
				return wireReq{}, fmt.Errorf("block type %q", b.Type)
			}
		}
	}
	return req, nil
}

// writeAnthropic answers like Claude: some text before the tool calls.
func writeAnthropic(w http.ResponseWriter, rep reply) {
	var blocks []any
	stop := "end_turn"
	if len(rep.Calls) > 0 {
		stop = "tool_use"
		blocks = append(blocks, map[string]any{"type": "text", "text": "Let me check."})
	}
	if rep.Text != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": rep.Text})
	}
	for _, c := range rep.Calls {
		var args map[string]any
		_ = json.Unmarshal([]byte(c.Args), &args)
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": args})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
		"content": blocks, "stop_reason": stop,
		"usage": map[string]any{"input_tokens": 11, "output_tokens": 7},
	})
}

// splitText cuts s into a few chunks, for streamed answers.
func splitText(s string) []string {
	var out []string
	for len(s) > 6 {
		out = append(out, s[:6])
		s = s[6:]
	}
	return append(out, s)
}

func writeOpenAI(w http.ResponseWriter, rep reply, stream bool) {
	usage := map[string]any{"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
	finish := "stop"
	if len(rep.Calls) > 0 {
		finish = "tool_calls"
	}
	if !stream {
		msg := map[string]any{"role": "assistant", "content": rep.Text}
		var calls []map[string]any
		for _, c := range rep.Calls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Args}})
		}
		if calls != nil {
			msg["tool_calls"] = calls
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if rep.Text != "" {
		for _, s := range splitText(rep.Text) {
			send(chunk(map[string]any{"content": s}, nil))
		}
	}
	for i, c := range rep.Calls {
		send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil))
		for _, s := range splitText(c.Args) {
			send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": s}}}}, nil))
		}
	}
	send(chunk(map[string]any{}, finish))
	send(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": []any{}, "usage": usage})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func writeGemini(w http.ResponseWriter, rep reply, stream bool) {
	var parts []any
	for _, c := range rep.Calls {
		var args map[string]any
		_ = json.Unmarshal([]byte(c.Args), &args)
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": c.Name, "args": args}})
	}
	candidate := func(parts []any) map[string]any {
		return map[string]any{"candidates": []any{map[string]any{
			"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
			"usageMetadata": map[string]any{"promptTokenCount": 11, "candidatesTokenCount": 7, "totalTokenCount": 18}}
	}
	w.Header().Set("Content-Type", "application/json")
	if !stream {
		if rep.Text != "" {
			parts = append([]any{map[string]any{"text": rep.Text}}, parts...)
		}
		_ = json.NewEncoder(w).Encode(candidate(parts))
		return
	}
	// streamGenerateContent answers a JSON array of partial responses.
	var chunks []any
	if rep.Text != "" {
		for _, s := range splitText(rep.Text) {
			chunks = append(chunks, candidate([]any{map[string]any{"text": s}}))
		}
	}
	if len(parts) > 0 {
		chunks = append(chunks, candidate(parts))
	}
	_ = json.NewEncoder(w).Encode(chunks)
}

// wireViolation checks the provider's ordering rules on a recorded request:
// system content only at the start (Gemini, Anthropic: only the system
// instruction), every tool result answers a call of the assistant message
// right before its run of results (OpenAI: by id, one tool message each;
// Gemini: by name, and Anthropic: by id, all results of a round in the next
// user turn), every call is answered; Gemini and Anthropic open with a user
// turn, and a Gemini function call follows a user turn.
func wireViolation(kind string, req wireReq) error {
	seenOther, seenUser := false, false
	for i := 0; i < len(req.Msgs); i++ {
		m := req.Msgs[i]
		if m.Role == "system" {
			if seenOther || (kind != "openai" && i > 0) {
				return fmt.Errorf("message %d: misplaced system content", i)
			}
			continue
		}
		seenOther = true
		if kind == "gemini" && m.Role != "user" && m.Role != "model" {
			return fmt.Errorf("message %d: role %q", i, m.Role)
		}
		if kind == "anthropic" && i > 0 && req.Msgs[i-1].Role == m.Role {
			return fmt.Errorf("message %d: turns not joined", i)
		}
		if kind != "openai" && !seenUser && m.Role != "user" {
			return fmt.Errorf("message %d: the conversation must open with a user turn", i)
		}
		seenUser = true
		if kind == "gemini" && len(m.Calls) > 0 && req.Msgs[i-1].Role != "user" {
			return fmt.Errorf("message %d: a function call turn must follow a user or function response turn", i)
		}
		if len(m.Results) > 0 {
			return fmt.Errorf("message %d: orphan tool result %+v", i, m.Results)
		}
		if len(m.Calls) == 0 {
			continue
		}
		pending := map[string]int{}
		for _, c := range m.Calls {
			if kind == "openai" && c.ID == "" {
				return fmt.Errorf("message %d: tool call without id", i)
			}
			pending[key(kind, c.ID, c.Name)]++
		}
		j := i + 1
		for ; j < len(req.Msgs) && len(req.Msgs[j].Results) > 0; j++ {
			r := req.Msgs[j]
			if kind != "openai" && (r.Role != "user" || j != i+1 || r.Text != "") {
				return fmt.Errorf("message %d: tool results must be one user turn right after the calls", j)
			}
			for _, res := range r.Results {
				if kind == "gemini" && res.Name == "" {
					return fmt.Errorf("message %d: function response without name", j)
				}
				k := key(kind, res.ID, res.Name)
				if pending[k] == 0 {
					return fmt.Errorf("message %d: result %+v answers no pending call", j, res)
				}
				pending[k]--
			}
		}
		for k, n := range pending {
			if n > 0 {
				return fmt.Errorf("message %d: call %s has no result", i, k)
			}
		}
		i = j - 1
	}
	return nil
}

func key(kind, id, name string) string {
	if kind == "gemini" {
		return name
	}
	return id
}

// wireProvider builds a real langchaingo client for a fake server.
type wireProvider struct {
	kind     string
	newModel func(t testing.TB, url string) llms.Model
}

var wireProviders = []wireProvider{
	{kind: "openai", newModel: func(t testing.TB, url string) llms.Model {
		llm, err := openai.New(openai.WithBaseURL(url+"/v1"), openai.WithToken("sk-test"), openai.WithModel("gpt-4o-mini"))
		if err != nil {
			t.Fatal(err)
		}
		return llm
	}},
	{kind: "gemini", newModel: func(t testing.TB, url string) llms.Model {
		withEndpoint := func(o *googleai.Options) { o.ClientOptions = append(o.ClientOptions, option.WithEndpoint(url)) }
		// genai's cache client speaks gRPC and is never used here: make its
		// dials fail at once, so nothing but HTTP reaches the fake server.
		noGRPC := option.WithGRPCDialOption(grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) {
			return nil, errors.New("no gRPC in tests")
		}))
		llm, err := googleai.New(context.Background(), googleai.WithAPIKey("test"), withEndpoint,
			func(o *googleai.Options) { o.ClientOptions = append(o.ClientOptions, noGRPC) })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = llm.Close() })
		return llm
	}},
	{kind: "anthropic", newModel: func(t testing.TB, url string) llms.Model {
		llm, err := anthropic.New(anthropic.WithToken("sk-ant-test"), anthropic.WithBaseURL(url), anthropic.WithModel("claude-test"))
		if err != nil {
			t.Fatal(err)
		}
		return llm
	}},
}

// supportBrain is the scripted model of the wire tests:
//   - after tool results: follow a "replaced_by" order once, else summarize
//     the results;
//   - "look up" in the user message: one call per order id mentioned;
//   - "first order id again": the first order id anywhere in the request
//     before the current message;
//   - otherwise "Noted.".
func supportBrain() func(wireReq) reply {
	var mu sync.Mutex
	n := 0
	nextID := func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("call_%d", n)
	}
	lookup := func(ids ...string) reply {
		var r reply
		for _, id := range ids {
			r.Calls = append(r.Calls, wireCall{ID: nextID(), Name: "lookup_order", Args: fmt.Sprintf(`{"order_id":%q}`, id)})
		}
		return r
	}
	return func(req wireReq) reply {
		last := req.Msgs[len(req.Msgs)-1]
		if len(last.Results) > 0 {
			var found []string
			for _, res := range last.Results {
				var o struct {
					ReplacedBy string `json:"replaced_by"`
				}
				if json.Unmarshal([]byte(res.Content), &o) == nil && o.ReplacedBy != "" && !strings.Contains(req.text(), `"order_id":"`+o.ReplacedBy+`"}`+"\n") {
					return lookup(o.ReplacedBy)
				}
				found = append(found, res.Content)
			}
			return reply{Text: "Here is what I found: " + strings.Join(found, " ")}
		}
		switch {
		case strings.Contains(last.Text, "look up"):
			return lookup(orderID.FindAllString(last.Text, -1)...)
		case strings.Contains(last.Text, "first order id again"):
			prior := req
			prior.Msgs = req.Msgs[:len(req.Msgs)-1]
			return reply{Text: "Your first order was " + orderID.FindString(prior.text()) + "."}
		}
		return reply{Text: "Noted."}
	}
}

var orderID = regexp.MustCompile(`#[A-Z]-\d+`)

const wirePrompt = "You are a support agent."

// TestWireRequestsBeforeAndAfterFold asserts the exact requests at a tool
// round before any fold, and at a turn after a fold.
func TestWireRequestsBeforeAndAfterFold(t *testing.T) {
	for _, p := range wireProviders {
		t.Run(p.kind, func(t *testing.T) {
			ctx := context.Background()
			srv := newFakeServer(t, p.kind, supportBrain())
			mgr := newManager(t, 8, 4)
			a := newAgent(t, p.newModel(t, srv.srv.URL), mgr, agent.WithSystemPrompt(wirePrompt), agent.WithTools(&orderLookup{}))
			if a.Provider() != agent.Provider(p.kind) {
				t.Fatalf("detected %q", a.Provider())
			}
			run := func(input string) *agent.Result {
				t.Helper()
				res, err := a.Run(ctx, "s", "dana", input)
				if err != nil {
					t.Fatal(err)
				}
				if err := mgr.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				return res
			}
			run("Hi, my name is Dana.")
			res := run("Please look up my order #A-1234.")
			if res.ToolRounds != 1 || !strings.Contains(res.Text, `"status":"shipped"`) {
				t.Fatalf("turn 2: %+v", res)
			}
			reqs := srv.requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests", len(reqs))
			}
			callID := res.Messages[1].(llms.AIChatMessage).ToolCalls[0].ID
			second := reqs[2]
			var want []wireMsg
			switch p.kind {
			case "openai":
				if callID != "call_1" {
					t.Fatalf("call id %q", callID)
				}
				want = []wireMsg{
					{Role: "system", Text: wirePrompt},
					{Role: "user", Text: "Hi, my name is Dana."},
					{Role: "assistant", Text: "Noted."},
					{Role: "user", Text: "Please look up my order #A-1234."},
					{Role: "assistant", Calls: []wireCall{{ID: "call_1", Name: "lookup_order", Args: `{"order_id":"#A-1234"}`}}},
					{Role: "tool", Results: []wireResult{{ID: "call_1", Content: orders["#A-1234"]}}},
				}
			case "gemini":
				want = []wireMsg{
					{Role: "system", Text: wirePrompt},
					{Role: "user", Text: "Hi, my name is Dana."},
					{Role: "model", Text: "Noted."},
					{Role: "user", Text: "Please look up my order #A-1234."},
					{Role: "model", Calls: []wireCall{{Name: "lookup_order", Args: `{"order_id":"#A-1234"}`}}},
					{Role: "user", Results: []wireResult{{Name: "lookup_order", Content: orders["#A-1234"]}}},
				}
				if !second.Stream {
					t.Fatalf("history went to %s", second.Path)
				}
			case "anthropic":
				if callID != "call_1" {
					t.Fatalf("call id %q", callID)
				}
				want = []wireMsg{
					{Role: "system", Text: wirePrompt},
					{Role: "user", Text: "Hi, my name is Dana."},
					{Role: "assistant", Text: "Noted."},
					{Role: "user", Text: "Please look up my order #A-1234."},
					{Role: "assistant", Text: "Let me check.", Calls: []wireCall{{ID: "call_1", Name: "lookup_order", Args: `{"order_id":"#A-1234"}`}}},
					{Role: "user", Results: []wireResult{{ID: "call_1", Content: orders["#A-1234"]}}},
				}
			}
			if diff := diffMsgs(second.Msgs, want); diff != "" {
				t.Fatalf("turn 2, second call:\n%s", diff)
			}
			if !slices.Equal(second.Tools, []string{"lookup_order"}) {
				t.Fatalf("tools %v", second.Tools)
			}

			// 6 messages stored; two more turns pass the trigger (8) and fold
			// everything but the last 4 messages.
			run("Thanks, that is all for the order.")
			run("By the way, do you ship abroad?")
			run("And how long does it take?")
			after := srv.last()
			const fact = "\n- order_id: #A-1234\n"
			switch p.kind {
			case "openai":
				if got := after.roles(); !slices.Equal(got, []string{"system", "system", "system", "user", "assistant", "user", "assistant", "user"}) {
					t.Fatalf("after fold roles %v", got)
				}
				if after.Msgs[0].Text != wirePrompt || !strings.HasPrefix(after.Msgs[1].Text, summary.FactsHeader) || !strings.Contains(after.Msgs[1].Text+"\n", fact) || !strings.HasPrefix(after.Msgs[2].Text, summary.NarrativeHeader) {
					t.Fatalf("after fold system messages %q", after.Msgs[:3])
				}
			case "gemini", "anthropic":
				model := map[string]string{"gemini": "model", "anthropic": "assistant"}[p.kind]
				if got := after.roles(); !slices.Equal(got, []string{"system", "user", model, "user", model, "user"}) {
					t.Fatalf("after fold roles %v", got)
				}
				sys := after.Msgs[0].Text
				if !strings.HasPrefix(sys, wirePrompt+"\n\n"+summary.FactsHeader) || !strings.Contains(sys, fact) || !strings.Contains(sys, "\n\n"+summary.NarrativeHeader) {
					t.Fatalf("system instruction %q", sys)
				}
			}
			last := after.Msgs[len(after.Msgs)-1]
			if last.Text != "And how long does it take?" || hasVerbatim(after, "Please look up my order #A-1234.") {
				t.Fatalf("after fold request:\n%s", after.text())
			}
			for i, r := range srv.requests() {
				if err := wireViolation(p.kind, r); err != nil {
					t.Fatalf("request %d: %v\n%s", i, err, r.Body)
				}
			}
		})
	}
}

// TestWireTinyBudget forces trimming at every call: old groups go whole,
// a history window that starts inside a tool group is repaired, and no
// request carries an orphan tool result.
func TestWireTinyBudget(t *testing.T) {
	for _, p := range wireProviders {
		t.Run(p.kind, func(t *testing.T) {
			ctx := context.Background()
			srv := newFakeServer(t, p.kind, supportBrain())
			cfg := memory.DefaultConfig()
			cfg.MaxConversationTurns = 3 // takeLast 6: cuts 4-message turns mid-group
			cfg.ContextWindowTokens, cfg.OutputReserveTokens = 480, 100
			mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg, memory.WithLogger(quiet))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = mgr.Close() })
			a := newAgent(t, p.newModel(t, srv.srv.URL), mgr,
				agent.WithSystemPrompt(wirePrompt), agent.WithTools(&orderLookup{}), agent.WithContextWindow(480, 100))
			// The budget of the messages after the system prompt: window −
			// output reserve − one tool definition − the system prompt (6).
			// Gemini and Anthropic keep room for OmittedHistoryNote (27
			// tokens) when trimming leaves an assistant message first.
			meter := trimmer.New(480, 100, mgr.Config().Estimator)
			budget := 480 - 100 - trimmer.ToolDefinitionTokens - 6
			if b := meter.Budget(wirePrompt, trimmer.ToolDefinitionTokens); b != budget {
				t.Fatalf("budget %d, want %d", b, budget)
			}
			trimmed := 0
			for i := range 8 {
				input := fmt.Sprintf("Please look up order #B-%d, it is turn number %d of our chat.", 100+i, i)
				before := len(srv.requests())
				res, err := a.Run(ctx, "s", "u", input)
				if err != nil {
					t.Fatal(err)
				}
				if res.Dropped > 0 {
					trimmed++
				}
				if cost := meter.Cost(res.Prompt[1:]); cost > budget {
					t.Fatalf("turn %d: prompt costs %d > %d", i, cost, budget)
				}
				if i == 2 {
					assertTinyBudgetTurn(t, p.kind, srv.requests()[before:])
				}
				for _, r := range srv.requests()[before:] {
					if err := wireViolation(p.kind, r); err != nil {
						t.Fatalf("turn %d: %v\n%s", i, err, r.Body)
					}
					if !strings.Contains(r.text(), input) {
						t.Fatalf("turn %d: current message trimmed away", i)
					}
					if i > 0 && strings.Contains(r.text(), fmt.Sprintf("#B-%d", 100+i-2)) {
						t.Fatalf("turn %d: budget not enforced:\n%s", i, r.text())
					}
				}
			}
			if trimmed < 6 {
				t.Fatalf("only %d turns trimmed", trimmed)
			}
			if got := len(stored(t, mgr, "s", "u")); got != 8*4 {
				t.Fatalf("stored %d messages", got)
			}
		})
	}
}

// assertTinyBudgetTurn checks the exact requests of the third turn. The
// history window (the last 6 stored messages) opens with turn 1's tool
// result, an orphan that is dropped. First call: turn 1's answer no longer
// fits and goes; turn 2's user message and tool group stay. Second call:
// the new tool group needs room, so turn 2's user message and then its tool
// group go, leaving turn 2's answer first, which Gemini and Anthropic get
// behind OmittedHistoryNote.
func assertTinyBudgetTurn(t *testing.T, kind string, reqs []wireReq) {
	t.Helper()
	const (
		u1 = "Please look up order #B-101, it is turn number 1 of our chat."
		u2 = "Please look up order #B-102, it is turn number 2 of our chat."
		a1 = `Here is what I found: {"order_id":"#B-101","status":"delivered"}`
		r1 = `{"order_id":"#B-101","status":"delivered"}`
		r2 = `{"order_id":"#B-102","status":"delivered"}`
	)
	model, id, name, pre := "assistant", "call_", "", ""
	switch kind {
	case "gemini":
		model, id, name = "model", "", "lookup_order"
	case "anthropic":
		pre = "Let me check."
	}
	ids := func(n string) string {
		if id == "" {
			return ""
		}
		return id + n
	}
	call := func(n, order string) []wireCall {
		return []wireCall{{ID: ids(n), Name: "lookup_order", Args: `{"order_id":"` + order + `"}`}}
	}
	result := func(n, content string) wireMsg {
		if kind == "openai" {
			return wireMsg{Role: "tool", Results: []wireResult{{ID: ids(n), Content: content}}}
		}
		return wireMsg{Role: "user", Results: []wireResult{{ID: ids(n), Name: name, Content: content}}}
	}
	want := [][]wireMsg{
		{
			{Role: "system", Text: wirePrompt},
			{Role: "user", Text: u1},
			{Role: model, Text: pre, Calls: call("2", "#B-101")},
			result("2", r1),
			{Role: model, Text: a1},
			{Role: "user", Text: u2},
		},
		{
			{Role: "system", Text: wirePrompt},
			{Role: model, Text: a1},
			{Role: "user", Text: u2},
			{Role: model, Text: pre, Calls: call("3", "#B-102")},
			result("3", r2),
		},
	}
	if kind != "openai" {
		want[1] = slices.Insert(want[1], 1, wireMsg{Role: "user", Text: agent.OmittedHistoryNote})
	}
	if len(reqs) != 2 {
		t.Fatalf("turn 2: %d requests", len(reqs))
	}
	for i := range reqs {
		if diff := diffMsgs(reqs[i].Msgs, want[i]); diff != "" {
			t.Fatalf("turn 2, call %d:\n%s", i+1, diff)
		}
	}
}

// TestWireFortyTurns runs a 40-turn support chat with tool calls (single,
// parallel, chained, failing) through hierarchical memory: every request is
// valid for the provider, the order id from turn 2 reaches the request at
// turn 40 through the folded facts, and the store holds every message.
func TestWireFortyTurns(t *testing.T) {
	for _, p := range wireProviders {
		t.Run(p.kind, func(t *testing.T) {
			ctx := context.Background()
			srv := newFakeServer(t, p.kind, supportBrain())
			mgr := newManager(t, 10, 6)
			tool := &orderLookup{}
			a := newAgent(t, p.newModel(t, srv.srv.URL), mgr, agent.WithSystemPrompt(wirePrompt), agent.WithTools(tool))
			var all []string
			calls, rounds := 0, 0
			var res *agent.Result
			for turn := 1; turn <= 40; turn++ {
				var input string
				switch {
				case turn == 1:
					input = "Hi, my name is Dana."
				case turn == 2:
					input = "Please look up my order #A-1234."
				case turn == 15:
					input = "Please look up order #C-7000 as well."
				case turn == 22:
					input = "Please look up orders #B-101 and #B-102 together."
				case turn == 30:
					input = "Please look up order #Z-9 too."
				case turn == 40:
					input = "What was my first order id again?"
				case turn%7 == 0:
					input = fmt.Sprintf("Please look up order #B-%d.", turn)
				default:
					input = fmt.Sprintf("Small talk number %d, nothing important.", turn)
				}
				var err error
				res, err = a.Run(ctx, "support-1", "dana", input)
				if err != nil {
					t.Fatalf("turn %d: %v", turn, err)
				}
				if err := mgr.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				all = append(all, lines(res.Messages)...)
				calls += res.ModelCalls
				rounds += res.ToolRounds
				switch turn {
				case 15:
					if res.ToolRounds != 2 || !strings.Contains(res.Text, "#C-7001") {
						t.Fatalf("turn 15: %d rounds, %q", res.ToolRounds, res.Text)
					}
				case 22:
					if res.ToolRounds != 1 || len(res.Messages) != 5 {
						t.Fatalf("turn 22: %q", lines(res.Messages))
					}
				case 30:
					if !strings.Contains(res.Messages[2].GetContent(), "error: order #Z-9 not found") {
						t.Fatalf("turn 30: %q", lines(res.Messages))
					}
				}
			}
			reqs := srv.requests()
			if len(reqs) != calls || rounds != 10 || int(tool.calls.Load()) != 11 {
				t.Fatalf("%d requests for %d calls, %d rounds, %d tool calls", len(reqs), calls, rounds, tool.calls.Load())
			}
			for i, r := range reqs {
				if err := wireViolation(p.kind, r); err != nil {
					t.Fatalf("request %d: %v\n%s", i, err, r.Body)
				}
			}
			final := reqs[len(reqs)-1]
			if !strings.Contains(final.Msgs[0].Text+final.text(), "#A-1234") || hasVerbatim(final, "Please look up my order #A-1234.") {
				t.Fatalf("turn 40 request:\n%s", final.text())
			}
			if res.Text != "Your first order was #A-1234." {
				t.Fatalf("turn 40 answer %q", res.Text)
			}
			if got := stored(t, mgr, "support-1", "dana"); !slices.Equal(got, all) {
				t.Fatalf("stored history differs from the turns:\nstored %d, turns %d", len(got), len(all))
			}
			if len(all) != 40*2+10+11 { // users, answers, tool-call messages, results
				t.Fatalf("%d messages", len(all))
			}
		})
	}
}

// TestWireStream streams a tool round and an answer through the real
// clients: the callback gets the text only, never tool-call deltas.
func TestWireStream(t *testing.T) {
	for _, p := range wireProviders {
		if p.kind == "anthropic" { // the fake does not speak Anthropic's event stream
			continue
		}
		t.Run(p.kind, func(t *testing.T) {
			ctx := context.Background()
			srv := newFakeServer(t, p.kind, supportBrain())
			mgr := newManager(t, 0, 0)
			a := newAgent(t, p.newModel(t, srv.srv.URL), mgr, agent.WithSystemPrompt(wirePrompt), agent.WithTools(&orderLookup{}))
			var chunks []string
			res, err := a.RunStream(ctx, "s", "u", "Please look up my order #A-1234.", func(_ context.Context, c []byte) error {
				chunks = append(chunks, string(c))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(chunks, ""); got != res.Text || len(chunks) < 3 || !strings.Contains(got, "shipped") {
				t.Fatalf("chunks %q, text %q", chunks, res.Text)
			}
			for _, r := range srv.requests() {
				if !r.Stream {
					t.Fatalf("not streamed: %s", r.Path)
				}
			}
			if res.ToolRounds != 1 || len(stored(t, mgr, "s", "u")) != 4 {
				t.Fatalf("rounds %d, stored %q", res.ToolRounds, stored(t, mgr, "s", "u"))
			}
		})
	}
}

// TestWireModelError: an API error saves the user message only.
func TestWireModelError(t *testing.T) {
	for _, p := range wireProviders {
		t.Run(p.kind, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprint(w, `{"error":{"code":400,"message":"invalid request","status":"INVALID_ARGUMENT"}}`)
			}))
			t.Cleanup(srv.Close)
			mgr := newManager(t, 0, 0)
			a := newAgent(t, p.newModel(t, srv.URL), mgr, agent.WithSystemPrompt(wirePrompt))
			if _, err := a.Run(context.Background(), "s", "u", "hello"); err == nil || !strings.Contains(err.Error(), "invalid request") {
				t.Fatalf("err = %v", err)
			}
			if got := stored(t, mgr, "s", "u"); !slices.Equal(got, []string{"human: hello"}) {
				t.Fatalf("stored %q", got)
			}
		})
	}
}

// hasVerbatim reports whether the request holds a user message with text.
func hasVerbatim(req wireReq, text string) bool {
	for _, m := range req.Msgs {
		if m.Role == "user" && m.Text == text {
			return true
		}
	}
	return false
}

func diffMsgs(got, want []wireMsg) string {
	var b strings.Builder
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w wireMsg
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			fmt.Fprintf(&b, "message %d:\n  got  %+v\n  want %+v\n", i, g, w)
		}
	}
	return b.String()
}

func TestDetectProvider(t *testing.T) {
	for _, p := range wireProviders {
		if got := agent.DetectProvider(p.newModel(t, "http://127.0.0.1:1")); got != agent.Provider(p.kind) {
			t.Errorf("%s detected as %q", p.kind, got)
		}
	}
	if got := agent.DetectProvider(agenttest.NewScript()); got != agent.ProviderOpenAI {
		t.Errorf("scripted model detected as %q", got)
	}
	if got := agent.DetectProvider(nil); got != agent.ProviderOpenAI {
		t.Errorf("nil detected as %q", got)
	}
}
