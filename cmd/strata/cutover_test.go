package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/autoconfig"
	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
)

// arcWriter writes conversation_messages rows as arc-reactor's
// JdbcMemoryStore does: one INSERT per message, the epoch-millisecond
// timestamp from the application clock, then its eviction of all but the
// session's newest maxMessagesPerSession rows in the same transaction.
type arcWriter struct {
	t    *testing.T
	d    *sqlx.DB
	ms   int64
	keep int
	rows map[string][]arcRow // what each session holds in arc-reactor
}

func (w *arcWriter) add(session, role, content, user string) {
	w.t.Helper()
	w.ms += 1500
	tx := w.d.MustBegin()
	tx.MustExec(`INSERT INTO conversation_messages (session_id, role, content, timestamp, user_id) VALUES ($1, $2, $3, $4, $5)`,
		session, role, content, w.ms, user)
	tx.MustExec(`DELETE FROM conversation_messages WHERE session_id = $1 AND id NOT IN
		(SELECT id FROM conversation_messages WHERE session_id = $1 ORDER BY id DESC LIMIT $2)`, session, w.keep)
	if err := tx.Commit(); err != nil {
		w.t.Fatal(err)
	}
	w.rows[session] = append(w.rows[session], arcRow{session: session, role: role, content: content, user: user, ts: w.ms})
	if n := len(w.rows[session]); n > w.keep {
		w.rows[session] = w.rows[session][n-w.keep:]
	}
}

