package autoconfig

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/lib/pq"

	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/internal/testutil"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

// An arc-reactor application.yaml starts unchanged, including a trigger
// below the verbatim window: the session is hierarchical as soon as a
// message precedes the window.
func TestArcReactorYAMLTriggerBelowWindow(t *testing.T) {
	t.Parallel()
	file := writeFile(t, "application.yaml", `
arc:
  reactor:
    llm:
      default-provider: gemini
      max-conversation-turns: 10
    max-tool-calls: 8
    memory:
      summary:
        enabled: true
        trigger-message-count: 4
        recent-message-count: 10
`)
	cfg, err := LoadWith(LoadOptions{Environ: []string{}, Files: []string{file}})
	if err != nil {
		t.Fatalf("arc-reactor's configuration refused: %v", err)
	}
	rt, err := BuildRuntime(context.Background(), cfg, WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	conversation(t, rt.Manager, "s", 4) // 8 messages: above the trigger, all in the window
	h, err := rt.Manager.Load(context.Background(), "s", "dana")
	if err != nil || h.Mode != "all" || len(h.Recent) != 8 {
		t.Fatalf("8 messages: mode %s, %d verbatim, %v", h.Mode, len(h.Recent), err)
	}
	conversation(t, rt.Manager, "s", 2) // 12: two precede the window
	h, err = rt.Manager.Load(context.Background(), "s", "dana")
	if err != nil || h.Mode != "hierarchical" || len(h.Recent) != 10 || h.Summary == nil {
		t.Fatalf("12 messages: mode %s, %d verbatim, summary %v, %v", h.Mode, len(h.Recent), h.Summary != nil, err)
	}
}

// A misspelled key anywhere under arc.reactor is reported with a
// suggestion; arc-reactor's own keys that Strata does not read are not.
func TestMisspelledArcReactorKeys(t *testing.T) {
	t.Parallel()
	cases := []struct{ yaml, key, suggestion string }{
		{"arc.reactor.memroy.summary.enabled: true\n", "arc.reactor.memroy.summary.enabled", keyEnabled},
		{"arc:\n  reactor:\n    memroy:\n      summary:\n        trigger-message-count: 5\n", "arc.reactor.memroy.summary.trigger-message-count", keyTrigger},
		{"arc.reactor.memmory.store.max-sessions: 5\n", "arc.reactor.memmory.store.max-sessions", keyMaxSessions},
		{"arc.reacter.memory.summary.enabled: true\n", "arc.reacter.memory.summary.enabled", keyEnabled},
		{"arc.reactor.lm.max-output-tokens: 100\n", "arc.reactor.lm.max-output-tokens", keyMaxOutput},
		{"arc.reactor.llm.max-conversation-turn: 5\n", "arc.reactor.llm.max-conversation-turn", keyMaxTurns},
		{"arc.reactor.memory.sumary.enabled: true\n", "arc.reactor.memory.sumary.enabled", keyEnabled},
	}
	for _, c := range cases {
		p := writeFile(t, "typo.yaml", c.yaml)
		e := loadErr(t, LoadOptions{Files: []string{p}})
		if e.Key != c.key || !strings.Contains(e.Msg, "unknown key (did you mean "+c.suggestion+"?)") {
			t.Errorf("%q: error = %v; want %s with the suggestion %s", c.yaml, e, c.key, c.suggestion)
		}
	}
	e := loadErr(t, LoadOptions{Environ: []string{"ARC_REACTOR_MEMROY_SUMMARY_ENABLED=true"}})
	if e.Key != "ARC_REACTOR_MEMROY_SUMMARY_ENABLED" || !strings.Contains(e.Msg, "did you mean ARC_REACTOR_MEMORY_SUMMARY_ENABLED?") {
		t.Errorf("environment: %v", e)
	}
	// arc-reactor's other keys load.
	p := writeFile(t, "ok.yaml", `
arc.reactor.llm.default-provider: gemini
arc.reactor.llm.temperature: 0.3
arc.reactor.max-tool-calls: 8
arc.reactor.guard.enabled: true
arc.reactor.mcp.allow-private-addresses: false
arc.reactor.rag.enabled: false
arc.reactor.tool-policy.write-tool-names: [jira_create_issue]
arc.reactor.guard.tenant-rate-limits.acme.per-minute: 5
`)
	if _, err := LoadWith(LoadOptions{Environ: []string{"ARC_REACTOR_LLM_DEFAULT_PROVIDER=gemini", "ARC_REACTOR_GUARD_ENABLED=true"}, Files: []string{p}}); err != nil {
		t.Fatalf("arc-reactor's own keys refused: %v", err)
	}
}

// jdbcURL rewrites a postgres:// URL as arc-reactor would write it:
// jdbc:postgresql://host/db?currentSchema=…, credentials separate, no
// sslmode.
func jdbcURL(t *testing.T, pgURL string) (jdbc, user, pass string) {
	t.Helper()
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("sslmode")
	if s := q.Get("search_path"); s != "" {
		q.Set("currentSchema", s)
		q.Del("search_path")
	}
	pass, _ = u.User.Password()
	return "jdbc:postgresql://" + u.Host + u.Path + "?" + q.Encode(), u.User.Username(), pass
}

// A JDBC URL without sslmode connects to a server without TLS, as the JDBC
// driver does (prefer); requiring TLS of such a server fails with an error
// that says how to fix it.
func TestJDBCURLWithoutSSLModeConnects(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewEmptySchema(t)
	ctx := context.Background()
	jdbc, user, pass := jdbcURL(t, schema.URL)
	cfg, err := LoadWith(LoadOptions{Environ: []string{
		"SPRING_DATASOURCE_URL=" + jdbc + "&prepareThreshold=0&reWriteBatchedInserts=true",
		"SPRING_DATASOURCE_USERNAME=" + user, "SPRING_DATASOURCE_PASSWORD=" + pass,
	}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := OpenDatabase(ctx, cfg)
	if err != nil {
		t.Fatalf("JDBC URL without sslmode: %v", err)
	}
	defer d.Close()
	var ssl string
	if err := d.GetContext(ctx, &ssl, "SHOW ssl"); err != nil {
		t.Fatal(err)
	}
	if ssl != "off" {
		t.Skipf("the test server has TLS (ssl = %s): the server without TLS cannot be tested here", ssl)
	}
	// sslmode=require of a server without TLS: the error says what to do.
	u, _ := url.Parse(schema.URL)
	q := u.Query()
	q.Set("sslmode", "require")
	u.RawQuery = q.Encode()
	cfg, err = LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{keyDatasourceURL + "=" + u.String()}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = OpenDatabase(ctx, cfg)
	if !errors.Is(err, pq.ErrSSLNotSupported) || !strings.Contains(err.Error(), "add sslmode=disable") {
		t.Fatalf("sslmode=require on a server without TLS: %v", err)
	}
	_, err = BuildRuntime(ctx, cfg, WithLogger(quiet))
	if err == nil || !strings.Contains(err.Error(), "add sslmode=disable") {
		t.Fatalf("BuildRuntime: %v", err)
	}
}

func TestTLSHint(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("db: open: %w", pq.ErrSSLNotSupported), "add sslmode=disable"},
		{fmt.Errorf("db: open: %w", &pq.Error{Code: "28000", Message: `no pg_hba.conf entry for host "10.0.0.1", user "u", database "d", no encryption`}), "sslmode=require"},
		{fmt.Errorf("db: open: %w", x509.UnknownAuthorityError{}), "sslrootcert="},
		{fmt.Errorf("db: open: %w", &pq.Error{Code: "28P01", Message: "password authentication failed"}), ""},
		{errors.New("connection refused"), ""},
		{nil, ""},
	}
	for _, c := range cases {
		got := TLSHint(c.err)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("TLSHint(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// store.max-sessions bounds the in-memory store: past it the least
// recently used session goes, with a log line.
func TestMaxSessionsKey(t *testing.T) {
	t.Parallel()
	var logs testutil.Buffer
	cfg, err := LoadWith(LoadOptions{Environ: []string{"ARC_REACTOR_MEMORY_STORE_MAX_SESSIONS=2"}})
	if err != nil || cfg.Store.MaxSessions != 2 {
		t.Fatalf("max-sessions = %d, %v", cfg.Store.MaxSessions, err)
	}
	rt, err := BuildRuntime(context.Background(), cfg, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	ctx := context.Background()
	for _, s := range []string{"one", "two", "three"} {
		if err := rt.Manager.SaveTurn(ctx, s, "dana", "hi", "hello"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rt.Manager.Count(ctx, "one", "dana"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the least recently used session survived: %v", err)
	}
	for _, s := range []string{"two", "three"} {
		if n, err := rt.Manager.Count(ctx, s, "dana"); err != nil || n != 2 {
			t.Fatalf("%s: %d, %v", s, n, err)
		}
	}
	if !strings.Contains(logs.String(), "evicted") {
		t.Fatalf("no log line for the eviction: %q", logs.String())
	}
}

// shared-session-prefixes makes sessions with those prefixes shared by all
// their participants; other sessions stay private. Off by default.
func TestSharedSessionPrefixesKey(t *testing.T) {
	t.Parallel()
	if def := Default(); len(def.Memory.SharedSessionPrefixes) != 0 {
		t.Fatalf("shared sessions on by default: %v", def.Memory.SharedSessionPrefixes)
	}
	file := writeFile(t, "shared.yaml", "arc.reactor.memory.shared-session-prefixes: [slack-, teams-]\n")
	cfg, err := LoadWith(LoadOptions{Environ: []string{}, Files: []string{file}})
	if err != nil || !reflect.DeepEqual(cfg.Memory.SharedSessionPrefixes, []string{"slack-", "teams-"}) {
		t.Fatalf("from YAML: %v, %v", cfg.Memory.SharedSessionPrefixes, err)
	}
	if v, _ := cfg.Value(keySharedPrefixes); v != `["slack-", "teams-"]` {
		t.Fatalf("Value = %s", v)
	}
	env, err := LoadWith(LoadOptions{Environ: []string{"ARC_REACTOR_MEMORY_SHARED_SESSION_PREFIXES=slack-, teams-,"}})
	if err != nil || !reflect.DeepEqual(env.Memory.SharedSessionPrefixes, []string{"slack-", "teams-"}) {
		t.Fatalf("from the environment: %v, %v", env.Memory.SharedSessionPrefixes, err)
	}
	rt, err := BuildRuntime(context.Background(), cfg, WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	ctx := context.Background()
	if err := rt.Manager.SaveTurn(ctx, "slack-T1", "alice", "hi", "hello"); err != nil {
		t.Fatal(err)
	}
	if err := rt.Manager.SaveTurn(ctx, "slack-T1", "bob", "hi", "hello"); err != nil {
		t.Fatalf("bob refused in a shared thread: %v", err)
	}
	if n, err := rt.Manager.Count(ctx, "slack-T1", "alice"); err != nil || n != 4 {
		t.Fatalf("alice sees %d, %v", n, err)
	}
	if err := rt.Manager.SaveTurn(ctx, "dm-1", "alice", "hi", "hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Manager.Count(ctx, "dm-1", "bob"); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("a private session shared: %v", err)
	}
}

// URL forms agree: a postgres:// URL without sslmode connects to a server
// without TLS, as its jdbc: form does and as psql does (sslmode=prefer).
func TestPostgresURLWithoutSSLModeConnects(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewEmptySchema(t)
	ctx := context.Background()
	u, err := url.Parse(schema.URL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("sslmode")
	u.RawQuery = q.Encode()
	jdbc, user, pass := jdbcURL(t, schema.URL)
	for _, env := range [][]string{
		{"ARC_REACTOR_MEMORY_DATASOURCE_URL=" + u.String()},
		{"SPRING_DATASOURCE_URL=" + u.String()},
		{"SPRING_DATASOURCE_URL=" + jdbc, "SPRING_DATASOURCE_USERNAME=" + user, "SPRING_DATASOURCE_PASSWORD=" + pass},
	} {
		cfg, err := LoadWith(LoadOptions{Environ: env})
		if err != nil {
			t.Fatal(err)
		}
		d, err := OpenDatabase(ctx, cfg)
		if err != nil {
			t.Fatalf("%s: %v", strings.SplitN(env[0], "=", 2)[0], err)
		}
		var ssl string
		err = d.GetContext(ctx, &ssl, "SHOW ssl")
		_ = d.Close()
		if err != nil {
			t.Fatal(err)
		}
		if ssl != "off" {
			t.Skipf("the test server has TLS (ssl = %s): the server without TLS cannot be tested here", ssl)
		}
	}
}
