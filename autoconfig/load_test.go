package autoconfig

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-go/strata/memory"
)

var update = flag.Bool("update", false, "rewrite ../config.example.yaml from WriteExampleYAML")

// writeFile writes a YAML file in the test's temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// public strips the bookkeeping fields so that configurations compare by
// their settings.
func public(c *Config) Config {
	out := *c
	out.set, out.unused, out.lookupEnv = nil, nil, nil
	return out
}

func mustLoad(t *testing.T, env []string, paths ...string) *Config {
	t.Helper()
	cfg, err := LoadWithEnv(env, paths...)
	if err != nil {
		t.Fatalf("LoadWithEnv: %v", err)
	}
	return cfg
}

// loadErr loads and returns the error, failing when there is none.
func loadErr(t *testing.T, opts LoadOptions) *Error {
	t.Helper()
	if opts.Environ == nil {
		opts.Environ = []string{}
	}
	_, err := LoadWith(opts)
	if err == nil {
		t.Fatalf("LoadWith(%+v): no error", opts)
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error spans several lines: %q", err)
	}
	return ce
}

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	cfg := mustLoad(t, nil)
	if got, want := public(cfg), public(Default()); !reflect.DeepEqual(got, want) {
		t.Fatalf("Load() = %+v, want the defaults %+v", got, want)
	}
	if len(cfg.SetKeys()) != 0 {
		t.Fatalf("SetKeys = %v, want none", cfg.SetKeys())
	}
	def := memory.DefaultConfig()
	if cfg.Memory.Enabled || cfg.Memory.TriggerMessageCount != def.TriggerMessageCount ||
		cfg.Memory.RecentMessageCount != def.RecentMessageCount || cfg.Memory.MaxConversationTurns != def.MaxConversationTurns {
		t.Fatalf("memory defaults differ from memory.DefaultConfig: %+v", cfg.Memory)
	}
	if cfg.Memory.ContextWindowTokens != 128_000 || cfg.Memory.OutputReserveTokens != 4096 ||
		cfg.Summary.MaxNarrativeTokens != 500 || cfg.Summarizer.Timeout != 60*time.Second ||
		cfg.EffectiveProvider() != ProviderExtractive || !cfg.Datasource.MigrateOnStart {
		t.Fatalf("reference defaults wrong: %+v", cfg)
	}
	if u, err := cfg.DatabaseURL(); err != nil || u != "" {
		t.Fatalf("DatabaseURL = %q, %v; want in-memory", u, err)
	}
}

func TestLoadPrecedence(t *testing.T) {
	t.Parallel()
	base := writeFile(t, "base.yaml", `
arc:
  reactor:
    memory:
      summary:
        enabled: true
        trigger-message-count: 30
        recent-message-count: 8
    llm:
      max-conversation-turns: 7
`)
	overlay := writeFile(t, "overlay.yaml", `
arc.reactor.memory.summary.recent-message-count: 6
arc.reactor.memory.summarizer.timeout: 45s
`)
	env := []string{
		"ARC_REACTOR_MEMORY_SUMMARY_TRIGGER_MESSAGE_COUNT=40",
		"UNRELATED=1",
	}
	cfg, err := LoadWith(LoadOptions{Files: []string{base, overlay}, Environ: env,
		Overrides: []string{"arc.reactor.llm.max-conversation-turns=9"}})
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Memory
	if !m.Enabled || m.TriggerMessageCount != 40 || m.RecentMessageCount != 6 || m.MaxConversationTurns != 9 || cfg.Summarizer.Timeout != 45*time.Second {
		t.Fatalf("precedence wrong: enabled %v trigger %d recent %d turns %d timeout %s",
			m.Enabled, m.TriggerMessageCount, m.RecentMessageCount, m.MaxConversationTurns, cfg.Summarizer.Timeout)
	}
	for key, want := range map[string]string{
		keyEnabled:           base,
		keyTrigger:           "environment variable ARC_REACTOR_MEMORY_SUMMARY_TRIGGER_MESSAGE_COUNT",
		keyRecent:            overlay,
		keyMaxTurns:          "override",
		keySummarizerTimeout: overlay,
		keyMaxOutput:         "default",
	} {
		if got := cfg.Source(key); got != want {
			t.Errorf("Source(%s) = %q, want %q", key, got, want)
		}
	}
	// Without the environment, the file wins over the defaults.
	cfg = mustLoad(t, []string{}, base)
	if cfg.Memory.TriggerMessageCount != 30 {
		t.Fatalf("file value lost: %d", cfg.Memory.TriggerMessageCount)
	}
}

