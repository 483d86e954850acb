package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/summary"
)

// fakeOpenAI is an httptest server speaking the chat-completions API.
type fakeOpenAI struct {
	srv   *httptest.Server
	mu    sync.Mutex
	reqs  []map[string]any
	auth  []string
	paths []string
	reply string
}

// snapshot returns the recorded requests, paths and Authorization headers.
func (f *fakeOpenAI) snapshot() (reqs []map[string]any, paths, auth []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append(reqs, f.reqs...), append(paths, f.paths...), append(auth, f.auth...)
}

func newFakeOpenAI(t *testing.T, reply string) *fakeOpenAI {
	t.Helper()
	f := &fakeOpenAI{reply: reply}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		f.mu.Lock()
		f.reqs = append(f.reqs, body)
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.paths = append(f.paths, r.URL.Path)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": body["model"],
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": f.reply}}},
			"usage": map[string]any{"prompt_tokens": 210, "completion_tokens": 34, "total_tokens": 244},
		})
	}))
	t.Cleanup(f.srv.Close)
	return f
}

const reply = `{"narrative":"Refund of $129.99 for order #A-7731 agreed.","facts":[{"key":"order_id","value":"#A-7731","category":"ENTITY"},{"key":"refund_amount","value":"$129.99","category":"NUMERIC"}]}`

func request() summary.Request {
	return summary.Request{SessionID: "s1", Messages: []llms.ChatMessage{
		llms.HumanChatMessage{Content: "Refund order #A-7731 please."},
		llms.AIChatMessage{Content: "Done: $129.99 refunded."},
	}}
}

func TestSummarizeJSONMode(t *testing.T) {
	t.Parallel()
	f := newFakeOpenAI(t, reply)
	svc, err := New(Config{APIKey: "sk-test", Model: "gpt-test", BaseURL: f.srv.URL + "/v1", Timeout: 5 * time.Second, MaxNarrativeTokens: 77})
	if err != nil {
		t.Fatal(err)
	}
	res, err := svc.Summarize(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Facts) != 2 || res.Facts[0].Value != "#A-7731" || res.Usage.InputTokens != 210 || res.Usage.OutputTokens != 34 {
		t.Fatalf("result = %+v", res)
	}
	reqs, paths, auth := f.snapshot()
	if len(reqs) != 1 || paths[0] != "/v1/chat/completions" || auth[0] != "Bearer sk-test" {
		t.Fatalf("requests %d path %v auth %v", len(reqs), paths, auth)
	}
	body := reqs[0]
	if body["model"] != "gpt-test" {
		t.Fatalf("model = %v", body["model"])
	}
	rf, _ := body["response_format"].(map[string]any)
	if rf["type"] != "json_object" {
		t.Fatalf("response_format = %v, want json_object", body["response_format"])
	}
	msgs, _ := body["messages"].([]any)
	if len(msgs) != 2 {
		t.Fatalf("messages = %v", msgs)
	}
	sys, _ := msgs[0].(map[string]any)
	user, _ := msgs[1].(map[string]any)
	if sys["role"] != "system" || !strings.Contains(contentOf(sys), "Maximum ~77 tokens") {
		t.Fatalf("system message = %v", sys)
	}
	if user["role"] != "user" || !strings.Contains(contentOf(user), "[USER]: Refund order #A-7731 please.\n[ASSISTANT]: Done: $129.99 refunded.") {
		t.Fatalf("user message = %v", user)
	}
}

// contentOf reads a message's content, a string or an array of parts.
func contentOf(m map[string]any) string {
	switch c := m["content"].(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if pm, ok := p.(map[string]any); ok {
				s, _ := pm["text"].(string)
				b.WriteString(s)
			}
		}
		return b.String()
	}
	return ""
}

func TestSummarizeJSONSchema(t *testing.T) {
	t.Parallel()
	f := newFakeOpenAI(t, reply)
	svc, err := New(Config{APIKey: "sk-test", BaseURL: f.srv.URL + "/v1", JSONSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Summarize(context.Background(), request()); err != nil {
		t.Fatal(err)
	}
	reqs, _, _ := f.snapshot()
	body := reqs[0]
	if body["model"] != DefaultModel {
		t.Fatalf("model = %v", body["model"])
	}
	rf, _ := body["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	schema, _ := js["schema"].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	facts, _ := props["facts"].(map[string]any)
	items, _ := facts["items"].(map[string]any)
	cat, _ := items["properties"].(map[string]any)["category"].(map[string]any)
	enum, _ := cat["enum"].([]any)
	if rf["type"] != "json_schema" || js["name"] != SchemaName || js["strict"] != true ||
		schema["additionalProperties"] != false || items["additionalProperties"] != false || len(enum) != 6 {
		t.Fatalf("response_format = %v", body["response_format"])
	}
}

func TestSummarizeWithoutJSONMode(t *testing.T) {
	t.Parallel()
	// Without JSON mode the reply must still be the JSON object: prose is a
	// failed fold (summary.ErrNotJSON), never a narrative.
	f := newFakeOpenAI(t, `{"narrative": "The customer wants a refund.", "facts": []}`)
	svc, err := New(Config{APIKey: "x", BaseURL: f.srv.URL + "/v1", DisableJSONMode: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := svc.Summarize(context.Background(), request())
	if err != nil || res.Narrative != "The customer wants a refund." {
		t.Fatalf("res %+v err %v", res, err)
	}
	reqs, _, _ := f.snapshot()
	if _, ok := reqs[0]["response_format"]; ok {
		t.Fatalf("response_format sent: %v", reqs[0]["response_format"])
	}
}

func TestSummarizeUnparseable(t *testing.T) {
	t.Parallel()
	f := newFakeOpenAI(t, `{"narrative": "cut off`)
	svc, err := New(Config{APIKey: "x", BaseURL: f.srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Summarize(context.Background(), request()); !errors.Is(err, summary.ErrUnparseable) {
		t.Fatalf("err = %v", err)
	}
}

func TestNewNeedsKey(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{BaseURL: "http://127.0.0.1:1/v1"}); err == nil {
		t.Fatal("New without a key succeeded")
	}
}
