package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/summary"
)

// fakeGemini is an httptest server speaking the Gemini REST API's
// generateContent: it records the requests and answers with reply.
type fakeGemini struct {
	srv   *httptest.Server
	mu    sync.Mutex
	reqs  []recorded
	reply func(w http.ResponseWriter, r *http.Request)
}

type recorded struct {
	Path  string
	Query string
	Body  map[string]any
}

func newFakeGemini(t *testing.T, reply func(w http.ResponseWriter, r *http.Request)) *fakeGemini {
	t.Helper()
	f := &fakeGemini{reply: reply}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{Path: r.URL.Path, Query: r.URL.RawQuery, Body: body})
		f.mu.Unlock()
		f.reply(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGemini) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// jsonReply answers with one candidate whose text is text.
func jsonReply(text string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"candidates": []any{map[string]any{
				"content":      map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}},
				"finishReason": "STOP",
			}},
			"usageMetadata": map[string]any{"promptTokenCount": 321, "candidatesTokenCount": 45, "totalTokenCount": 366},
		})
	}
}

func request() summary.Request {
	return summary.Request{
		SessionID: "s1",
		Messages: []llms.ChatMessage{
			llms.HumanChatMessage{Content: "My order #A-7731 arrived broken."},
			llms.AIChatMessage{Content: "Sorry! I can refund the $129.99."},
		},
		Existing: &summary.Summary{Facts: []summary.Fact{{Key: "customer_name", Value: "Dana", Category: summary.Entity}}},
	}
}