// envValue returns a valid non-default value for a key, as an
// environment string.
func envValue(t *testing.T, k KeyInfo) string {
	t.Helper()
	switch k.Key {
	case keySummarizerProvider:
		return "openai"
	case keyLLMModel:
		return "gemini"
	case keyPolicy:
		return "chunked"
	case keyFoldMode:
		return "full"
	case keySummarizerBaseURL:
		return "http://localhost:11434/v1"
	case keySummarizerAPIKeyEnv:
		return "MY_KEY"
	case keyDatasourceURL:
		return "postgres://u:p@db.example:5432/app?sslmode=disable"
	case keySpringURL:
		return "jdbc:postgresql://db.example:5432/app"
	case keyFoldTokenFraction:
		return "0.5"
	case keyRecent:
		return "11" // trigger (20) >= recent still holds
	case keyServerListen:
		return "0.0.0.0:9090"
	case keyServerAPIKeys:
		return "alice=key-env:STRATA_KEY_ALICE"
	case keySharedPrefixes:
		return "slack-,teams-"
	case keySharedViewers:
		return "admin,auditor"
	case keyPinnedFactKeys:
		return "order_id,case_*"
	case keyTokenEncoding:
		return "o200k_base"
	}
	switch k.Type {
	case "bool":
		b, _ := strconv.ParseBool(k.Default)
		return strconv.FormatBool(!b)
	case "int":
		n, _ := strconv.Atoi(k.Default)
		return strconv.Itoa(n + 1)
	case "duration":
		d, _ := time.ParseDuration(k.Default)
		return (d + time.Second).String()
	case "string":
		return "value-" + strings.ToLower(k.Env)
	}
	t.Fatalf("no test value for %s (%s)", k.Key, k.Type)
	return ""
}

func TestEveryKeyFromEnvironment(t *testing.T) {
	t.Parallel()
	for _, k := range Keys() {
		for _, name := range []string{k.Env, springEnvName(k.Key)} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				v := envValue(t, k)
				cfg := mustLoad(t, []string{name + "=" + v})
				if got := cfg.Source(k.Key); got != "environment variable "+name {
					t.Fatalf("Source(%s) = %q", k.Key, got)
				}
				got, _ := cfg.Value(k.Key)
				if got == k.Default {
					t.Fatalf("%s=%s left %s at its default %s", name, v, k.Key, got)
				}
			})
		}
	}
}

func TestEnvKebabMapping(t *testing.T) {
	t.Parallel()
	cfg := mustLoad(t, []string{
		"ARC_REACTOR_MEMORY_SUMMARY_ENABLED=true",
		"ARC_REACTOR_MEMORY_SUMMARY_TRIGGER_MESSAGE_COUNT=25",
		"ARC_REACTOR_MEMORY_SUMMARY_RECENT_MESSAGE_COUNT=12",
		"ARC_REACTOR_MEMORY_SUMMARY_MAX_NARRATIVE_TOKENS=300",
		"ARC_REACTOR_LLM_MAX_CONTEXT_WINDOW_TOKENS=32000",
		"ARC_REACTOR_LLM_MAX_OUTPUT_TOKENS=2000",
		"ARC_REACTOR_MEMORY_STORE_FAILURE_COOLDOWN=3s",
		"ARC_REACTOR_MEMORY_POLICY_FOLD_TOKEN_FRACTION=0.25",
		"SPRING_DATASOURCE_URL=jdbc:postgresql://db:5432/app",
		// Spring's form of a key that is also set in our form: ours wins.
		"ARC_REACTOR_MEMORY_SUMMARY_MAXNARRATIVETOKENS=999",
		"ARC_REACTOR_LLM_DEFAULT_PROVIDER=gemini", // unknown under llm: ignored
		"ARC_REACTOR_MAX_TOOL_CALLS=3",            // arc-reactor's, not Strata's: ignored
	})
	m := cfg.Memory
	if !m.Enabled || m.TriggerMessageCount != 25 || m.RecentMessageCount != 12 || cfg.Summary.MaxNarrativeTokens != 300 ||
		m.ContextWindowTokens != 32000 || m.OutputReserveTokens != 2000 || m.FailureCooldown != 3*time.Second ||
		m.FoldTokenFraction != 0.25 || cfg.Spring.DatasourceURL != "jdbc:postgresql://db:5432/app" {
		t.Fatalf("environment not applied: %+v", cfg)
	}
	if u, _ := cfg.DatabaseURL(); u != "postgres://db:5432/app?sslmode=prefer" {
		t.Fatalf("DatabaseURL = %q", u)
	}
	// An empty numeric variable means unset, an empty string sets "".
	cfg = mustLoad(t, []string{"ARC_REACTOR_MEMORY_SUMMARY_TRIGGER_MESSAGE_COUNT=", "ARC_REACTOR_MEMORY_SUMMARIZER_MODEL="})
	if cfg.Memory.TriggerMessageCount != 20 || cfg.IsSet(keyTrigger) || !cfg.IsSet(keySummarizerModel) {
		t.Fatalf("empty variables: trigger %d set %v", cfg.Memory.TriggerMessageCount, cfg.SetKeys())
	}
}

