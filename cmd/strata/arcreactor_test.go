package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-go/strata/autoconfig"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// arcReactorYML is arc-reactor's own application.yml, with memory.summary
// on (llm-model: gemini-2.0-flash), memory.user.* and every other section
// of arc-reactor's file; see its header.
const arcReactorYML = "../../autoconfig/testdata/arc-reactor/application.yml"

// arcRow is one row of arc-reactor's conversation_messages.
type arcRow struct {
	session, role, content, user string
	ts                           int64
}

// arcReactorDatabase fills arc-reactor's two tables in an empty schema:
// three conversations whose rows interleave, one with arc-reactor's
// summary of its first 14 messages (trigger 20, recent 10, as the file
// configures). It returns each session's rows in id order.
func arcReactorDatabase(t *testing.T, schema dbtest.Schema) map[string][]arcRow {
	t.Helper()
	d := dbtest.Open(t, schema.URL)
	ctx := context.Background()
	if _, err := d.ExecContext(ctx, dbtest.ArcReactorSchema); err != nil {
		t.Fatal(err)
	}
	owners := map[string]string{"web-1001": "alice", "web-1002": "bob", "slack-C1-1700": "carol"}
	lengths := map[string]int{"web-1001": 24, "web-1002": 4, "slack-C1-1700": 3}
	rows := map[string][]arcRow{}
	ts := int64(1_700_000_000_000)
	for i := 0; i < 24; i++ {
		for _, s := range []string{"web-1001", "web-1002", "slack-C1-1700"} {
			if i >= lengths[s] {
				continue
			}
			role := []string{"user", "assistant"}[i%2]
			ts += 1500
			r := arcRow{session: s, role: role, content: fmt.Sprintf("%s message %d (%s)", s, i+1, role), user: owners[s], ts: ts}
			if s == "slack-C1-1700" && i == 2 {
				r.user = "dave" // another participant of the thread
			}
			if _, err := d.ExecContext(ctx, `INSERT INTO conversation_messages (session_id, role, content, timestamp, user_id)
				VALUES ($1, $2, $3, $4, $5)`, r.session, r.role, r.content, r.ts, r.user); err != nil {
				t.Fatal(err)
			}
			rows[s] = append(rows[s], r)
		}
	}
	if _, err := d.ExecContext(ctx, `INSERT INTO conversation_summaries (session_id, narrative, facts_json, summarized_up_to)
		VALUES ('web-1001', 'Alice is planning a trip to Lisbon in May and asked for a window seat.',
		        '[{"key":"destination","value":"Lisbon","category":"ENTITY","extractedAt":"2026-04-01T09:30:00Z"},
		          {"key":"budget","value":"900 EUR","category":"NUMERIC","extractedAt":"2026-04-01T09:31:00.5Z"}]', 14)`); err != nil {
		t.Fatal(err)
	}
	return rows
}