func newSummarizer(t *testing.T, f *fakeGemini, timeout time.Duration) *Summarizer {
	t.Helper()
	s, err := New(context.Background(), Config{APIKey: "test-key", Model: "gemini-test", BaseURL: f.srv.URL, Timeout: timeout, MaxNarrativeTokens: 123})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestSummarizeRequestAndReply(t *testing.T) {
	t.Parallel()
	f := newFakeGemini(t, jsonReply(`{"narrative":"Customer reported order #A-7731 broken; refund offered.","facts":[{"key":"order_id","value":"#A-7731","category":"ENTITY"},{"key":"refund_amount","value":"$129.99","category":"NUMERIC"}]}`))
	s := newSummarizer(t, f, 5*time.Second)

	res, err := s.Summarize(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if res.Narrative != "Customer reported order #A-7731 broken; refund offered." || len(res.Facts) != 2 ||
		!reflect.DeepEqual(res.Facts[0], summary.Fact{Key: "order_id", Value: "#A-7731", Category: summary.Entity}) ||
		res.Facts[1].Category != summary.Numeric {
		t.Fatalf("result = %+v", res)
	}
	if res.Usage != (summary.Usage{InputTokens: 321, OutputTokens: 45}) {
		t.Fatalf("usage = %+v", res.Usage)
	}

	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if !strings.HasSuffix(r.Path, "/models/gemini-test:generateContent") {
		t.Fatalf("path = %s, want …/models/gemini-test:generateContent (not streaming)", r.Path)
	}
	if !strings.Contains(r.Query, "key=test-key") {
		t.Fatalf("API key not sent: query %q", r.Query)
	}
	body := r.Body
	gc, _ := body["generationConfig"].(map[string]any)
	if gc["responseMimeType"] != "application/json" {
		t.Fatalf("responseMimeType = %v", gc["responseMimeType"])
	}
	schema, _ := gc["responseSchema"].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	facts, _ := props["facts"].(map[string]any)
	items, _ := facts["items"].(map[string]any)
	itemProps, _ := items["properties"].(map[string]any)
	category, _ := itemProps["category"].(map[string]any)
	enum, _ := category["enum"].([]any)
	if props["narrative"] == nil || len(enum) != 6 || enum[0] != "ENTITY" || enum[5] != "GENERAL" {
		t.Fatalf("responseSchema = %v", schema)
	}
	if req, _ := schema["required"].([]any); len(req) != 2 {
		t.Fatalf("schema required = %v", schema["required"])
	}
	si, _ := body["systemInstruction"].(map[string]any)
	if text := partsText(si); !strings.HasPrefix(text, "You are a conversation summarizer") || !strings.Contains(text, "Maximum ~123 tokens") {
		t.Fatalf("systemInstruction = %q", text)
	}
	contents, _ := body["contents"].([]any)
	if len(contents) != 1 {
		t.Fatalf("contents = %v", contents)
	}
	c0, _ := contents[0].(map[string]any)
	user := partsText(c0)
	for _, want := range []string{"[USER]: My order #A-7731 arrived broken.", "[ASSISTANT]: Sorry! I can refund the $129.99.", "- customer_name: Dana [ENTITY]"} {
		if !strings.Contains(user, want) {
			t.Fatalf("transcript %q lacks %q", user, want)
		}
	}
	if c0["role"] != "user" {
		t.Fatalf("role = %v", c0["role"])
	}
}

func partsText(content map[string]any) string {
	parts, _ := content["parts"].([]any)
	var b strings.Builder
	for _, p := range parts {
		if m, ok := p.(map[string]any); ok {
			s, _ := m["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

func TestSummarizeEmptyMessagesMakesNoCall(t *testing.T) {
	t.Parallel()
	f := newFakeGemini(t, jsonReply(`{}`))
	s := newSummarizer(t, f, time.Second)
	res, err := s.Summarize(context.Background(), summary.Request{SessionID: "s"})
	if err != nil || !res.IsEmpty() || len(f.requests()) != 0 {
		t.Fatalf("res %+v err %v requests %d", res, err, len(f.requests()))
	}
}

func TestSummarizeTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	f := newFakeGemini(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	s := newSummarizer(t, f, 150*time.Millisecond)
	start := time.Now()
	_, err := s.Summarize(context.Background(), request())
	if !errors.Is(err, summary.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("timeout took %s", d)
	}
}

func TestSummarizeBadReplies(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		reply func(http.ResponseWriter, *http.Request)
		want  error
	}{
		{"empty object", jsonReply(`{"narrative":"","facts":[]}`), summary.ErrEmptyReply},
		{"broken JSON", jsonReply(`{"narrative": "x", "facts": [`), summary.ErrUnparseable},
		{"blocked", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"candidates":[{"finishReason":"SAFETY"}]}`)
		}, summary.ErrEmptyReply},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newSummarizer(t, newFakeGemini(t, c.reply), 5*time.Second)
			if _, err := s.Summarize(context.Background(), request()); !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
	t.Run("http error", func(t *testing.T) {
		t.Parallel()
		s := newSummarizer(t, newFakeGemini(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"code":400,"message":"API key not valid","status":"INVALID_ARGUMENT"}}`)
		}), 5*time.Second)
		_, err := s.Summarize(context.Background(), request())
		if err == nil || errors.Is(err, summary.ErrTimeout) || !strings.Contains(err.Error(), "API key not valid") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestNewNeedsCredentials(t *testing.T) {
	t.Parallel()
	if _, err := New(context.Background(), Config{}); err == nil {
		t.Fatal("New without an API key succeeded")
	}
	s, err := New(context.Background(), Config{APIKey: "k", BaseURL: "http://127.0.0.1:1"}) // never dialled
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Model() != DefaultModel {
		t.Fatalf("model = %s", s.Model())
	}
}

func TestEndpoint(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://generativelanguage.googleapis.com":         "https://generativelanguage.googleapis.com",
		"https://generativelanguage.googleapis.com/v1beta/": "https://generativelanguage.googleapis.com",
		"http://127.0.0.1:8080/v1":                          "http://127.0.0.1:8080",
		"https://proxy.example/gemini/":                     "https://proxy.example/gemini",
	} {
		if got := endpoint(in); got != want {
			t.Errorf("endpoint(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResponseSchemaCategories(t *testing.T) {
	t.Parallel()
	cat := ResponseSchema().Properties["facts"].Items.Properties["category"]
	if len(cat.Enum) != len(summary.Categories) {
		t.Fatalf("enum %v", cat.Enum)
	}
	for i, c := range summary.Categories {
		if cat.Enum[i] != string(c) {
			t.Fatalf("enum %v", cat.Enum)
		}
	}
}