func TestUnknownKeys(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, yaml, key, suggestion string
	}{
		{"typo", "arc:\n  reactor:\n    memory:\n      summary:\n        trigger-mesage-count: 5\n",
			"arc.reactor.memory.summary.trigger-mesage-count", keyTrigger},
		{"wrong section", "arc.reactor.memory.recent-message-count: 5\n",
			"arc.reactor.memory.recent-message-count", keyRecent},
		{"misplaced provider", "arc.reactor.memory.summary.provider: gemini\n",
			"arc.reactor.memory.summary.provider", keySummarizerProvider},
		{"unknown section", "arc.reactor.memory.cache:\n  size: 3\n", "arc.reactor.memory.cache.size", ""},
		{"scalar for a section", "arc.reactor.memory.summary: true\n", "arc.reactor.memory.summary", ""},
		{"list", "arc.reactor.memory.summary.enabled: true\narc.reactor.memory.tags: [a, b]\n", "arc.reactor.memory.tags", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := writeFile(t, "app.yaml", c.yaml)
			e := loadErr(t, LoadOptions{Files: []string{p}})
			if e.Key != c.key || e.Source != p || !strings.Contains(e.Error(), "unknown key") {
				t.Fatalf("error = %v (key %q), want unknown key %q from %s", e, e.Key, c.key, p)
			}
			if c.suggestion != "" && !strings.Contains(e.Error(), "did you mean "+c.suggestion+"?") {
				t.Fatalf("error %q does not suggest %s", e, c.suggestion)
			}
		})
	}
	t.Run("environment", func(t *testing.T) {
		t.Parallel()
		e := loadErr(t, LoadOptions{Environ: []string{"ARC_REACTOR_MEMORY_SUMARY_ENABLED=true"}})
		if e.Key != "ARC_REACTOR_MEMORY_SUMARY_ENABLED" || !strings.Contains(e.Error(), "did you mean ARC_REACTOR_MEMORY_SUMMARY_ENABLED?") {
			t.Fatalf("error = %v", e)
		}
	})
	t.Run("override", func(t *testing.T) {
		t.Parallel()
		e := loadErr(t, LoadOptions{Overrides: []string{"spring.datasource.urll=x"}})
		if e.Key != "spring.datasource.urll" || !strings.Contains(e.Error(), "did you mean "+keySpringURL) {
			t.Fatalf("error = %v", e)
		}
	})
}