// jdbcURLOf writes a dbtest schema's URL as arc-reactor's deployment gives
// it: a jdbc: URL with currentSchema, the credentials apart, no sslmode.
func jdbcURLOf(t *testing.T, schema dbtest.Schema) (jdbc, user, pass string) {
	t.Helper()
	u, err := url.Parse(schema.URL)
	if err != nil || !strings.HasPrefix(u.Scheme, "postgres") {
		t.Skipf("the test database URL is not a postgres:// URL: %v", err)
	}
	q := url.Values{}
	q.Set("currentSchema", schema.Name)
	q.Set("ApplicationName", schema.Name)
	pass, _ = u.User.Password()
	return "jdbc:postgresql://" + u.Host + u.Path + "?" + q.Encode(), u.User.Username(), pass
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// Coming from arc-reactor, end to end (it sets the process environment,
// so it does not run in parallel): a fresh database holding arc-reactor's
// two tables with rows, and arc-reactor's application.yml with
// memory.summary enabled, llm-model gemini-2.0-flash, memory.user.* and
// every other section, the datasource given by SPRING_DATASOURCE_URL (a
// jdbc: URL), SPRING_DATASOURCE_USERNAME and SPRING_DATASOURCE_PASSWORD,
// and no API key: strata migrate up --config application.yml, then strata
// migrate import-arc-reactor --config application.yml, the file unchanged,
// succeed; afterwards a manager over the same database returns every
// message of each session to its owner in order, refuses other users, and
// shows the imported facts and narrative at load.
func TestComingFromArcReactor(t *testing.T) {
	schema := dbtest.NewEmptySchema(t)
	rows := arcReactorDatabase(t, schema)
	jdbc, user, pass := jdbcURLOf(t, schema)
	t.Setenv("SPRING_DATASOURCE_URL", jdbc)
	t.Setenv("SPRING_DATASOURCE_USERNAME", user)
	t.Setenv("SPRING_DATASOURCE_PASSWORD", pass)
	for _, k := range []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "DATABASE_URL"} {
		t.Setenv(k, "")
	}
	hash := fileHash(t, arcReactorYML)

	code, out, errOut := cli(t, "migrate", "up", "--config", arcReactorYML)
	if code != 0 || !strings.Contains(out, "arc-reactor's tables hold 3 conversations: strata migrate import-arc-reactor") {
		t.Fatalf("migrate up: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if n := strings.Count(errOut, "not used by Strata"); n != 1 || !strings.HasPrefix(errOut, "strata: info: ") || strings.Count(errOut, "\n") != 1 ||
		!strings.Contains(errOut, "arc.reactor.memory.user.*") {
		t.Fatalf("migrate up: the keys not used by Strata are not listed once, on one info line: %q", errOut)
	}
	code, out, errOut = cli(t, "migrate", "import-arc-reactor", "--dry-run", "--config", arcReactorYML)
	if code != 0 || !strings.HasPrefix(out, "would import 3 of 3 arc-reactor sessions (31 messages, 1 summary) (dry run: nothing written)\n") {
		t.Fatalf("import --dry-run: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	code, out, errOut = cli(t, "migrate", "import-arc-reactor", "--config", arcReactorYML)
	if code != 0 || !strings.HasPrefix(out, "imported 3 of 3 arc-reactor sessions (31 messages, 1 summary)\n") ||
		!strings.Contains(out, "note: several users wrote in 1 session, which belongs to its first author: slack-C1-1700 (carol, dave)") {
		t.Fatalf("import: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	code, out, errOut = cli(t, "migrate", "import-arc-reactor", "--config", arcReactorYML)
	if code != 0 || !strings.HasPrefix(out, "imported 0 of 3 arc-reactor sessions") || !strings.Contains(out, "up to date: 3 sessions imported before") {
		t.Fatalf("second import: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	// config and inspect need no API key either.
	if code, out, errOut = cli(t, "config", "--config", arcReactorYML); code != 0 || !strings.Contains(out, "summarizer in use: gemini (model gemini-2.0-flash") {
		t.Fatalf("config: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	code, out, errOut = cli(t, "inspect", "--config", arcReactorYML, "--user", "alice", "web-1001")
	if code != 0 || !strings.Contains(out, "what the model sees (hierarchical, 12 messages):") || !strings.Contains(out, "- destination: Lisbon [ENTITY]") ||
		!strings.Contains(out, "(folds 14 messages of 24;") || !regexp.MustCompile(`\n +12 +#\d+ +assistant web-1001 message 24 \(assistant\)\n`).MatchString(out) {
		t.Fatalf("inspect: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if fileHash(t, arcReactorYML) != hash {
		t.Fatal("the commands changed application.yml")
	}

	// A manager over the same database, from the same file.
	cfg, err := autoconfig.Load(arcReactorYML)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	rt, err := autoconfig.BuildRuntime(context.Background(), cfg, autoconfig.WithSummarizer(summary.ServiceFunc(
		func(context.Context, summary.Request) (summary.Result, error) {
			calls.Add(1)
			return summary.Result{}, errors.New("no fold is due")
		})))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	mgr := rt.Manager
	for session, want := range rows {
		owner := want[0].user
		msgs, err := mgr.Messages(ctx, session, owner, 0, 0)
		if err != nil || len(msgs) != len(want) {
			t.Fatalf("%s for %s: %d messages, %v; want %d", session, owner, len(msgs), err, len(want))
		}
		for i, w := range want {
			m := msgs[i]
			if string(m.Role) != w.role || m.Content != w.content || !m.CreatedAt.Equal(time.UnixMilli(w.ts)) {
				t.Fatalf("%s[%d] = %s %q %v; want %s %q at %v", session, i, m.Role, m.Content, m.CreatedAt, w.role, w.content, time.UnixMilli(w.ts))
			}
		}
		for _, other := range []string{"mallory", "dave"} {
			if other == owner {
				continue
			}
			if _, err := mgr.Messages(ctx, session, other, 0, 0); !errors.Is(err, memory.ErrNotOwner) {
				t.Fatalf("%s read by %s: %v, want ErrNotOwner", session, other, err)
			}
			if _, err := mgr.Load(ctx, session, other); !errors.Is(err, memory.ErrNotOwner) {
				t.Fatalf("%s loaded by %s: %v, want ErrNotOwner", session, other, err)
			}
		}
	}
	h, err := mgr.Load(ctx, "web-1001", "alice")
	if err != nil || h.Mode != "hierarchical" || len(h.Recent) != 10 || h.Recent[0].Content != "web-1001 message 15 (user)" {
		t.Fatalf("load web-1001: mode %s, %d verbatim, %v", h.Mode, len(h.Recent), err)
	}
	if len(h.Messages) != 12 || !strings.Contains(h.Messages[0].GetContent(), "- destination: Lisbon") ||
		!strings.Contains(h.Messages[0].GetContent(), "- budget: 900 EUR") ||
		!strings.Contains(h.Messages[1].GetContent(), "Alice is planning a trip to Lisbon in May") {
		t.Fatalf("load web-1001 does not show the imported facts and narrative: %v", h.Messages)
	}
	if err := mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the summarizer was called %d times: the imported summary should be current", n)
	}
}

// The README's steps for coming from arc-reactor are the ones
// TestComingFromArcReactor runs.
func TestREADMEComingFromArcReactor(t *testing.T) {
	t.Parallel()
	section := readmeSection(t, "Configuration")
	_, section, ok := strings.Cut(section, "### Coming from arc-reactor\n")
	if !ok {
		t.Fatal("README has no Coming from arc-reactor section")
	}
	for _, want := range []string{
		"export SPRING_DATASOURCE_URL=jdbc:postgresql://", "SPRING_DATASOURCE_USERNAME=", "SPRING_DATASOURCE_PASSWORD=",
		"go build -o strata ./cmd/strata",
		"./strata migrate up --config application.yml ",
		"./strata migrate import-arc-reactor --dry-run --config application.yml ",
		"./strata migrate import-arc-reactor --config application.yml ",
		"./strata inspect --config application.yml --user alice SESSION ",
		"TestComingFromArcReactor", "TestArcReactorCutoverEndToEnd", "--arc-time-zone",
		"shared-session-prefixes=[slack-]", "Stop arc-reactor's writes", "Run the import once more", "Switch the application to Strata",
	} {
		if !strings.Contains(section, want) {
			t.Errorf("README's Coming from arc-reactor lacks %q", want)
		}
	}
}
