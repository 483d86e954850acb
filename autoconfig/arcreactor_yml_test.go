package autoconfig

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
)

// arcReactorYML is arc-reactor's own application.yml (see its header).
const arcReactorYML = "testdata/arc-reactor/application.yml"

// arcReactorEnv is the environment arc-reactor's deployment gives it: the
// datasource as SPRING_DATASOURCE_* variables, no API key.
var arcReactorEnv = []string{
	"SPRING_DATASOURCE_URL=jdbc:postgresql://db.internal:5432/arc",
	"SPRING_DATASOURCE_USERNAME=arc",
	"SPRING_DATASOURCE_PASSWORD=s3cret",
}

// arc-reactor's application.yml loads unchanged: the keys Strata acts on
// are applied, every other key is accepted and reported as unused, none
// is dropped without a word, and llm-model selects the Gemini summarizer
// with that model.
func TestArcReactorApplicationYML(t *testing.T) {
	t.Parallel()
	cfg, err := LoadWith(LoadOptions{Environ: arcReactorEnv, Files: []string{arcReactorYML}})
	if err != nil {
		t.Fatalf("arc-reactor's application.yml refused: %v", err)
	}
	m := cfg.Memory
	if !m.Enabled || m.TriggerMessageCount != 20 || m.RecentMessageCount != 10 || m.OutputReserveTokens != 4096 ||
		cfg.Summary.MaxNarrativeTokens != 500 {
		t.Fatalf("memory settings not applied: %+v", m)
	}
	if cfg.EffectiveProvider() != ProviderGemini || cfg.EffectiveModel() != "gemini-2.0-flash" {
		t.Fatalf("llm-model gemini-2.0-flash: provider %q model %q, want gemini with that model", cfg.EffectiveProvider(), cfg.EffectiveModel())
	}
	if u, err := cfg.DatabaseURL(); err != nil || u != "postgres://arc:s3cret@db.internal:5432/arc?sslmode=prefer" {
		t.Fatalf("DatabaseURL = %q, %v", u, err)
	}

	// Every key of the file is either applied or listed as unused.
	k := koanf.New(".")
	if err := k.Load(file.Provider(arcReactorYML), yaml.Parser()); err != nil {
		t.Fatal(err)
	}
	unused := cfg.Unused()
	for _, key := range k.Keys() {
		if !cfg.IsSet(key) && !slices.Contains(unused, key) {
			t.Errorf("%s: neither applied nor listed as unused", key)
		}
		if cfg.IsSet(key) && slices.Contains(unused, key) {
			t.Errorf("%s: applied and listed as unused", key)
		}
	}
	for _, want := range []string{"arc.reactor.memory.user.inject-into-prompt", "arc.reactor.max-tool-calls",
		"arc.reactor.llm.default-model", "arc.reactor.slack.bot-token", "arc.reactor.output-guard.custom-patterns",
		"spring.ai.google.genai.api-key", "server.port", "spring.datasource.hikari.maximum-pool-size"} {
		if !slices.Contains(unused, want) {
			t.Errorf("Unused lacks %s", want)
		}
	}
	note := cfg.UnusedNote()
	for _, want := range []string{"not used by Strata", "arc.reactor.memory.user.*", "arc.reactor.llm.default-model", "spring.ai.*", "server.*"} {
		if !strings.Contains(note, want) {
			t.Errorf("UnusedNote lacks %q: %s", want, note)
		}
	}
	if strings.Contains(note, "\n") || strings.Contains(note, "arc.reactor.memory.summary") || strings.Contains(note, "arc.reactor.llm.*") {
		t.Errorf("UnusedNote is not one line of the unused sections only: %s", note)
	}

	// Building logs the note once, at info level. (The Gemini summarizer
	// is not linked into this test: the build stops there.)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	noDB := cfg.Clone()
	noDB.Spring.DatasourceURL = ""
	if _, err := BuildRuntime(context.Background(), noDB, WithLogger(logger)); err == nil || !strings.Contains(err.Error(), "gemini") {
		t.Fatalf("build: %v, want the gemini summarizer's error", err)
	}
	if n := strings.Count(logs.String(), "not used by Strata"); n != 1 || !strings.Contains(logs.String(), "level=INFO") {
		t.Fatalf("build logged the unused keys %d times:\n%s", n, logs.String())
	}
}