// A whole Spring Boot application.yaml: everything Strata does not read is
// ignored, the memory section works unchanged, placeholders resolve.
const springApplicationYAML = `
server:
  port: 8080
  servlet:
    context-path: /api
spring:
  application:
    name: support-agent
  profiles:
    active: prod
  datasource:
    url: jdbc:postgresql://db.internal:5432/arc?currentSchema=agent&ssl=true
    username: ${DB_USER:arc}
    password: ${DB_PASSWORD}
    driver-class-name: org.postgresql.Driver
    hikari:
      maximum-pool-size: 10
  jpa:
    hibernate:
      ddl-auto: validate
  flyway:
    enabled: true
management:
  endpoints:
    web:
      exposure:
        include: [health, prometheus]
logging:
  level:
    com.arc.reactor: DEBUG
arc:
  reactor:
    llm:
      default-provider: gemini
      temperature: 0.3
      max-conversation-turns: 12
      max-context-window-tokens: 1000000
      max-output-tokens: 8192
    max-tool-calls: 10
    guard:
      enabled: true
    memory:
      summary:
        enabled: true
        trigger-message-count: 24
        recent-message-count: 12
        llm-model: gemini
        max-narrative-tokens: 400
`

func TestWholeSpringApplicationYAML(t *testing.T) {
	t.Parallel()
	p := writeFile(t, "application.yaml", springApplicationYAML)
	cfg := mustLoad(t, []string{"DB_PASSWORD=s3cret"}, p)
	m := cfg.Memory
	if !m.Enabled || m.TriggerMessageCount != 24 || m.RecentMessageCount != 12 || m.MaxConversationTurns != 12 ||
		m.ContextWindowTokens != 1_000_000 || m.OutputReserveTokens != 8192 || cfg.Summary.MaxNarrativeTokens != 400 {
		t.Fatalf("memory section not applied: %+v", m)
	}
	if cfg.EffectiveProvider() != ProviderGemini || cfg.Summarizer.Provider != ProviderGemini || cfg.Summarizer.Model != "" {
		t.Fatalf("llm-model alias: provider %q (%q), model %q", cfg.EffectiveProvider(), cfg.Summarizer.Provider, cfg.Summarizer.Model)
	}
	u, err := cfg.DatabaseURL()
	if err != nil {
		t.Fatal(err)
	}
	if want := "postgres://arc:s3cret@db.internal:5432/arc?search_path=agent&sslmode=require"; u != want {
		t.Fatalf("DatabaseURL = %q, want %q", u, want)
	}
	if v, _ := cfg.Value(keySpringPassword); v != `"*****"` {
		t.Fatalf("password not masked: %s", v)
	}
	// A missing placeholder without a default is an error naming the key.
	e := loadErr(t, LoadOptions{Files: []string{p}})
	if e.Key != keySpringPassword || !strings.Contains(e.Error(), "${DB_PASSWORD}") || strings.Contains(e.Error(), "s3cret") {
		t.Fatalf("error = %v", e)
	}
}

func TestRelaxedYAMLKeys(t *testing.T) {
	t.Parallel()
	p := writeFile(t, "camel.yaml", `
arc:
  reactor:
    memory:
      summary:
        enabled: true
        triggerMessageCount: 22
        recent_message_count: 9
      summarizer:
        baseUrl: http://localhost:8000/v1
        Provider: OpenAI
`)
	cfg := mustLoad(t, nil, p)
	if cfg.Memory.TriggerMessageCount != 22 || cfg.Memory.RecentMessageCount != 9 ||
		cfg.Summarizer.BaseURL != "http://localhost:8000/v1" || cfg.EffectiveProvider() != ProviderOpenAI {
		t.Fatalf("relaxed keys not applied: %+v %+v", cfg.Memory, cfg.Summarizer)
	}
	dup := writeFile(t, "dup.yaml", "arc.reactor.memory.summary.triggerMessageCount: 22\narc.reactor.memory.summary.trigger-message-count: 23\n")
	e := loadErr(t, LoadOptions{Files: []string{dup}})
	if e.Key != keyTrigger || !strings.Contains(e.Error(), "set twice") {
		t.Fatalf("error = %v", e)
	}
}

func TestFileErrors(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := LoadWithEnv(nil, missing)
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing file: %v", err)
	}
	bad := writeFile(t, "bad.yaml", "arc:\n  reactor: [\n")
	_, err = LoadWithEnv(nil, bad)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "malformed YAML") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("malformed file: %v", err)
	}
	notMap := writeFile(t, "list.yaml", "- a\n- b\n")
	if _, err = LoadWithEnv(nil, notMap); err == nil || !strings.Contains(err.Error(), notMap) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("list document: %v", err)
	}
	empty := writeFile(t, "empty.yaml", "")
	mustLoad(t, nil, empty)
	nulls := writeFile(t, "nulls.yaml", "arc:\n  reactor:\n    memory:\n      summary:\n        llm-model: ~\n        enabled:\n")
	if cfg := mustLoad(t, nil, nulls); cfg.Memory.Enabled || cfg.Summary.LLMModel != DefaultLLMModel {
		t.Fatalf("nulls must keep defaults: %+v", cfg)
	}
}

func TestTypeErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ env, key, want string }{
		{"ARC_REACTOR_MEMORY_SUMMARY_ENABLED=maybe", keyEnabled, "want true or false"},
		{"ARC_REACTOR_MEMORY_SUMMARY_TRIGGER_MESSAGE_COUNT=lots", keyTrigger, "want an integer"},
		{"ARC_REACTOR_MEMORY_SUMMARIZER_TIMEOUT=soon", keySummarizerTimeout, "want a duration"},
		{"ARC_REACTOR_MEMORY_POLICY_FOLD_TOKEN_FRACTION=half", keyFoldTokenFraction, "want a number"},
	}
	for _, c := range cases {
		e := loadErr(t, LoadOptions{Environ: []string{c.env}})
		if e.Key != c.key || !strings.Contains(e.Error(), c.want) || !strings.Contains(e.Error(), "environment variable") {
			t.Errorf("%s: error = %v", c.env, e)
		}
	}
	p := writeFile(t, "types.yaml", "arc.reactor.memory.summary.recent-message-count: [1]\n")
	if e := loadErr(t, LoadOptions{Files: []string{p}}); e.Key != keyRecent || !strings.Contains(e.Error(), "got a list") {
		t.Errorf("list value: %v", e)
	}
	// Durations: Go syntax, or a bare number of milliseconds as in Spring.
	cfg := mustLoad(t, []string{"ARC_REACTOR_MEMORY_SUMMARIZER_TIMEOUT=1500"})
	if cfg.Summarizer.Timeout != 1500*time.Millisecond {
		t.Fatalf("timeout = %s", cfg.Summarizer.Timeout)
	}
}

