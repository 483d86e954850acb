package autoconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/providers/gemini"
	"github.com/strata-go/strata/summary"
)

var quiet = slog.New(slog.DiscardHandler)

// recorder is an httptest server that records request bodies and answers
// with a fixed body.
type recorder struct {
	srv    *httptest.Server
	mu     sync.Mutex
	paths  []string
	querys []string
	auths  []string
	bodies []map[string]any
}

func newRecorder(t *testing.T, answer func(body map[string]any) any) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		rec.mu.Lock()
		rec.paths = append(rec.paths, r.URL.Path)
		rec.querys = append(rec.querys, r.URL.RawQuery)
		rec.auths = append(rec.auths, r.Header.Get("Authorization"))
		rec.bodies = append(rec.bodies, body)
		rec.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer(body))
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (r *recorder) snapshot() (paths, querys, auths []string, bodies []map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(paths, r.paths...), append(querys, r.querys...), append(auths, r.auths...), append(bodies, r.bodies...)
}

const summaryJSON = `{"narrative":"Dana asked for a refund of order #A-7731.","facts":[{"key":"order_id","value":"#A-7731","category":"ENTITY"},{"key":"refund_amount","value":"$129.99","category":"NUMERIC"}]}`

func openAIAnswer(map[string]any) any {
	return map[string]any{
		"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": summaryJSON}}},
		"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
	}
}

func geminiAnswer(map[string]any) any {
	return map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": []any{map[string]any{"text": summaryJSON}}},
			"finishReason": "STOP",
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 20},
	}
}

