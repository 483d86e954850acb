package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms/googleai"
	"github.com/tmc/langchaingo/llms/openai"
	"google.golang.org/api/option"
	"google.golang.org/grpc"

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/catalog/catalogtest"
	"github.com/strata-go/strata/memory"
)

// recorded is one request a fake provider received.
type recorded struct {
	Method, Path, Query, Auth string
	Body                      map[string]any
}

// fakeProvider is an httptest server that answers embedding requests with
// lexical vectors of the texts it is sent (so that search results are
// meaningful) and records every request.
type fakeProvider struct {
	mu   sync.Mutex
	reqs []recorded
	lex  catalog.Embedder
}

func (f *fakeProvider) record(r *http.Request) map[string]any {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), body})
	f.mu.Unlock()
	return body
}

func (f *fakeProvider) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func (f *fakeProvider) embed(text string) []float32 {
	v, _ := f.lex.EmbedQuery(context.Background(), text)
	return v
}

func newFakeProvider(t *testing.T, handler func(f *fakeProvider, w http.ResponseWriter, r *http.Request)) (*fakeProvider, string) {
	f := &fakeProvider{lex: catalog.NewLexicalEmbedder(64)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler(f, w, r) }))
	t.Cleanup(srv.Close)
	return f, srv.URL
}

// runProviderConversation folds a refund conversation through a manager
// whose catalogue embeds with emb, and searches it.
func runProviderConversation(t *testing.T, emb catalog.Embedder, model string) (*catalog.Catalog, catalog.Index) {
	t.Helper()
	ctx := context.Background()
	env := memEnv()
	cfg := memory.DefaultConfig()
	cfg.Enabled, cfg.TriggerMessageCount, cfg.RecentMessageCount = true, 4, 2
	mgr, cat := catalogtest.Open(t, env, cfg, catalog.WithEmbedder(emb, model))
	idx := env.Index
	for _, tr := range [][2]string{
		{"My blender from order #4417 arrived broken and I want a refund.", "I can refund order #4417."},
		{"The refund should be $89.99.", "Yes, $89.99 will be refunded."},
		{"How long does the refund take?", "About five days."},
	} {
		if err := mgr.SaveTurn(ctx, "chat", "alice", tr[0], tr[1]); err != nil {
			t.Fatal(err)
		}
	}
	catalogtest.Flush(t, ctx, mgr, cat)
	d, _ := idx.Get(ctx, "chat", "alice")
	if d == nil || len(d.Embedding) != 64 || d.Model != model || d.Text == "" {
		t.Fatalf("document: %+v", d)
	}
	res, err := cat.Search(ctx, "alice", "blender refund", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != 1 || res.Best == nil || res.Best.SessionID != "chat" {
		t.Fatalf("Search = %+v", res)
	}
	return cat, idx
}

func TestOpenAIEmbedderRequests(t *testing.T) {
	f, url := newFakeProvider(t, func(f *fakeProvider, w http.ResponseWriter, r *http.Request) {
		body := f.record(r)
		if r.URL.Path != "/v1/embeddings" {
			http.NotFound(w, r)
			return
		}
		var data []map[string]any
		inputs, _ := body["input"].([]any)
		for i, in := range inputs {
			s, _ := in.(string)
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": f.embed(s)})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": body["model"],
			"usage": map[string]any{"prompt_tokens": 5, "total_tokens": 5}})
	})
	llm, err := openai.New(openai.WithBaseURL(url+"/v1"), openai.WithToken("sk-test"),
		openai.WithEmbeddingModel("text-embedding-3-small"))
	if err != nil {
		t.Fatal(err)
	}
	// The adapter keeps new lines: the text embedded is byte for byte the
	// text stored.
	emb, err := catalog.NewEmbedder(llm)
	if err != nil {
		t.Fatal(err)
	}
	_, idx := runProviderConversation(t, emb, "openai/text-embedding-3-small")
	d, _ := idx.Get(context.Background(), "chat", "alice")
	if !strings.Contains(d.Text, "\n") {
		t.Fatalf("stored text %q has no new line to keep", d.Text)
	}

	reqs := f.requests()
	if len(reqs) < 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	docReq, queryReq := reqs[len(reqs)-2], reqs[len(reqs)-1]
	for _, r := range reqs {
		if r.Method != http.MethodPost || r.Path != "/v1/embeddings" || r.Auth != "Bearer sk-test" ||
			r.Body["model"] != "text-embedding-3-small" {
			t.Errorf("request %s %s auth %q model %v", r.Method, r.Path, r.Auth, r.Body["model"])
		}
		if in, ok := r.Body["input"].([]any); !ok || len(in) != 1 {
			t.Errorf("input is not an array of one text: %#v", r.Body["input"])
		}
	}
	if in := docReq.Body["input"].([]any); in[0] != d.Text {
		t.Errorf("document request input %q, stored text %q: the embedding's readable twin differs", in[0], d.Text)
	}
	if in := queryReq.Body["input"].([]any); in[0] != "blender refund" {
		t.Errorf("query request input %q", in[0])
	}
}