func TestValidationNamesKeys(t *testing.T) {
	t.Parallel()
	cases := []struct {
		set  []string
		key  string
		want string
	}{
		{[]string{keyRecent + "=-1"}, keyRecent, "= -1 (from override): must be >= 0"},
		{[]string{keyTrigger + "=-1"}, keyTrigger, "must be >= 0"},
		{[]string{keyMaxSessions + "=-1"}, keyMaxSessions, "must be >= 0"},
		{[]string{keyPinnedFactKeys + "=order_id,case_["}, keyPinnedFactKeys, "path.Match pattern"},
		{[]string{keyMaxNarrative + "=0"}, keyMaxNarrative, "must be >= 1"},
		{[]string{keyMaxTurns + "=-1"}, keyMaxTurns, "must be >= 0"},
		{[]string{keyWindow + "=4096"}, keyMaxOutput, "= 4096: must be >= 0 and < max-context-window-tokens (4096)"},
		{[]string{keyWindow + "=0"}, keyWindow, "must be >= 1"},
		{[]string{keyMaxOutput + "=-1"}, keyMaxOutput, "must be >= 0"},
		{[]string{keyMaxMessageBytes + "=-1"}, keyMaxMessageBytes, "must be >= 0"},
		{[]string{keyMaxSummaries + "=-1"}, keyMaxSummaries, "must be >= 0"},
		{[]string{keyFailureCooldown + "=-1s"}, keyFailureCooldown, "must be >= 0"},
		{[]string{keyMaxFailureCooldown + "=1s"}, keyMaxFailureCooldown, "must be >= failure-cooldown (2s)"},
		{[]string{keyMaxFacts + "=-1"}, keyMaxFacts, "must be >= 1"},
		{[]string{keyMaxFactValueLen + "=-1"}, keyMaxFactValueLen, "must be >= 1"},
		{[]string{keyLoadGrace + "=-1s"}, keyLoadGrace, "must be >= 0"},
		{[]string{keyFoldWait + "=-1s"}, keyFoldWait, "must be >= 0"},
		{[]string{keyCloseTimeout + "=-1s"}, keyCloseTimeout, "must be >= 0"},
		{[]string{keyPolicy + "=eager"}, keyPolicy, `"parity" or "chunked"`},
		{[]string{keyBuffer + "=-1"}, keyBuffer, "must be >= 0"},
		{[]string{keyFoldTokenThreshold + "=-1"}, keyFoldTokenThreshold, "must be >= 0"},
		{[]string{keyFoldTokenFraction + "=1.5"}, keyFoldTokenFraction, "between 0 and 1"},
		{[]string{keySafetyTurns + "=-1"}, keySafetyTurns, "must be >= 0"},
		{[]string{keyFoldMode + "=partial"}, keyFoldMode, `"incremental" or "full"`},
		{[]string{keyMaxFoldInput + "=-1"}, keyMaxFoldInput, "must be >= 0"},
		{[]string{keyPromptBudget + "=-1"}, keyPromptBudget, "must be >= 0"},
		{[]string{keyMinTail + "=-1"}, keyMinTail, "must be >= 0"},
		{[]string{keySummarizerProvider + "=anthropic"}, keySummarizerProvider, "must be one of extractive, gemini, openai"},
		{[]string{keySummarizerTimeout + "=0s"}, keySummarizerTimeout, "must be > 0"},
		{[]string{keySummarizerBaseURL + "=localhost:11434"}, keySummarizerBaseURL, "http:// or https://"},
		{[]string{keySummarizerBaseURL + "=http://"}, keySummarizerBaseURL, "with a host"},
		{[]string{keySummarizerAPIKeyEnv + "=sk-live-abcdef"}, keySummarizerAPIKeyEnv, "never the key itself"},
		{[]string{keyEnabled + "=true", keyLLMModel + "=claude-3-haiku"}, keyLLMModel, "or one of their models"},
		{[]string{keyDatasourceURL + "=mysql://u:pw@h/db"}, keyDatasourceURL, "not PostgreSQL"},
		{[]string{keySpringURL + "=jdbc:h2:mem:test"}, keySpringURL, "PostgreSQL only"},
		{[]string{keySpringURL + "=jdbc:postgresql://a:5432,b:5432/db"}, keySpringURL, "several hosts"},
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			t.Parallel()
			e := loadErr(t, LoadOptions{Overrides: c.set})
			if e.Key != c.key || !strings.Contains(e.Error(), c.want) {
				t.Fatalf("error = %v\nwant key %s and %q", e, c.key, c.want)
			}
			if strings.Contains(e.Error(), "sk-live") || strings.Contains(e.Error(), ":pw@") {
				t.Fatalf("error leaks a secret: %v", e)
			}
		})
	}
	// llm-model names a model, but summaries are off: arc-reactor would
	// not create the bean either, so the configuration loads.
	if _, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{keyLLMModel + "=anthropic"}}); err != nil {
		t.Fatalf("llm-model with summaries off: %v", err)
	}
	// An explicit provider wins over llm-model.
	cfg, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{keyEnabled + "=true", keyLLMModel + "=gemini", keySummarizerProvider + "=extractive"}})
	if err != nil || cfg.EffectiveProvider() != ProviderExtractive {
		t.Fatalf("explicit provider: %v %v", cfg, err)
	}
}

func TestValidateTranslatesMemoryErrors(t *testing.T) {
	t.Parallel()
	cfg := Default()
	err := cfg.translateMemoryError(memory.Config{}.Validate())
	var e *Error
	if !errors.As(err, &e) || e.Key != keyMaxTurns || !strings.Contains(err.Error(), "must be >= 1") {
		t.Fatalf("translated = %v", err)
	}
	// Every field memory.Config.Validate can name has a key; the field
	// names in the allowed range are written as keys too.
	cfg.Memory.TriggerMessageCount = -1
	err = cfg.Validate()
	if !errors.As(err, &e) || e.Key != keyTrigger || e.Msg != "must be >= 0 (0 = every non-empty session)" {
		t.Fatalf("Validate = %v", err)
	}
	// Errors that are not field errors pass unchanged.
	other := errors.New("other")
	if got := cfg.translateMemoryError(other); got != other {
		t.Fatalf("translated %v", got)
	}
}