// conversation saves turns exchanges into a session, enough to pass a
// trigger of 4 with a window of 2.
func conversation(t *testing.T, mgr *memory.Manager, session string, turns int) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < turns; i++ {
		user := fmt.Sprintf("Turn %d: my order #A-7731 cost $129.99, I want a refund.", i+1)
		if err := mgr.SaveTurn(ctx, session, "dana", user, fmt.Sprintf("Answer %d: refund noted.", i+1)); err != nil {
			t.Fatal(err)
		}
		if err := mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func smallWindow(extra ...string) []string {
	return append([]string{
		keyEnabled + "=true",
		keyTrigger + "=4",
		keyRecent + "=2",
	}, extra...)
}

func buildRuntime(t *testing.T, env []string, overrides []string) *Runtime {
	t.Helper()
	cfg, err := LoadWith(LoadOptions{Environ: env, Overrides: overrides})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := BuildRuntime(context.Background(), cfg, WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

func TestBuildSummariesOff(t *testing.T) {
	t.Parallel()
	rt := buildRuntime(t, []string{}, []string{keyMaxTurns + "=2"})
	if rt.Summaries != nil || rt.Summarizer != nil || rt.DB != nil || rt.Manager.SummaryStore() != nil {
		t.Fatalf("summaries off built %+v", rt)
	}
	conversation(t, rt.Manager, "s", 10)
	h, err := rt.Manager.Load(context.Background(), "s", "dana")
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != memory.ModeTakeLast || len(h.Messages) != 4 || h.Total != 20 {
		t.Fatalf("history mode %s, %d messages of %d", h.Mode, len(h.Messages), h.Total)
	}
}

func TestBuildExtractive(t *testing.T) {
	t.Parallel()
	cfg, err := LoadWithEnv([]string{}, writeFile(t, "s.yaml", "arc.reactor.memory.summary:\n  enabled: true\n  trigger-message-count: 4\n  recent-message-count: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := Build(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	conversation(t, mgr, "s", 4)
	h, err := mgr.Load(context.Background(), "s", "dana")
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != memory.ModeHierarchical || h.Summary == nil || !hasFact(h.Summary, "#A-7731") {
		t.Fatalf("mode %s summary %+v", h.Mode, h.Summary)
	}
}

func hasFact(s *summary.Summary, value string) bool {
	for _, f := range s.Facts {
		if f.Value == value {
			return true
		}
	}
	return false
}

func TestBuildOpenAI(t *testing.T) {
	t.Parallel()
	srv := newRecorder(t, openAIAnswer)
	rt := buildRuntime(t, []string{"OPENAI_API_KEY=sk-test"}, smallWindow(
		keySummarizerProvider+"=openai",
		keySummarizerBaseURL+"="+srv.srv.URL+"/v1",
		keySummarizerModel+"=llama3.1",
	))
	conversation(t, rt.Manager, "s", 4)
	h, err := rt.Manager.Load(context.Background(), "s", "dana")
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != memory.ModeHierarchical || !hasFact(h.Summary, "$129.99") {
		t.Fatalf("mode %s summary %+v", h.Mode, h.Summary)
	}
	paths, _, auths, bodies := srv.snapshot()
	if len(bodies) == 0 || paths[0] != "/v1/chat/completions" || auths[0] != "Bearer sk-test" {
		t.Fatalf("requests: paths %v auth %v", paths, auths)
	}
	b := bodies[0]
	rf, _ := b["response_format"].(map[string]any)
	msgs, _ := b["messages"].([]any)
	if b["model"] != "llama3.1" || rf["type"] != "json_object" || len(msgs) != 2 {
		t.Fatalf("request body = %v", b)
	}
	user, _ := json.Marshal(msgs[1])
	if !strings.Contains(string(user), `[USER]: Turn 1: my order #A-7731 cost $129.99`) {
		t.Fatalf("transcript not sent: %s", user)
	}
}

func TestBuildOpenAIJSONSchema(t *testing.T) {
	t.Parallel()
	srv := newRecorder(t, openAIAnswer)
	rt := buildRuntime(t, []string{"MY_KEY=sk-mine"}, smallWindow(
		keySummarizerProvider+"=openai",
		keySummarizerBaseURL+"="+srv.srv.URL+"/v1",
		keySummarizerAPIKeyEnv+"=MY_KEY",
		keySummarizerSchema+"=true",
	))
	conversation(t, rt.Manager, "s", 3)
	_, _, auths, bodies := srv.snapshot()
	if len(bodies) == 0 {
		t.Fatal("no summarizer call")
	}
	rf, _ := bodies[0]["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["strict"] != true || auths[0] != "Bearer sk-mine" || bodies[0]["model"] != DefaultOpenAIModel {
		t.Fatalf("body %v auth %v", bodies[0], auths)
	}
}

func TestBuildGemini(t *testing.T) {
	t.Parallel()
	srv := newRecorder(t, geminiAnswer)
	// Two lines switch to Gemini (llm-model is the reference's way).
	rt := buildRuntime(t, []string{"GEMINI_API_KEY=g-test"}, smallWindow(
		keyLLMModel+"=gemini",
		keySummarizerBaseURL+"="+srv.srv.URL,
	))
	if _, ok := rt.Summarizer.(*gemini.Summarizer); !ok {
		t.Fatalf("summarizer is %T", rt.Summarizer)
	}
	conversation(t, rt.Manager, "s", 4)
	h, err := rt.Manager.Load(context.Background(), "s", "dana")
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != memory.ModeHierarchical || !hasFact(h.Summary, "#A-7731") {
		t.Fatalf("mode %s summary %+v", h.Mode, h.Summary)
	}
	paths, querys, _, bodies := srv.snapshot()
	if len(bodies) == 0 || !strings.HasSuffix(paths[0], "/models/"+DefaultGeminiModel+":generateContent") || !strings.Contains(querys[0], "key=g-test") {
		t.Fatalf("paths %v query %v", paths, querys)
	}
	b := bodies[0]
	gc, _ := b["generationConfig"].(map[string]any)
	si, _ := json.Marshal(b["systemInstruction"])
	contents, _ := json.Marshal(b["contents"])
	if gc["responseMimeType"] != "application/json" || gc["responseSchema"] == nil ||
		!strings.Contains(string(si), "conversation summarizer") || !strings.Contains(string(contents), "[USER]: Turn 1: my order #A-7731") {
		t.Fatalf("request body = %v", b)
	}
}

func TestBuildAPIKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	build := func(env []string, set ...string) error {
		cfg, err := LoadWith(LoadOptions{Environ: env, Overrides: append([]string{keyEnabled + "=true"}, set...)})
		if err != nil {
			return err
		}
		rt, err := BuildRuntime(ctx, cfg, WithLogger(quiet))
		if err == nil {
			_ = rt.Close()
		}
		return err
	}
	// OpenAI's API without a key.
	err := build([]string{}, keySummarizerProvider+"=openai")
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("openai without a key: %v", err)
	}
	// Gemini without a key.
	err = build([]string{"GOOGLE_API_KEY="}, keySummarizerProvider+"=gemini", keySummarizerBaseURL+"=http://127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "GOOGLE_API_KEY") {
		t.Fatalf("gemini without a key: %v", err)
	}
	// An explicit variable name must hold a key.
	err = build([]string{"OPENAI_API_KEY=sk"}, keySummarizerProvider+"=openai", keySummarizerAPIKeyEnv+"=VLLM_KEY",
		keySummarizerBaseURL+"=http://localhost:8000/v1")
	if err == nil || !strings.Contains(err.Error(), "VLLM_KEY") {
		t.Fatalf("explicit api-key-env: %v", err)
	}
	// A local OpenAI-compatible server needs no key; nothing is dialled.
	for _, base := range []string{"http://localhost:11434/v1", "http://127.0.0.1:8080/v1", "http://ollama:11434/v1", "http://10.0.0.7:8000/v1"} {
		if err := build([]string{}, keySummarizerProvider+"=openai", keySummarizerBaseURL+"="+base); err != nil {
			t.Fatalf("local server %s: %v", base, err)
		}
	}
	if err := build([]string{}, keySummarizerProvider+"=openai", keySummarizerBaseURL+"=https://api.together.example/v1"); err == nil {
		t.Fatal("remote OpenAI-compatible server without a key was accepted")
	}
}

func TestBuildWithSummarizerOption(t *testing.T) {
	t.Parallel()
	calls := 0
	svc := summary.ServiceFunc(func(ctx context.Context, req summary.Request) (summary.Result, error) {
		calls++
		return summary.Result{Narrative: "custom"}, nil
	})
	cfg, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: smallWindow()})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := BuildRuntime(context.Background(), cfg, WithSummarizer(svc), WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	conversation(t, rt.Manager, "s", 3)
	if calls == 0 {
		t.Fatal("custom summarizer not used")
	}
}

func TestBuildRejectsInvalidConfig(t *testing.T) {
	t.Parallel()
	cfg := Default()
	cfg.Memory.RecentMessageCount = 0
	_, err := Build(context.Background(), cfg)
	var e *Error
	if !errors.As(err, &e) || e.Key != keyRecent {
		t.Fatalf("err = %v", err)
	}
	// nil means the defaults.
	mgr, err := Build(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = mgr.Close()
}

func TestBuildDatasource(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewEmptySchema(t)
	rt := buildRuntime(t, []string{}, smallWindow(keyDatasourceURL+"="+schema.URL))
	if rt.DB == nil {
		t.Fatal("no database pool")
	}
	ctx := context.Background()
	if v, dirty, err := db.MigrationVersion(ctx, rt.DB); err != nil || v == 0 || dirty {
		t.Fatalf("migrate-on-start: version %d dirty %v err %v", v, dirty, err)
	}
	conversation(t, rt.Manager, "pg-session", 4)
	s, err := rt.Summaries.Get(ctx, "pg-session")
	if err != nil || s == nil || !hasFact(s, "#A-7731") {
		t.Fatalf("stored summary %+v err %v", s, err)
	}
	if owner, err := rt.Messages.Owner(ctx, "pg-session"); err != nil || owner != "dana" {
		t.Fatalf("owner %q err %v", owner, err)
	}
	d := rt.DB
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.PingContext(ctx); err == nil {
		t.Fatal("Close left the pool open")
	}
}

func TestBuildSpringDatasourceWithoutMigration(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewEmptySchema(t)
	u, err := url.Parse(schema.URL)
	if err != nil {
		t.Fatal(err)
	}
	// The reference's form: a JDBC URL plus username and password.
	q := u.Query()
	q.Set("currentSchema", q.Get("search_path"))
	q.Del("search_path")
	jdbc := "jdbc:postgresql://" + u.Host + u.Path + "?" + q.Encode()
	pass, _ := u.User.Password()
	env := []string{"SPRING_DATASOURCE_URL=" + jdbc, "SPRING_DATASOURCE_USERNAME=" + u.User.Username(), "DB_PASSWORD=" + pass}
	file := writeFile(t, "application.yaml", "spring:\n  datasource:\n    password: ${DB_PASSWORD}\narc.reactor.memory.datasource.migrate-on-start: false\n")
	cfg, err := LoadWith(LoadOptions{Environ: env, Files: []string{file}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := BuildRuntime(context.Background(), cfg, WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if v, _, err := db.MigrationVersion(context.Background(), rt.DB); err != nil || v != 0 {
		t.Fatalf("migrate-on-start=false migrated: version %d err %v", v, err)
	}
	var schemaName string
	if err := rt.DB.GetContext(context.Background(), &schemaName, "SELECT current_schema()"); err != nil || schemaName != schema.Name {
		t.Fatalf("currentSchema not applied: %q %v", schemaName, err)
	}
}

func TestBuildDatasourceUnreachable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{keyDatasourceURL + "=postgres://u:hunter2@127.0.0.1:1/db?sslmode=disable&connect_timeout=2"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = BuildRuntime(ctx, cfg, WithLogger(quiet))
	if err == nil || !strings.HasPrefix(err.Error(), "datasource:") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v", err)
	}
}