// --set accepts every key YAML accepts: Strata's, arc-reactor's (each key
// of its catalog) and other tools'; a key in neither fails with its name
// and a suggestion, from --set, YAML or the environment.
func TestArcReactorKeysEverywhere(t *testing.T) {
	t.Parallel()
	for _, key := range arcKeyNames {
		if keyCanon[canonical(key)] != nil {
			continue
		}
		if _, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{key + "=x"}}); err != nil {
			t.Errorf("--set %s=x: %v", key, err)
		}
		p := writeFile(t, "one.yaml", key+": x\n")
		if _, err := LoadWith(LoadOptions{Environ: []string{}, Files: []string{p}}); err != nil {
			t.Errorf("YAML %s: %v", key, err)
		}
	}
	cfg, err := LoadWith(LoadOptions{Environ: []string{"ARC_REACTOR_MEMORY_USER_INJECT_INTO_PROMPT=true"},
		Overrides: []string{"arc.reactor.llm.default-model=x", "server.port=9090", "arc.reactor.guard.tenant-rate-limits.acme=5",
			"ARC_REACTOR_LLM_TEMPERATURE=0.2"}})
	if err != nil {
		t.Fatalf("arc-reactor's keys in --set and the environment: %v", err)
	}
	if got := cfg.Unused(); !slices.Equal(got, []string{"ARC_REACTOR_LLM_TEMPERATURE", "arc.reactor.guard.tenant-rate-limits.acme",
		"arc.reactor.llm.default-model", "server.port"}) {
		t.Fatalf("Unused = %v", got)
	}

	cases := []struct{ key, suggestion string }{
		{"arc.reactor.llm.default-providr", "arc.reactor.llm.default-provider"},
		{"arc.reactor.guard.rate-limit-per-minut", "arc.reactor.guard.rate-limit-per-minute"},
		{"arc.reactor.memory.user.inject-into-promt", "arc.reactor.memory.user.inject-into-prompt"},
		{"arc.reactor.memory.summary.llm-modle", keyLLMModel},
		{"arc.reactor.agent.max-tool-calls", "arc.reactor.max-tool-calls"},
	}
	for _, c := range cases {
		e := loadErr(t, LoadOptions{Environ: []string{}, Overrides: []string{c.key + "=1"}})
		if e.Key != c.key || !strings.Contains(e.Msg, "unknown key (did you mean "+c.suggestion+"?)") {
			t.Errorf("--set %s: %v; want unknown key, did you mean %s", c.key, e, c.suggestion)
		}
		p := writeFile(t, "typo.yaml", c.key+": 1\n")
		e = loadErr(t, LoadOptions{Environ: []string{}, Files: []string{p}})
		if e.Key != c.key || !strings.Contains(e.Msg, "did you mean "+c.suggestion+"?") {
			t.Errorf("YAML %s: %v; want unknown key, did you mean %s", c.key, e, c.suggestion)
		}
	}
	for _, key := range []string{"ARC_REACTOR_LLM_DEFAULT_PROVIDR", "enabled"} {
		e := loadErr(t, LoadOptions{Environ: []string{}, Overrides: []string{key + "=x"}})
		if e.Key != key || !strings.Contains(e.Msg, "unknown key") {
			t.Errorf("--set %s: %v", key, e)
		}
	}
}

// llm-model is arc-reactor's summarization model: a model name selects
// its provider with that model, a provider name that provider; its
// default, gemini-2.0-flash, is the Gemini model and selects nothing.
func TestLLMModel(t *testing.T) {
	t.Parallel()
	cases := []struct {
		set             []string
		provider, model string
	}{
		{nil, ProviderExtractive, ""},
		{[]string{keySummarizerProvider + "=gemini"}, ProviderGemini, DefaultLLMModel},
		{[]string{keyLLMModel + "=gemini-2.5-pro"}, ProviderGemini, "gemini-2.5-pro"},
		{[]string{keyLLMModel + "=gpt-4o-mini"}, ProviderOpenAI, "gpt-4o-mini"},
		{[]string{keyLLMModel + "=gemini"}, ProviderGemini, ""},
		{[]string{keyLLMModel + "=gemini-2.5-pro", keySummarizerModel + "=gemini-x"}, ProviderGemini, "gemini-x"},
		{[]string{keyLLMModel + "=gemini-2.5-pro", keySummarizerProvider + "=openai"}, ProviderOpenAI, ""},
		{[]string{keySummarizerProvider + "=openai"}, ProviderOpenAI, ""},
	}
	for _, c := range cases {
		cfg, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: append([]string{keyEnabled + "=true"}, c.set...)})
		if err != nil {
			t.Fatalf("%v: %v", c.set, err)
		}
		if cfg.EffectiveProvider() != c.provider || cfg.EffectiveModel() != c.model {
			t.Errorf("%v: provider %q model %q, want %q %q", c.set, cfg.EffectiveProvider(), cfg.EffectiveModel(), c.provider, c.model)
		}
	}
	if v, _ := Default().Value(keyLLMModel); v != `"gemini-2.0-flash"` {
		t.Errorf("llm-model default = %s, want arc-reactor's gemini-2.0-flash", v)
	}
}

// The copy of arc-reactor's file carries its license.
func TestArcReactorYMLLicense(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(arcReactorYML)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "Apache License 2.0") {
		t.Fatal("the copy of arc-reactor's application.yml does not name its license")
	}
	if _, err := os.Stat("testdata/arc-reactor/LICENSE-arc-reactor.txt"); err != nil {
		t.Fatal(err)
	}
}

// FuzzOverride: any --set key=value either loads or fails with one
// *Error, never panics; a key it accepts YAML accepts too.
func FuzzOverride(f *testing.F) {
	for _, seed := range []string{
		"arc.reactor.llm.default-provider=x", "arc.reactor.memory.summary.enabled=true", "server.port=1",
		"ARC_REACTOR_LLM_TEMPERATURE=0.2", "arc.reactor.guard.tenant-rate-limits.a.b=1", "arc.reacter.memory.x=1",
		"=", "a", "arc..reactor=1", "arc.reactor=1", "spring.datasource.urll=x",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, o string) {
		_, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{o}})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%q: %v is not an *Error", o, err)
			}
			return
		}
		key, _, _ := strings.Cut(o, "=")
		key = strings.TrimSpace(key)
		if !strings.Contains(key, ".") || strings.ContainsAny(key, "\n\r:#{}[]&*!|>'\"%@`,?") || strings.HasPrefix(key, "-") {
			return // an environment variable's name, or not writable as a plain YAML key
		}
		if _, k := classifyKey(key, "x"); k == kindUnknown {
			t.Fatalf("--set accepted %q, which YAML refuses", key)
		}
	})
}