func TestJDBCTranslation(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, user, pass, want string }{
		{"jdbc:postgresql://db:5432/app", "", "", "postgres://db:5432/app?sslmode=prefer"},
		{"jdbc:postgresql://db/app?user=u&password=p%40ss", "", "", "postgres://u:p%40ss@db/app?sslmode=prefer"},
		{"jdbc:postgresql://db/app", "arc", "x y", "postgres://arc:x%20y@db/app?sslmode=prefer"},
		{"jdbc:postgresql:app", "", "", "postgres://localhost/app?sslmode=prefer"},
		{"jdbc:postgresql://db/app?sslmode=verify-full&sslrootcert=/ca.pem", "", "", "postgres://db/app?sslmode=verify-full&sslrootcert=%2Fca.pem"},
		// JDBC driver properties are dropped or translated, never sent to
		// the server as settings.
		{"jdbc:postgresql://db/app?reWriteBatchedInserts=true&prepareThreshold=0&socketTimeout=30&connectTimeout=5&targetServerType=primary", "", "", "postgres://db/app?connect_timeout=5&sslmode=prefer&target_session_attrs=primary"},
		{"jdbc:postgresql://db/app?ssl=false&ApplicationName=agent", "", "", "postgres://db/app?application_name=agent&sslmode=disable"},
		{"postgres://u:p@db/app?sslmode=disable", "ignored", "", "postgres://u:p@db/app?sslmode=disable"},
		{"host=db dbname=app", "", "", "host=db dbname=app"},
	}
	for _, c := range cases {
		got, err := jdbcToPostgres(c.in, c.user, c.pass)
		if err != nil || got != c.want {
			t.Errorf("jdbcToPostgres(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	// Ours wins over Spring's.
	cfg := mustLoad(t, []string{"SPRING_DATASOURCE_URL=jdbc:postgresql://spring/db", "ARC_REACTOR_MEMORY_DATASOURCE_URL=postgres://ours/db"})
	if u, _ := cfg.DatabaseURL(); u != "postgres://ours/db" {
		t.Fatalf("DatabaseURL = %q", u)
	}
}

func TestConfigExampleYAML(t *testing.T) {
	t.Parallel()
	const path = "../config.example.yaml"
	var buf bytes.Buffer
	if err := WriteExampleYAML(&buf); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := mustLoad(t, nil, path)
	if got, want := public(cfg), public(Default()); !reflect.DeepEqual(got, want) {
		t.Fatalf("config.example.yaml does not load to the defaults:\n got %+v\nwant %+v\n(regenerate: go test ./autoconfig -run TestConfigExampleYAML -update)", got, want)
	}
	for _, k := range Keys() {
		if !cfg.IsSet(k.Key) {
			t.Errorf("config.example.yaml does not list %s", k.Key)
		}
	}
	onDisk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, buf.Bytes()) {
		t.Fatalf("config.example.yaml is out of date; regenerate: go test ./autoconfig -run TestConfigExampleYAML -update")
	}
}

func TestKeysAreConsistent(t *testing.T) {
	t.Parallel()
	seenEnv := map[string]string{}
	for _, k := range Keys() {
		if k.Doc == "" || k.Type == "" {
			t.Errorf("%s: missing doc or type", k.Key)
		}
		if k.Key != strings.ToLower(k.Key) || strings.Contains(k.Key, "_") {
			t.Errorf("%s: keys are lower kebab-case", k.Key)
		}
		if prev, ok := seenEnv[k.Env]; ok {
			t.Errorf("%s and %s share %s", prev, k.Key, k.Env)
		}
		seenEnv[k.Env] = k.Key
		if c := canonical(k.Key); !inArcReactor(c) && !strings.HasPrefix(c, "spring.datasource.") {
			t.Errorf("%s is outside the subtrees Load reads", k.Key)
		}
	}
	// Every memory.Config field is reachable from a key.
	mt := reflect.TypeOf(memory.Config{})
	for i := 0; i < mt.NumField(); i++ {
		if _, ok := fieldKeys[mt.Field(i).Name]; !ok && mt.Field(i).IsExported() {
			t.Errorf("memory.Config.%s has no configuration key", mt.Field(i).Name)
		}
	}
}