// arcReactorFile is arc-reactor's application.yml as its deployments have
// it when summary.llm-model is not set: its llm.default-provider, gemini,
// summarizes.
func arcReactorFile(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(arcReactorYML)
	if err != nil {
		t.Fatal(err)
	}
	out := strings.Replace(string(b), "        llm-model: gemini-2.0-flash\n", "", 1)
	if out == string(b) {
		t.Fatal("application.yml has no llm-model line")
	}
	p := filepath.Join(t.TempDir(), "application.yml")
	if err := os.WriteFile(p, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The cut-over from arc-reactor, end to end on PostgreSQL (it sets the
// process environment, so it does not run in parallel): arc-reactor's
// tables with rows as arc-reactor writes them — a Slack thread two users
// wrote in, a failed turn (a user message with no answer), a session its
// eviction trimmed to its newest 100 rows, summaries with Jackson
// facts_json and times in the JVM's zone (Asia/Seoul) — and its
// application.yml with llm-model unset, its llm.default-provider gemini
// and a GEMINI_API_KEY: the dry run names the thread; the import;
// arc-reactor writes two more rows; the re-run, with the thread's prefix
// now declared shared, adds exactly those and re-homes the thread; a last
// re-run adds nothing. Every message is in Strata once, in order, with its
// author; both authors of the thread read it and a third user does not
// see it listed; the summaries keep their instant; the summarizer in use
// is Gemini, as arc-reactor's, and strata config and the start-up log say
// so and why.
func TestArcReactorCutoverEndToEnd(t *testing.T) {
	schema := dbtest.NewEmptySchema(t)
	d := dbtest.Open(t, schema.URL)
	ctx := context.Background()
	if _, err := d.ExecContext(ctx, dbtest.ArcReactorSchema); err != nil {
		t.Fatal(err)
	}
	jdbc, user, pass := jdbcURLOf(t, schema)
	t.Setenv("SPRING_DATASOURCE_URL", jdbc)
	t.Setenv("SPRING_DATASOURCE_USERNAME", user)
	t.Setenv("SPRING_DATASOURCE_PASSWORD", pass)
	for _, k := range []string{"GOOGLE_API_KEY", "OPENAI_API_KEY", "DATABASE_URL", "ARC_REACTOR_MEMORY_SHARED_SESSION_PREFIXES"} {
		t.Setenv(k, "")
	}
	t.Setenv("GEMINI_API_KEY", "test-key-not-used")
	file := arcReactorFile(t)

	w := &arcWriter{t: t, d: d, ms: 1_700_000_000_000, keep: 100, rows: map[string][]arcRow{}}
	for i := 1; i <= 24; i++ {
		if i == 7 {
			w.add("web-1001", "user", "web-1001 turn 7 (the model failed: no answer)", "alice")
			continue
		}
		w.add("web-1001", "user", fmt.Sprintf("web-1001 turn %d question", i), "alice")
		w.add("web-1001", "assistant", fmt.Sprintf("web-1001 turn %d answer", i), "alice")
		if i <= 3 {
			author := []string{"carol", "dave", "carol"}[i-1]
			w.add("slack-C1-1700", "user", fmt.Sprintf("thread message %d by %s", i, author), author)
			w.add("slack-C1-1700", "assistant", fmt.Sprintf("thread answer %d", i), author)
		}
	}
	for i := 1; i <= 60; i++ { // 120 rows: arc-reactor keeps the newest 100
		w.add("web-1002", "user", fmt.Sprintf("web-1002 question %d", i), "bob")
		w.add("web-1002", "assistant", fmt.Sprintf("web-1002 answer %d", i), "bob")
	}
	if n := len(w.rows["web-1002"]); n != 100 || w.rows["web-1002"][0].content != "web-1002 question 11" {
		t.Fatalf("the eviction left %d rows from %q", n, w.rows["web-1002"][0].content)
	}
	// Summaries as JdbcConversationSummaryStore saves them: Jackson facts,
	// times as the JVM's (Seoul's) wall clock.
	if _, err := d.ExecContext(ctx, `INSERT INTO conversation_summaries (session_id, narrative, facts_json, summarized_up_to, created_at, updated_at) VALUES
		('web-1001', 'Alice is planning a trip to Lisbon in May.',
		 '[{"key":"destination","value":"Lisbon","category":"ENTITY","extractedAt":"2026-04-01T09:30:00Z"},
		   {"key":"budget","value":"900 EUR","category":"NUMERIC","extractedAt":1775035860.5}]', 14,
		 '2026-04-01 18:30:00', '2026-04-01 18:31:00'),
		('web-1002', 'Bob asked sixty questions.', '[{"key":"topic","value":"questions","category":"STATE","extractedAt":"2026-04-02T01:00:00Z"}]', 80,
		 '2026-04-02 10:00:00', '2026-04-02 10:05:00')`); err != nil {
		t.Fatal(err)
	}

	// strata config: the summarizer is arc-reactor's.
	code, out, errOut := cli(t, "config", "--config", file)
	if code != 0 || !strings.Contains(out, "summarizer in use: gemini (model gemini-2.0-flash") ||
		!strings.Contains(out, "because arc-reactor's arc.reactor.llm.default-provider is gemini ("+file+") and $GEMINI_API_KEY holds its API key") {
		t.Fatalf("config: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if code, out, errOut = cli(t, "migrate", "up", "--config", file); code != 0 {
		t.Fatalf("migrate up: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	// The dry run names the thread two users wrote in.
	code, out, errOut = cli(t, "migrate", "import-arc-reactor", "--dry-run", "--config", file)
	if code != 0 || !strings.HasPrefix(out, "would import 3 of 3 arc-reactor sessions (153 messages, 2 summaries) (dry run: nothing written)\n") ||
		!strings.Contains(out, "note: several users wrote in 1 session, which belongs to its first author: slack-C1-1700 (carol, dave); ") {
		t.Fatalf("import --dry-run: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	code, out, errOut = cli(t, "migrate", "import-arc-reactor", "--arc-time-zone", "Asia/Seoul", "--config", file)
	if code != 0 || !strings.HasPrefix(out, "imported 3 of 3 arc-reactor sessions (153 messages, 2 summaries)\n") {
		t.Fatalf("import: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}

	// arc-reactor still runs: two more rows; the thread's prefix is now
	// declared shared, written as the dry-run note had it once.
	w.add("web-1001", "user", "web-1001 turn 25 question, during the cut-over", "alice")
	w.add("web-1001", "assistant", "web-1001 turn 25 answer, during the cut-over", "alice")
	shared := "arc.reactor.memory.shared-session-prefixes=[slack-]"
	code, out, errOut = cli(t, "migrate", "import-arc-reactor", "--arc-time-zone", "Asia/Seoul", "--config", file, "--set", shared)
	if code != 0 || !strings.HasPrefix(out, "imported 0 of 3 arc-reactor sessions (0 messages, 0 summaries)\n") ||
		!strings.Contains(out, "added 2 messages written in arc-reactor since the last import to 1 session:\n  web-1001 +2\n") ||
		!strings.Contains(out, "up to date: 2 sessions imported before") ||
		!strings.Contains(out, "re-homed 1 session as shared (id with a shared-session prefix; imported before under its first author): slack-C1-1700\n") {
		t.Fatalf("re-run: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	code, out, errOut = cli(t, "migrate", "import-arc-reactor", "--config", file, "--set", shared)
	if code != 0 || !strings.Contains(out, "up to date: 3 sessions imported before") || strings.Contains(out, "added") {
		t.Fatalf("last re-run: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}

	// A manager as strata serve builds it from the same file, its
	// start-up log saying which summarizer runs and why.
	cfg, err := autoconfig.LoadWith(autoconfig.LoadOptions{Files: []string{file}, Overrides: []string{shared}})
	if err != nil {
		t.Fatal(err)
	}
	if p, why := cfg.SummarizerChoice(); p != autoconfig.ProviderGemini || !strings.Contains(why, "llm.default-provider") {
		t.Fatalf("SummarizerChoice = %s, %s", p, why)
	}
	var logs bytes.Buffer
	rt, err := autoconfig.BuildRuntime(ctx, cfg, autoconfig.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if n := strings.Count(logs.String(), "summarizer: gemini: arc-reactor's arc.reactor.llm.default-provider is gemini"); n != 1 {
		t.Fatalf("the start-up log says %d times which summarizer runs:\n%s", n, logs.String())
	}
	mgr := rt.Manager
	for session, want := range w.rows {
		readers := []string{want[0].user}
		if session == "slack-C1-1700" {
			readers = []string{"carol", "dave"}
		}
		for _, reader := range readers {
			msgs, err := mgr.Messages(ctx, session, reader, 0, 0)
			if err != nil || len(msgs) != len(want) {
				t.Fatalf("%s for %s: %d messages, %v; want %d", session, reader, len(msgs), err, len(want))
			}
			for i, wm := range want {
				m := msgs[i]
				if string(m.Role) != wm.role || m.Content != wm.content || !m.CreatedAt.Equal(time.UnixMilli(wm.ts)) ||
					m.Metadata[db.MetadataArcReactorUser] != wm.user {
					t.Fatalf("%s[%d] = %s %q %v by %s; want %s %q at %v by %s", session, i, m.Role, m.Content, m.CreatedAt,
						m.Metadata[db.MetadataArcReactorUser], wm.role, wm.content, time.UnixMilli(wm.ts), wm.user)
				}
			}
		}
	}
	if _, err := mgr.Messages(ctx, "web-1001", "mallory", 0, 0); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("mallory reads alice's session: %v", err)
	}
	if list, _, err := mgr.Sessions(ctx, "mallory", 0, 0); err != nil || len(list) != 0 {
		t.Fatalf("mallory's listing: %+v, %v", list, err)
	}
	// The shared thread is listed for the two users who wrote in it, and
	// for nobody else.
	for _, u := range []string{"carol", "dave", "mallory"} {
		list, total, err := mgr.SharedSessions(ctx, u, 0, 0)
		listed := err == nil && total == 1 && len(list) == 1 && list[0].SessionID == "slack-C1-1700"
		if want := u != "mallory"; listed != want || err != nil || (!want && total != 0) {
			t.Fatalf("%s's shared sessions: %+v (total %d), %v; want listed %v", u, list, total, err, want)
		}
	}
	// The summaries keep their instant: 18:30 in Seoul is 09:30 UTC.
	s1, err := mgr.Summary(ctx, "web-1001", "alice")
	if err != nil || s1 == nil || !s1.CreatedAt.Equal(time.Date(2026, 4, 1, 9, 30, 0, 0, time.UTC)) || len(s1.Facts) != 2 {
		t.Fatalf("web-1001's summary = %+v, %v", s1, err)
	}
	s2, err := mgr.Summary(ctx, "web-1002", "bob")
	if err != nil || s2 == nil || !s2.CreatedAt.Equal(time.Date(2026, 4, 2, 1, 0, 0, 0, time.UTC)) {
		t.Fatalf("web-1002's summary = %+v, %v", s2, err)
	}
	if m, _ := mgr.Messages(ctx, "web-1002", "bob", 0, 0); s2.UpToSeq != m[79].Seq {
		t.Fatalf("web-1002's cursor %d is not on its 80th message (%d)", s2.UpToSeq, m[79].Seq)
	}
}
