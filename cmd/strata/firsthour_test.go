package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/lib/pq"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
)

// cliInput is cli with standard input.
func cliInput(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runInput(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

const threeTurns = `{"role":"system","content":"Be brief."}
{"role":"user","content":"Hello"}
{"role":"assistant","content":"Hi"}
{"role":"user","content":"Bye"}
`

func TestReplayStandardInput(t *testing.T) {
	t.Parallel()
	code, out, errOut := cliInput(t, threeTurns, "replay", "--json", "-")
	if code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	lines := parseJSONLines(t, out)
	if len(lines) != 3 || lines[2].Summary == nil || lines[2].Summary.Session != "replay:stdin" {
		t.Fatalf("replay - gave %d lines: %s", len(lines), out)
	}
	code, out, errOut = cliInput(t, threeTurns, "replay", "-")
	if code != 0 || !strings.HasPrefix(out, "strata replay stdin (jsonl: 2 user turns, 3 messages)") {
		t.Fatalf("report from stdin: exit %d %s\n%.200s", code, errOut, out)
	}
	// Empty input is one clear error.
	code, _, errOut = cliInput(t, "", "replay", "-")
	wantError(t, code, errOut, 1, "stdin: empty file")
}

func TestReplayOpenAIMessagesObject(t *testing.T) {
	t.Parallel()
	doc := `{
  "model": "gpt-4o",
  "temperature": 0.2,
  "messages": [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Where is order Z-42?"},
    {"role": "assistant", "content": null, "refusal": null,
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{\"id\":\"Z-42\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "shipped"},
    {"role": "assistant", "content": "It shipped."},
    {"role": "user", "content": "Thanks"}
  ],
  "tools": [{"type": "function", "function": {"name": "lookup"}}]
}`
	file := writeTemp(t, "request.json", doc)
	for _, run := range []func() (int, string, string){
		func() (int, string, string) { return cli(t, "replay", "--json", file) },
		func() (int, string, string) { return cliInput(t, doc, "replay", "--json", "-") },
	} {
		code, out, errOut := run()
		if code != 0 {
			t.Fatalf("exit %d %s", code, errOut)
		}
		lines := parseJSONLines(t, out)
		if len(lines) != 3 {
			t.Fatalf("%d lines: %s", len(lines), out)
		}
		ctx := lines[1].Context
		if len(ctx) != 6 || ctx[0].Content != "Be brief." || ctx[2].ToolCalls[0].Name != "lookup" || ctx[3].ToolCallID != "c1" {
			t.Fatalf("turn 2 context = %+v", ctx)
		}
	}
	// An unknown field inside is located by its line.
	bad := writeTemp(t, "bad.json", "{\"messages\": [\n  {\"role\": \"user\", \"content\": \"hi\"},\n  {\"role\": \"assistant\", \"text\": \"hello\"}\n]}\n")
	code, _, errOut := cli(t, "replay", bad)
	wantError(t, code, errOut, 1, `bad.json:3: message 2: unknown field "text" (did you mean "content"?`)
}

func TestReplayRejectsUnknownFieldsAndOrphans(t *testing.T) {
	t.Parallel()
	unknownField := writeTemp(t, "text.jsonl", `{"role":"user","content":"hi"}
{"role":"assistant","text":"hello"}
`)
	orphan := writeTemp(t, "orphan.jsonl", `{"role":"user","content":"hi"}
{"role":"assistant","content":"","tool_calls":[{"id":"c1","name":"f","arguments":"{}"}]}
{"role":"tool","tool_call_id":"c1","content":"ok"}
{"role":"tool","tool_call_id":"c9","content":"stray"}
{"role":"user","content":"thanks"}
`)
	late := writeTemp(t, "late.jsonl", `{"role":"user","content":"hi"}
{"role":"assistant","content":"","tool_calls":[{"id":"c1","name":"f","arguments":"{}"}]}
{"role":"user","content":"well?"}
{"role":"tool","tool_call_id":"c1","content":"too late"}
`)
	arrayOrphan := writeTemp(t, "orphan.json", "[\n{\"role\":\"user\",\"content\":\"hi\"},\n{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"x\"}\n]")
	fineTuning := writeTemp(t, "ft.jsonl", `{"messages":[{"role":"user","content":"hi"}]}`+"\n")
	for _, c := range []struct {
		file, want string
	}{
		{unknownField, `text.jsonl:2: unknown field "text" (did you mean "content"? a message has role, content, tool_calls, tool_call_id, name, metadata)`},
		{orphan, `orphan.jsonl:4: orphan tool result: no assistant tool call "c9"`},
		{late, `late.jsonl:4: orphan tool result: no assistant tool call "c1"`},
		{arrayOrphan, `orphan.json:3: message 2: orphan tool result`},
		{fineTuning, `ft.jsonl:1: a {"messages": [...]} object`},
	} {
		code, out, errOut := cli(t, "replay", c.file)
		wantError(t, code, errOut, 1, c.want)
		if out != "" {
			t.Fatalf("stdout on error: %q", out)
		}
	}
}

func TestReplayNamesDanglingToolCalls(t *testing.T) {
	t.Parallel()
	file := writeTemp(t, "dangling.jsonl", `{"role":"user","content":"Look up Z-42"}
{"role":"assistant","content":"","tool_calls":[{"id":"c1","name":"lookup","arguments":"{}"}]}
{"role":"user","content":"Never mind. Hello?"}
{"role":"assistant","content":"Hello!"}
{"role":"user","content":"Bye"}
`)
	code, out, errOut := cli(t, "replay", file)
	if code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	if !strings.Contains(out, "left out 1 message(s) of a dangling tool call") {
		t.Fatalf("the report does not name the dangling tool call:\n%s", out)
	}
	if strings.Contains(out, "to fit the context window") {
		t.Fatalf("the dangling tool call is reported as dropped to fit:\n%s", out)
	}
}

func TestReplayFailsWhenEveryFoldFails(t *testing.T) {
	t.Parallel()
	// A port nothing listens on: the summarizer is unreachable.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	code, out, errOut := cli(t, "replay", "--json",
		"--set", "arc.reactor.memory.summarizer.provider=openai",
		"--set", "arc.reactor.memory.summarizer.base-url=http://"+addr+"/v1",
		"--set", "arc.reactor.memory.summarizer.timeout=5s",
		sample)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (stderr %q)", code, errOut)
	}
	last := errOut[strings.LastIndex(strings.TrimSuffix(errOut, "\n"), "\n")+1:]
	for _, want := range []string{"strata: replay: every fold failed", "provider openai", "base URL http://" + addr, "summarizer.provider=extractive"} {
		if !strings.Contains(last, want) {
			t.Errorf("last stderr line lacks %q: %q", want, last)
		}
	}
	if !strings.Contains(last, "failed to reach") && !strings.Contains(last, "connect") {
		t.Errorf("the error does not say why: %q", last)
	}
	if len(parseJSONLines(t, out)) != 30 {
		t.Errorf("the replay itself did not run to the end")
	}
}

