package autoconfig

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/internal/testutil"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

var quiet = slog.New(slog.DiscardHandler)

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
	if rt.DB != nil || rt.Manager.Config().Enabled {
		t.Fatalf("summaries off built %+v", rt)
	}
	conversation(t, rt.Manager, "s", 10)
	if s, err := rt.Manager.Summary(context.Background(), "s", "dana"); err != nil || s != nil {
		t.Fatalf("summary with summaries off: %+v, %v", s, err)
	}
	h, err := rt.Manager.Load(context.Background(), "s", "dana")
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != "take-last" || len(h.Messages) != 4 || h.Total != 20 {
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
	if h.Mode != "hierarchical" || h.Summary == nil || !hasFact(h.Summary, "#A-7731") {
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

func TestBuildWithSummarizerOption(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	svc := summary.ServiceFunc(func(ctx context.Context, req summary.Request) (summary.Result, error) {
		calls.Add(1)
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
	if calls.Load() == 0 {
		t.Fatal("custom summarizer not used")
	}
}

func TestBuildRejectsInvalidConfig(t *testing.T) {
	t.Parallel()
	cfg := Default()
	cfg.Memory.RecentMessageCount = -1
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
	s, err := rt.Manager.Summary(ctx, "pg-session", "dana")
	if err != nil || s == nil || !hasFact(s, "#A-7731") {
		t.Fatalf("stored summary %+v err %v", s, err)
	}
	if _, err := rt.Manager.Summary(ctx, "pg-session", "mallory"); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("another user's session: %v", err)
	}
	d := rt.DB
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.PingContext(ctx); err == nil {
		t.Fatal("Close left the pool open")
	}
}

// TestBuildPreparedStatements: datasource.prepared-statements reaches the
// message store (its load and append are prepared statements on the
// pool's connection); without it nothing is prepared.
func TestBuildPreparedStatements(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{false, true} {
		schema := dbtest.NewEmptySchema(t)
		rt := buildRuntime(t, []string{}, smallWindow(keyDatasourceURL+"="+schema.URL,
			fmt.Sprintf("%s=%v", keyPreparedStatements, on)))
		rt.DB.SetMaxOpenConns(1) // one connection: the one asked below
		ctx := context.Background()
		conversation(t, rt.Manager, "prep", 1)
		if _, err := rt.Manager.Load(ctx, "prep", "dana"); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := rt.DB.GetContext(ctx, &n, `SELECT count(*) FROM pg_prepared_statements
			WHERE NOT from_sql AND (statement LIKE '%strata_tail(%' OR statement LIKE '%strata_append(%')`); err != nil {
			t.Fatal(err)
		}
		if (n == 2) != on || (!on && n != 0) {
			t.Errorf("prepared-statements=%v: %d of the load and append statements prepared", on, n)
		}
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBuildSpringDatasourceWithoutMigration(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewEmptySchema(t)
	u, err := url.Parse(schema.URL)
	if err != nil {
		t.Fatal(err)
	}
	// arc-reactor's form: a JDBC URL plus username and password.
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

// TestBuildUnregisteredProvider: this test binary imports neither provider
// package, so configuring one is an error at Build that names the import
// to add; Load accepts the name, and summaries off never need it.
func TestBuildUnregisteredProvider(t *testing.T) {
	t.Parallel()
	for provider, imp := range map[string]string{
		ProviderGemini: "github.com/strata-go/strata/providers/gemini",
		ProviderOpenAI: "github.com/strata-go/strata/providers/openai",
	} {
		cfg, err := LoadWith(LoadOptions{Environ: []string{"GOOGLE_API_KEY=k", "OPENAI_API_KEY=k"},
			Overrides: smallWindow(keySummarizerProvider + "=" + provider)})
		if err != nil {
			t.Fatalf("%s: Load: %v", provider, err)
		}
		_, err = Build(context.Background(), cfg)
		var e *Error
		if !errors.As(err, &e) || e.Key != keySummarizerProvider || !strings.Contains(err.Error(), `import _ "`+imp+`"`) {
			t.Fatalf("%s: err = %v", provider, err)
		}
		cfg.Memory.Enabled = false
		mgr, err := Build(context.Background(), cfg)
		if err != nil {
			t.Fatalf("%s with summaries off: %v", provider, err)
		}
		_ = mgr.Close()
	}
	// A name no package provides is refused at Load, with the choices.
	_, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{keySummarizerProvider + "=cohere"}})
	if err == nil || !strings.Contains(err.Error(), "must be one of extractive, gemini, openai") {
		t.Fatalf("unknown provider: %v", err)
	}
}

// registrations numbers the summarizer providers the tests register.
var registrations atomic.Int64

// TestRegisterSummarizer: a factory registered with summary.Register
// receives the summarizer settings, reads its key from the configuration's
// environment, and its summarizer is the manager's and is closed with the runtime.
func TestRegisterSummarizer(t *testing.T) {
	t.Parallel()
	// summary.Register's registry is the process's: a name of its own for
	// each run keeps go test -count=N from registering twice.
	name := fmt.Sprintf("test-recorder-%d", registrations.Add(1))
	var got summary.Settings
	closed := false
	summary.Register("Test-"+strings.TrimPrefix(name, "test-"), func(_ context.Context, s summary.Settings) (summary.Service, error) {
		got = s
		key, err := s.APIKey("TEST_RECORDER_KEY")
		if err != nil {
			return nil, err
		}
		return &closingService{key: key, closed: &closed}, nil
	})
	if !slicesContains(summary.Providers(), name) {
		t.Fatalf("summary.Providers() = %v", summary.Providers())
	}
	cfg, err := LoadWith(LoadOptions{Environ: []string{"TEST_RECORDER_KEY=secret"}, Overrides: smallWindow(
		keySummarizerProvider+"="+name, keySummarizerModel+"=m1", keySummarizerBaseURL+"=http://127.0.0.1:9/v1",
		keySummarizerTimeout+"=7s", keyMaxNarrative+"=99")})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := BuildRuntime(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got.Provider != name || got.Model != "m1" || got.BaseURL != "http://127.0.0.1:9/v1" || got.Timeout != 7*time.Second ||
		got.MaxNarrativeTokens != 99 || !got.JSONMode || got.Logger == nil {
		t.Fatalf("settings %+v", got)
	}
	conversation(t, rt.Manager, "s", 3)
	if s, err := rt.Manager.Summary(context.Background(), "s", "dana"); err != nil || s == nil || s.Narrative != "key secret" {
		t.Fatalf("summary %+v, %v", s, err)
	}
	if err := rt.Close(); err != nil || !closed {
		t.Fatalf("close: %v, summarizer closed %v", err, closed)
	}

	// Without the key: an error on api-key-env naming the variable.
	cfg, err = LoadWith(LoadOptions{Environ: []string{}, Overrides: smallWindow(keySummarizerProvider + "=" + name)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Build(context.Background(), cfg)
	var e *Error
	if !errors.As(err, &e) || e.Key != keySummarizerAPIKeyEnv || !strings.Contains(err.Error(), "TEST_RECORDER_KEY") {
		t.Fatalf("no key: %v", err)
	}

	for what, register := range map[string]func(){
		"twice": func() {
			summary.Register(name, func(context.Context, summary.Settings) (summary.Service, error) { return nil, nil })
		},
		"blank name": func() {
			summary.Register(" ", func(context.Context, summary.Settings) (summary.Service, error) { return nil, nil })
		},
		"nil factory": func() { summary.Register("test-nil", nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("summary.Register %s did not panic", what)
				}
			}()
			register()
		}()
	}
}

type closingService struct {
	key    string
	closed *bool
}

func (c *closingService) Summarize(context.Context, summary.Request) (summary.Result, error) {
	return summary.Result{Narrative: "key " + c.key}, nil
}

func (c *closingService) Close() error { *c.closed = true; return nil }

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestBuildRefusesHalfConfigured: summaries on need a summarizer, whatever
// supplies it.
func TestBuildRefusesHalfConfigured(t *testing.T) {
	t.Parallel()
	cfg, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: smallWindow()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := BuildRuntime(context.Background(), cfg, WithSummarizer(nil)); err == nil || !strings.Contains(err.Error(), keyEnabled) {
		t.Fatalf("nil WithSummarizer: %v", err)
	}
	var typedNil *closingService
	if _, err := BuildRuntime(context.Background(), cfg, WithSummarizer(typedNil)); err == nil {
		t.Fatal("typed-nil WithSummarizer accepted")
	}
	none := fmt.Sprintf("test-none-%d", registrations.Add(1))
	summary.Register(none, func(context.Context, summary.Settings) (summary.Service, error) { return nil, nil })
	cfg, err = LoadWith(LoadOptions{Environ: []string{}, Overrides: smallWindow(keySummarizerProvider + "=" + none)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "no summarizer") {
		t.Fatalf("factory without a summarizer: %v", err)
	}
	// A hand-made Config without a summarizer provider.
	hand := &Config{Memory: memory.DefaultConfig(), Summary: Default().Summary, Summarizer: SummarizerConfig{Timeout: time.Second}}
	hand.Memory.Enabled = true
	if _, err := Build(context.Background(), hand); err == nil || !strings.Contains(err.Error(), keySummarizerProvider) {
		t.Fatalf("no provider: %v", err)
	}
}

// TestBuildIsQuiet: without WithLogger nothing reaches slog.Default. (Not
// parallel: it swaps the default logger.)
func TestBuildIsQuiet(t *testing.T) {
	var global testutil.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&global, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(prev)
	failing := summary.ServiceFunc(func(context.Context, summary.Request) (summary.Result, error) {
		return summary.Result{}, errors.New("summarizer down")
	})
	cfg, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: smallWindow()})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := BuildRuntime(context.Background(), cfg, WithSummarizer(failing))
	if err != nil {
		t.Fatal(err)
	}
	conversation(t, rt.Manager, "s", 4)
	if _, err := rt.Manager.Load(context.Background(), "s", "dana"); err != nil {
		t.Fatal(err)
	}
	_ = rt.Close()
	if global.String() != "" {
		t.Fatalf("logged to slog.Default:\n%s", global.String())
	}
}

// TestBuildBudgetIsMemoryConfig: the LLM keys are the manager's one budget.
func TestBuildBudgetIsMemoryConfig(t *testing.T) {
	t.Parallel()
	rt := buildRuntime(t, []string{}, []string{keyWindow + "=32000", keyMaxOutput + "=2000"})
	if c := rt.Manager.Config(); c.ContextWindowTokens != 32000 || c.OutputReserveTokens != 2000 {
		t.Fatalf("manager budget %d/%d", c.ContextWindowTokens, c.OutputReserveTokens)
	}
	def := memory.DefaultConfig()
	if c := Default().Memory; c.ContextWindowTokens != def.ContextWindowTokens || c.OutputReserveTokens != def.OutputReserveTokens {
		t.Fatalf("defaults %d/%d differ from memory's", c.ContextWindowTokens, c.OutputReserveTokens)
	}
	// The fold lock outlives two summarizer calls unless set.
	rt = buildRuntime(t, []string{}, smallWindow(keySummarizerTimeout+"=2m"))
	if got := rt.Manager.Config().FoldLockTTL; got != 4*time.Minute+30*time.Second {
		t.Fatalf("fold lock TTL %s", got)
	}
	_, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{keySummarizerTimeout + "=2m", keyFoldLockTTL + "=1m"}})
	if err == nil || !strings.Contains(err.Error(), "must be > summarizer.timeout (2m)") {
		t.Fatalf("lock TTL below the timeout: %v", err)
	}
}

// TestBuildTokenEncoding: the token-encoding key chooses the estimator of
// the manager's one budget; a bad name is refused at load, and the key
// beside an estimator set in code is refused at build.
func TestBuildTokenEncoding(t *testing.T) {
	t.Parallel()
	// Byte pairs that tiktoken counts differently from the script-aware
	// estimator: a long run of one letter.
	text := strings.Repeat("a", 400)
	exact, err := trimmer.NewTiktokenEstimator(trimmer.EncodingO200kBase)
	if err != nil {
		t.Fatal(err)
	}
	def := buildRuntime(t, []string{}, nil).Manager.Config().Estimator.Estimate(text)
	for name, env := range map[string][]string{
		"override":    nil,
		"environment": {"ARC_REACTOR_MEMORY_TOKEN_ENCODING=o200k_base"},
	} {
		var over []string
		if env == nil {
			over = []string{keyTokenEncoding + "=o200k_base"}
		}
		got := buildRuntime(t, env, over).Manager.Config().Estimator.Estimate(text)
		if got != exact.Estimate(text) || got == def {
			t.Errorf("%s: estimate %d, want tiktoken's %d (the default estimator says %d)", name, got, exact.Estimate(text), def)
		}
	}

	_, err = LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{keyTokenEncoding + "=p50k_base"}})
	var ce *Error
	if !errors.As(err, &ce) || ce.Key != keyTokenEncoding || !strings.Contains(err.Error(), "o200k_base") {
		t.Fatalf("unknown encoding: %v", err)
	}

	cfg, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{keyTokenEncoding + "=cl100k_base"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Memory.Estimator = trimmer.EstimatorFunc(func(s string) int { return len(s) })
	if rt, err := BuildRuntime(context.Background(), cfg, WithLogger(quiet)); !errors.As(err, &ce) || ce.Key != keyTokenEncoding {
		if rt != nil {
			_ = rt.Close()
		}
		t.Fatalf("two estimators: %v", err)
	}
	// An estimator set in code alone is the manager's.
	cfg.TokenEncoding = ""
	rt, err := BuildRuntime(context.Background(), cfg, WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if got := rt.Manager.Config().Estimator.Estimate(text); got != len(text) {
		t.Fatalf("code estimator: %d", got)
	}
}

// store.max-summaries bounds nothing any more (a session's summary lives in
// the session): set to anything but its old default it is not silently
// ignored, a warning says so once at start-up.
func TestBuildWarnsMaxSummariesBoundsNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		yaml string
		warn bool
	}{
		{"arc.reactor.memory.summary:\n  enabled: true\narc.reactor.memory.store:\n  max-summaries: 50\n", true},
		{"arc.reactor.memory.summary:\n  enabled: true\narc.reactor.memory.store:\n  max-summaries: 10000\n", false},
		{"arc.reactor.memory.summary:\n  enabled: true\n", false},
	} {
		cfg, err := LoadWithEnv([]string{}, writeFile(t, "s.yaml", c.yaml))
		if err != nil {
			t.Fatal(err)
		}
		logs := &testutil.Buffer{}
		rt, err := BuildRuntime(context.Background(), cfg, WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
		if err != nil {
			t.Fatal(err)
		}
		_ = rt.Close()
		if n := strings.Count(logs.String(), "max-summaries bounds nothing"); n != map[bool]int{true: 1, false: 0}[c.warn] {
			t.Errorf("%q: the warning appears %d times:\n%s", c.yaml, n, logs.String())
		}
	}
}
