package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-go/strata/autoconfig"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

const (
	keyEnabled   = "arc.reactor.memory.summary.enabled"
	keyTrigger   = "arc.reactor.memory.summary.trigger-message-count"
	keyRecent    = "arc.reactor.memory.summary.recent-message-count"
	keyProvider  = "arc.reactor.memory.summarizer.provider"
	keyModel     = "arc.reactor.memory.summarizer.model"
	keyBaseURL   = "arc.reactor.memory.summarizer.base-url"
	keyAPIKeyEnv = "arc.reactor.memory.summarizer.api-key-env"
	keySchema    = "arc.reactor.memory.summarizer.json-schema"
)

// build loads a configuration with summaries on (trigger 4, window 2) and
// the openai provider, and builds its runtime.
func build(t *testing.T, env []string, set ...string) (*autoconfig.Runtime, error) {
	t.Helper()
	cfg, err := autoconfig.LoadWith(autoconfig.LoadOptions{Environ: env, Overrides: append([]string{
		keyEnabled + "=true", keyTrigger + "=4", keyRecent + "=2", keyProvider + "=openai"}, set...)})
	if err != nil {
		return nil, err
	}
	rt, err := autoconfig.BuildRuntime(context.Background(), cfg)
	if err == nil {
		t.Cleanup(func() { _ = rt.Close() })
	}
	return rt, err
}

// converse saves turns that mention order #A-7731 and waits for the folds.
func converse(t *testing.T, mgr *memory.Manager, turns int) {
	t.Helper()
	ctx := context.Background()
	for i := range turns {
		user := fmt.Sprintf("Turn %d: refund order #A-7731, it cost $129.99.", i+1)
		if err := mgr.SaveTurn(ctx, "s", "dana", user, fmt.Sprintf("Answer %d: refund noted.", i+1)); err != nil {
			t.Fatal(err)
		}
		if err := mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRegisteredProviderBuilds: importing this package makes
// summarizer.provider=openai build a manager whose folds go to the
// configured OpenAI-compatible server in JSON mode.
func TestRegisteredProviderBuilds(t *testing.T) {
	t.Parallel()
	f := newFakeOpenAI(t, reply)
	rt, err := build(t, []string{"OPENAI_API_KEY=sk-test"}, keyBaseURL+"="+f.srv.URL+"/v1", keyModel+"=llama3.1")
	if err != nil {
		t.Fatal(err)
	}
	converse(t, rt.Manager, 4)
	h, err := rt.Manager.Load(context.Background(), "s", "dana")
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != "hierarchical" || h.Summary == nil || !strings.Contains(fmt.Sprint(h.Summary.Facts), "$129.99") {
		t.Fatalf("mode %s summary %+v", h.Mode, h.Summary)
	}
	reqs, paths, auth := f.snapshot()
	if len(reqs) == 0 || paths[0] != "/v1/chat/completions" || auth[0] != "Bearer sk-test" {
		t.Fatalf("paths %v auth %v", paths, auth)
	}
	rf, _ := reqs[0]["response_format"].(map[string]any)
	msgs, _ := reqs[0]["messages"].([]any)
	if reqs[0]["model"] != "llama3.1" || rf["type"] != "json_object" || len(msgs) != 2 {
		t.Fatalf("request %v", reqs[0])
	}
	user, _ := json.Marshal(msgs[1])
	if !strings.Contains(string(user), "[USER]: Turn 1: refund order #A-7731") {
		t.Fatalf("transcript not sent: %s", user)
	}
}

func TestRegisteredProviderJSONSchemaAndKeyEnv(t *testing.T) {
	t.Parallel()
	f := newFakeOpenAI(t, reply)
	rt, err := build(t, []string{"MY_KEY=sk-mine"}, keyBaseURL+"="+f.srv.URL+"/v1", keyAPIKeyEnv+"=MY_KEY", keySchema+"=true")
	if err != nil {
		t.Fatal(err)
	}
	converse(t, rt.Manager, 3)
	reqs, _, auth := f.snapshot()
	if len(reqs) == 0 {
		t.Fatal("no summarizer call")
	}
	rf, _ := reqs[0]["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["strict"] != true || auth[0] != "Bearer sk-mine" || reqs[0]["model"] != DefaultModel {
		t.Fatalf("request %v auth %v", reqs[0], auth)
	}
}

func TestRegisteredProviderAPIKeys(t *testing.T) {
	t.Parallel()
	// OpenAI's API without a key: the error names the variable and the key.
	_, err := build(t, []string{})
	var ce *autoconfig.Error
	if !errors.As(err, &ce) || ce.Key != keyAPIKeyEnv || !strings.Contains(err.Error(), DefaultAPIKeyEnv) {
		t.Fatalf("no key: %v", err)
	}
	// An explicit variable must hold a key, even for a local server.
	_, err = build(t, []string{"OPENAI_API_KEY=sk"}, keyAPIKeyEnv+"=VLLM_KEY", keyBaseURL+"=http://localhost:8000/v1")
	if err == nil || !strings.Contains(err.Error(), "VLLM_KEY") {
		t.Fatalf("explicit api-key-env: %v", err)
	}
	// A local OpenAI-compatible server needs no key; nothing is dialled.
	for _, base := range []string{"http://localhost:11434/v1", "http://127.0.0.1:8080/v1", "http://ollama:11434/v1", "http://10.0.0.7:8000/v1"} {
		if _, err := build(t, []string{}, keyBaseURL+"="+base); err != nil {
			t.Fatalf("local server %s: %v", base, err)
		}
	}
	if _, err := build(t, []string{}, keyBaseURL+"=https://api.together.example/v1"); err == nil {
		t.Fatal("remote OpenAI-compatible server without a key was accepted")
	}
}

func TestRegistered(t *testing.T) {
	t.Parallel()
	found := false
	for _, name := range summary.Providers() {
		found = found || name == autoconfig.ProviderOpenAI
	}
	if !found {
		t.Fatalf("openai not registered: %v", summary.Providers())
	}
}

func TestIsLocal(t *testing.T) {
	t.Parallel()
	for base, want := range map[string]bool{
		"http://localhost:11434/v1": true, "http://127.0.0.1:1": true, "http://[::1]:8000": true,
		"http://192.168.1.5:8000": true, "http://vllm:8000/v1": true, "http://gpu.internal/v1": true,
		"http://box.local:1234": true, "https://api.openai.com/v1": false, "": false, "http://8.8.8.8/v1": false,
	} {
		if got := isLocal(base); got != want {
			t.Errorf("isLocal(%q) = %v, want %v", base, got, want)
		}
	}
}
