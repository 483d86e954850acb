package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// pgManager is a manager over the PostgreSQL schema at url.
func pgManager(t *testing.T, url string) *memory.Manager {
	t.Helper()
	d := dbtest.Open(t, url)
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	m, err := memory.NewManager(db.NewMessageStore(d), cfg, memory.WithSummaries(db.NewSummaryStore(d), summary.NewExtractiveService()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// strata forget, export and import against PostgreSQL: a secret erased
// with the CLI is gone from the export; the export imports into another
// database, where the model's view is the same; an id in use stops the
// import unless --skip-existing.
func TestForgetExportImportCLI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, dst := dbtest.NewSchema(t), dbtest.NewSchema(t)
	setSrc, setDst := "arc.reactor.memory.datasource.url="+src.URL, "arc.reactor.memory.datasource.url="+dst.URL
	m := pgManager(t, src.URL)
	for i := 1; i <= 30; i++ {
		text := fmt.Sprintf("Question %d about the kettle.", i)
		if i == 2 {
			text = "My email is cli.secret@example.com, thanks."
		}
		if err := m.SaveTurn(ctx, "s1", "alice", text, "Answer."); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.SaveTurn(ctx, "s2", "alice", "Another chat.", "Yes."); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Load(ctx, "s1", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if s, _ := m.Summary(ctx, "s1", "alice"); s == nil || !strings.Contains(fmt.Sprint(s.Facts), "cli.secret@example.com") {
		t.Fatalf("the secret was not folded: %+v", s)
	}
	msgs, err := m.Messages(ctx, "s1", "alice", 0, 0)
	if err != nil {
		t.Fatal(err)
	}

	code, _, errOut := cli(t, "forget", "--set", setSrc, "--user", "alice", "s1", fmt.Sprint(msgs[2].Seq+1_000_000))
	wantError(t, code, errOut, 1, "is not a message of session s1; nothing was erased")
	code, out, errOut := cli(t, "forget", "--set", setSrc, "--user", "alice", "s1", fmt.Sprint(msgs[2].Seq))
	if code != 0 || !strings.Contains(out, "erased 1 message of") {
		t.Fatalf("forget: exit %d %q %q", code, out, errOut)
	}
	code, out, errOut = cli(t, "export", "--set", setSrc, "--user", "alice")
	if code != 0 || !strings.Contains(errOut, "exported 2 sessions") {
		t.Fatalf("export: exit %d %q", code, errOut)
	}
	if strings.Contains(out, "cli.secret") {
		t.Fatalf("the export holds the erased secret:\n%s", out)
	}
	var lines []memory.Snapshot
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var s memory.Snapshot
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		lines = append(lines, s)
	}
	if len(lines) != 2 {
		t.Fatalf("%d snapshots, want 2", len(lines))
	}
	code, all, errOut := cli(t, "export", "--set", setSrc, "--all")
	if code != 0 || len(strings.Split(strings.TrimSpace(all), "\n")) != 2 || !strings.Contains(all, `"session_id":"s1"`) || !strings.Contains(all, `"session_id":"s2"`) {
		t.Fatalf("export --all: exit %d %q", code, errOut)
	}
	code, _, errOut = cliInput(t, out, "import", "--set", setDst)
	if code != 0 || !strings.Contains(errOut, "imported 2 sessions") {
		t.Fatalf("import: exit %d %q", code, errOut)
	}
	want, err := m.Load(ctx, "s1", "alice")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgManager(t, dst.URL).Load(ctx, "s1", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Messages, want.Messages) || got.Mode != want.Mode {
		t.Fatalf("view after import differs:\n got %s %v %+v\nwant %s %v %+v", got.Mode, got.Messages, got.Summary, want.Mode, want.Messages, want.Summary)
	}
	code, _, errOut = cliInput(t, out, "import", "--set", setDst)
	wantError(t, code, errOut, 1, "already exists (0 imported before it); pass --skip-existing")
	code, _, errOut = cliInput(t, out, "import", "--set", setDst, "--skip-existing")
	if code != 0 || !strings.Contains(errOut, "skipped 2") {
		t.Fatalf("import --skip-existing: exit %d %q", code, errOut)
	}
	code, _, errOut = cliInput(t, "{\"version\":9}\n", "import", "--set", setDst)
	wantError(t, code, errOut, 1, "line 1")

	// Usage errors.
	for _, args := range [][]string{{"export"}, {"export", "--all", "--user", "x"}, {"forget", "--user", "a", "s"}, {"forget", "--user", "a", "s", "x1"}} {
		if code, _, _ := cli(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// One tenant's row with a time no JSON can write (year 10000, as
// PostgreSQL rounded an imported 9999-12-31T23:59:59.9999999Z before such
// times were cut to the microsecond) does not stop strata export --all:
// every session is exported, that one with the nearest time JSON
// writes, and the file imports into another database.
func TestExportAllSurvivesOutOfRangeRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, dst := dbtest.NewSchema(t), dbtest.NewSchema(t)
	m := pgManager(t, src.URL)
	for i := range 5 {
		if err := m.SaveTurn(ctx, fmt.Sprintf("s%d", i), fmt.Sprintf("user%d", i), "Hello.", "Hi."); err != nil {
			t.Fatal(err)
		}
	}
	d := dbtest.Open(t, src.URL)
	if _, err := d.ExecContext(ctx, `UPDATE strata_messages SET created_at = '10000-01-01 00:00:00+00' WHERE session_id = 's2'`); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli(t, "export", "--set", "arc.reactor.memory.datasource.url="+src.URL, "--all")
	if code != 0 || !strings.Contains(errOut, "exported 5 sessions") {
		t.Fatalf("export --all: exit %d %q", code, errOut)
	}
	if !strings.Contains(out, `"created_at":"9999-12-31T23:59:59.999999Z"`) {
		t.Fatalf("the out-of-range time is not the nearest JSON writes:\n%s", out)
	}
	code, _, errOut = cliInput(t, out, "import", "--set", "arc.reactor.memory.datasource.url="+dst.URL)
	if code != 0 || !strings.Contains(errOut, "imported 5 sessions") {
		t.Fatalf("import: exit %d %q", code, errOut)
	}
}
