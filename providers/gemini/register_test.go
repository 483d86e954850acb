package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-go/strata/autoconfig"
)

const (
	keyEnabled   = "arc.reactor.memory.summary.enabled"
	keyTrigger   = "arc.reactor.memory.summary.trigger-message-count"
	keyRecent    = "arc.reactor.memory.summary.recent-message-count"
	keyLLMModel  = "arc.reactor.memory.summary.llm-model"
	keyProvider  = "arc.reactor.memory.summarizer.provider"
	keyBaseURL   = "arc.reactor.memory.summarizer.base-url"
	keyAPIKeyEnv = "arc.reactor.memory.summarizer.api-key-env"
)

const summaryJSON = `{"narrative":"Dana asked for a refund of order #A-7731.","facts":[{"key":"order_id","value":"#A-7731","category":"ENTITY"},{"key":"refund_amount","value":"$129.99","category":"NUMERIC"}]}`

func build(t *testing.T, env []string, set ...string) (*autoconfig.Runtime, error) {
	t.Helper()
	cfg, err := autoconfig.LoadWith(autoconfig.LoadOptions{Environ: env, Overrides: append([]string{
		keyEnabled + "=true", keyTrigger + "=4", keyRecent + "=2"}, set...)})
	if err != nil {
		return nil, err
	}
	rt, err := autoconfig.BuildRuntime(context.Background(), cfg)
	if err == nil {
		t.Cleanup(func() { _ = rt.Close() })
	}
	return rt, err
}

// TestRegisteredProviderBuilds: importing this package makes arc-reactor's
// llm-model: gemini select the Gemini summarizer, with its default model,
// the key from GEMINI_API_KEY, JSON mode and the response schema.
func TestRegisteredProviderBuilds(t *testing.T) {
	t.Parallel()
	f := newFakeGemini(t, jsonReply(summaryJSON))
	rt, err := build(t, []string{"GEMINI_API_KEY=g-test"}, keyLLMModel+"=gemini", keyBaseURL+"="+f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 4 {
		user := fmt.Sprintf("Turn %d: my order #A-7731 cost $129.99, I want a refund.", i+1)
		if err := rt.Manager.SaveTurn(ctx, "s", "dana", user, "Noted."); err != nil {
			t.Fatal(err)
		}
		if err := rt.Manager.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	h, err := rt.Manager.Load(ctx, "s", "dana")
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != "hierarchical" || h.Summary == nil || !strings.Contains(fmt.Sprint(h.Summary.Facts), "#A-7731") {
		t.Fatalf("mode %s summary %+v", h.Mode, h.Summary)
	}
	reqs := f.requests()
	if len(reqs) == 0 || !strings.HasSuffix(reqs[0].Path, "/models/"+DefaultModel+":generateContent") || !strings.Contains(reqs[0].Query, "key=g-test") {
		t.Fatalf("requests %+v", reqs)
	}
	gc, _ := reqs[0].Body["generationConfig"].(map[string]any)
	contents, _ := json.Marshal(reqs[0].Body["contents"])
	if gc["responseMimeType"] != "application/json" || gc["responseSchema"] == nil || !strings.Contains(string(contents), "[USER]: Turn 1: my order #A-7731") {
		t.Fatalf("request body %v", reqs[0].Body)
	}
}

func TestRegisteredProviderAPIKey(t *testing.T) {
	t.Parallel()
	_, err := build(t, []string{"GOOGLE_API_KEY="}, keyProvider+"=gemini", keyBaseURL+"=http://127.0.0.1:1")
	var ce *autoconfig.Error
	if !errors.As(err, &ce) || ce.Key != keyAPIKeyEnv || !strings.Contains(err.Error(), DefaultAPIKeyEnv) || !strings.Contains(err.Error(), FallbackAPIKeyEnv) {
		t.Fatalf("no key: %v", err)
	}
	// GOOGLE_API_KEY comes first; an explicit variable is the only one read.
	if _, err := build(t, []string{"GOOGLE_API_KEY=a", "GEMINI_API_KEY=b"}, keyProvider+"=gemini", keyBaseURL+"=http://127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	_, err = build(t, []string{"GOOGLE_API_KEY=a"}, keyProvider+"=gemini", keyAPIKeyEnv+"=MY_GEMINI_KEY")
	if err == nil || !strings.Contains(err.Error(), "MY_GEMINI_KEY") {
		t.Fatalf("explicit api-key-env: %v", err)
	}
}