func TestVersionCommand(t *testing.T) {
	t.Parallel()
	code, out, errOut := cli(t, "version")
	if code != 0 || errOut != "" || !strings.HasPrefix(out, "strata ") || !strings.Contains(out, runtime.Version()) {
		t.Fatalf("version: exit %d %q %q", code, out, errOut)
	}
	code, _, errOut = cli(t, "version", "extra")
	wantError(t, code, errOut, 2, `version: unexpected argument "extra"`)

	info := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "github.com/strata-go/strata", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}
	want := fmt.Sprintf("strata v1.2.3 (commit 0123456789ab, modified) go1.99.1 %s/%s", runtime.GOOS, runtime.GOARCH)
	if got := versionLine(info); got != want {
		t.Fatalf("versionLine = %q, want %q", got, want)
	}
	if got := versionLine(nil); !strings.HasPrefix(got, "strata (unknown) "+runtime.Version()) {
		t.Fatalf("versionLine(nil) = %q", got)
	}
}

func TestNegativeArguments(t *testing.T) {
	t.Parallel()
	// "-1" is force's argument, not a flag; without a database the
	// command gets as far as needing one.
	for _, args := range [][]string{{"migrate", "force", "-1"}, {"migrate", "--yes", "force", "-1"}} {
		code, _, errOut := cli(t, args...)
		wantError(t, code, errOut, 1, "migrate: no datasource configured")
	}
	code, _, errOut := cli(t, "migrate", "force", "-2")
	wantError(t, code, errOut, 2, "VERSION must be an integer >= -1")
	// A negative flag value stays the flag's.
	code, _, errOut = cli(t, "replay", "--json", "--width", "-5", sample)
	if code != 0 {
		t.Fatalf("--width -5: exit %d %s", code, errOut)
	}
}

func TestMissingTableSaysMigrateUp(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("load: %w", &pq.Error{Code: "42P01", Message: `relation "strata_sessions" does not exist`})
	if got := errorText(err); !strings.Contains(got, "run `strata migrate up`") {
		t.Fatalf("errorText = %q", got)
	}
	if got := errorText(fmt.Errorf("x: %w", db.ErrSchemaNotMigrated)); strings.Count(got, "strata migrate up") != 1 {
		t.Fatalf("errorText repeats the advice: %q", got)
	}
}

// TestUnmigratedDatabase: every command that reads a database without
// Strata's schema says to run strata migrate up.
func TestUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewEmptySchema(t)
	set := "arc.reactor.memory.datasource.url=" + schema.URL
	code, _, errOut := cli(t, "inspect", "--set", set, "--user", "u", "s1")
	wantError(t, code, errOut, 1, "run `strata migrate up`")
	code, _, errOut = cli(t, "replay", "--set", set, "--set", "arc.reactor.memory.datasource.migrate-on-start=false", sample)
	wantError(t, code, errOut, 1, "run `strata migrate up`")
}