func TestGoogleAIEmbedderRequests(t *testing.T) {
	f, url := newFakeProvider(t, func(f *fakeProvider, w http.ResponseWriter, r *http.Request) {
		body := f.record(r)
		if !strings.HasSuffix(r.URL.Path, ":batchEmbedContents") {
			http.NotFound(w, r)
			return
		}
		var out []map[string]any
		reqs, _ := body["requests"].([]any)
		for _, rq := range reqs {
			m, _ := rq.(map[string]any)
			content, _ := m["content"].(map[string]any)
			parts, _ := content["parts"].([]any)
			var text string
			for _, p := range parts {
				pm, _ := p.(map[string]any)
				s, _ := pm["text"].(string)
				text += s
			}
			out = append(out, map[string]any{"values": f.embed(text)})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"embeddings": out})
	})
	withEndpoint := func(o *googleai.Options) { o.ClientOptions = append(o.ClientOptions, option.WithEndpoint(url)) }
	noGRPC := func(o *googleai.Options) {
		o.ClientOptions = append(o.ClientOptions, option.WithGRPCDialOption(grpc.WithContextDialer(
			func(context.Context, string) (net.Conn, error) { return nil, errors.New("no gRPC in tests") })))
	}
	llm, err := googleai.New(context.Background(), googleai.WithAPIKey("test"),
		googleai.WithDefaultEmbeddingModel("text-embedding-004"), withEndpoint, noGRPC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = llm.Close() })
	emb, err := catalog.NewEmbedder(llm)
	if err != nil {
		t.Fatal(err)
	}
	_, idx := runProviderConversation(t, emb, "googleai/text-embedding-004")
	d, _ := idx.Get(context.Background(), "chat", "alice")

	reqs := f.requests()
	if len(reqs) < 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	texts := func(r recorded) []string {
		var out []string
		rs, _ := r.Body["requests"].([]any)
		for _, rq := range rs {
			m, _ := rq.(map[string]any)
			if m["model"] != "models/text-embedding-004" {
				t.Errorf("request model %v", m["model"])
			}
			content, _ := m["content"].(map[string]any)
			parts, _ := content["parts"].([]any)
			for _, p := range parts {
				pm, _ := p.(map[string]any)
				s, _ := pm["text"].(string)
				out = append(out, s)
			}
		}
		return out
	}
	for _, r := range reqs {
		if r.Method != http.MethodPost || r.Path != "/v1beta/models/text-embedding-004:batchEmbedContents" ||
			!strings.Contains(r.Query, "key=test") {
			t.Errorf("request %s %s?%s", r.Method, r.Path, r.Query)
		}
	}
	if got := texts(reqs[len(reqs)-2]); len(got) != 1 || got[0] != d.Text {
		t.Errorf("document request texts %q, stored text %q", got, d.Text)
	}
	if got := texts(reqs[len(reqs)-1]); len(got) != 1 || got[0] != "blender refund" {
		t.Errorf("query request texts %q", got)
	}
}