// TestMigrateFailureAndForce drives the recovery the messages give through
// the command line: force -1 records "none", the migration that then fails
// prints the statement that failed and the force command, and forcing the
// version the schema is really at recovers.
func TestMigrateFailureAndForce(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewEmptySchema(t)
	set := "arc.reactor.memory.datasource.url=" + schema.URL
	if code, _, errOut := cli(t, "migrate", "up", "--set", set); code != 0 {
		t.Fatalf("up: %d %s", code, errOut)
	}
	code, out, errOut := cli(t, "migrate", "force", "-1", "--set", set)
	if code != 0 || out != "schema version: none (no migration applied)\n" {
		t.Fatalf("force -1: exit %d %q %q", code, out, errOut)
	}
	// The tables are still there: migrating from "none" fails on the first.
	code, out, errOut = cli(t, "migrate", "--set", set, "up")
	wantError(t, code, errOut, 1, "000001_init.up.sql failed at line")
	for _, want := range []string{`failed statement: CREATE TABLE strata_sessions (`, "`strata migrate force -1`", "`strata migrate up`"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q: %s", want, errOut)
		}
	}
	if strings.Contains(errOut, "CREATE TABLE strata_messages") || strings.Contains(errOut, "-- ") {
		t.Errorf("stderr quotes more than the failed statement: %s", errOut)
	}
	if out != "" {
		t.Errorf("stdout on error: %q", out)
	}
	code, out, _ = cli(t, "migrate", "version", "--set", set)
	if code != 0 || !strings.Contains(out, "schema version: 1 (the schema is recorded as dirty at version 1") || !strings.Contains(out, "`strata migrate force -1`") {
		t.Fatalf("version when dirty: exit %d %q", code, out)
	}
	code, _, errOut = cli(t, "migrate", "up", "--set", set)
	wantError(t, code, errOut, 1, "recorded as dirty at version 1")
	// The schema really is at the latest version.
	latest := fmt.Sprint(db.LatestMigration())
	code, out, errOut = cli(t, "migrate", "force", latest, "--set", set)
	if code != 0 || out != "schema version: "+latest+"\n" {
		t.Fatalf("force %s: exit %d %q %q", latest, code, out, errOut)
	}
	if code, out, errOut := cli(t, "migrate", "up", "--set", set); code != 0 || out != "schema version: "+latest+"\n" {
		t.Fatalf("up after the recovery: exit %d %q %q", code, out, errOut)
	}
}

// TestDatabaseURLFallback sets the process environment, so it does not run
// in parallel.
func TestDatabaseURLFallback(t *testing.T) {
	schema := dbtest.NewSchema(t)
	t.Setenv(envDatabaseURL, schema.URL)
	code, out, errOut := cli(t, "migrate", "version")
	if code != 0 || out != fmt.Sprintf("schema version: %d\n", db.LatestMigration()) {
		t.Fatalf("migrate version with DATABASE_URL: exit %d %q %q", code, out, errOut)
	}
	code, out, errOut = cli(t, "config")
	if code != 0 || !strings.Contains(out, "(from $DATABASE_URL)") || !strings.Contains(out, "environment variable DATABASE_URL (no datasource configured)") {
		t.Fatalf("config with DATABASE_URL: exit %d %s\n%s", code, errOut, out)
	}
	if strings.Contains(out, "password") && strings.Contains(schema.URL, "password=") {
		t.Fatal("config prints the password")
	}
	// A configured datasource wins.
	t.Setenv(envDatabaseURL, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1")
	code, out, errOut = cli(t, "migrate", "version", "--set", "arc.reactor.memory.datasource.url="+schema.URL)
	if code != 0 || !strings.HasPrefix(out, "schema version: ") {
		t.Fatalf("configured datasource with DATABASE_URL set: exit %d %q %q", code, out, errOut)
	}
	code, out, _ = cli(t, "config", "--set", "arc.reactor.memory.datasource.url=")
	if code != 0 || !strings.Contains(out, "stores: PostgreSQL") {
		// An empty configured URL counts as configured only when set.
		t.Logf("config with an empty datasource: %s", out)
	}
	t.Setenv(envDatabaseURL, "mysql://x")
	code, _, errOut = cli(t, "migrate", "version")
	wantError(t, code, errOut, 1, "DATABASE_URL")
}

// TestReplayIgnoresDatabaseURL sets the process environment, so it does not
// run in parallel: a DATABASE_URL set for other tools does not send the
// README's first command into a database.
func TestReplayIgnoresDatabaseURL(t *testing.T) {
	t.Setenv(envDatabaseURL, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1")
	code, out, errOut := cli(t, "replay", sample)
	if code != 0 || !strings.Contains(out, "\nstore: in-memory") {
		t.Fatalf("replay with DATABASE_URL set: exit %d %s\n%.400s", code, errOut, out)
	}
}
