package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/trimmer"
)

// The shared third-party data lives next to the repository, never in it.
const (
	tauBenchFile = "../../../shared/data/taubench_airline/gpt-4o-airline.json"
	locomoFile   = "../../../shared/data/locomo/locomo10.json"
)

func requireData(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s not available (the shared data directory ../shared/data is absent): %v", path, err)
	}
}

func TestReplayTauBench(t *testing.T) {
	t.Parallel()
	requireData(t, tauBenchFile)
	code, out, errOut := cli(t, "replay", "--json", "--sample", "task:5/trial:1", tauBenchFile)
	if code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	lines := parseJSONLines(t, out)
	if len(lines) < 3 {
		t.Fatalf("%d lines", len(lines))
	}
	sawTool := false
	for _, l := range lines[:len(lines)-1] {
		if l.Context[0].Role != "system" || !strings.Contains(l.Context[0].Content, "airline") {
			t.Fatalf("turn %d: the τ-bench system prompt is not first", *l.Turn)
		}
		for _, m := range l.Context {
			if m.Role == "tool" {
				sawTool = true
			}
		}
		if err := trimmer.Validate(toChat(l.Context)); err != nil {
			t.Fatalf("turn %d: %v", *l.Turn, err)
		}
	}
	if !sawTool {
		t.Fatal("no tool result reached the context")
	}
	s := lines[len(lines)-1].Summary
	if s == nil || s.Session != "replay:task-5-trial-1" {
		t.Fatalf("summary = %+v", s)
	}

	// The readable report names the sample.
	code, out, errOut = cli(t, "replay", "--sample", "7", tauBenchFile)
	if code != 0 || !strings.Contains(out, "(taubench: task-") || !strings.Contains(out, "══ final:") {
		t.Fatalf("report: exit %d %s\n%.300s", code, errOut, out)
	}
}

func TestReplayTauBenchAll(t *testing.T) {
	t.Parallel()
	requireData(t, tauBenchFile)
	if testing.Short() {
		t.Skip("replays all 200 trajectories")
	}
	// The chunked policy keeps this fast under the race detector; parity
	// on τ-bench is exercised by TestReplayTauBench.
	code, out, errOut := cli(t, "replay", "--json", "--sample", "all", "--set", "arc.reactor.memory.policy.name=chunked", tauBenchFile)
	if code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	summaries, folds := 0, 0
	for _, l := range parseJSONLines(t, out) {
		if l.Summary != nil {
			summaries++
			folds += int(l.Summary.Folds)
			if l.Summary.Sample == "" {
				t.Fatal("summary line without its sample")
			}
		}
	}
	if summaries != 200 || folds == 0 {
		t.Fatalf("%d summaries, %d folds", summaries, folds)
	}
}

func TestReplayLoCoMo(t *testing.T) {
	t.Parallel()
	requireData(t, locomoFile)
	// The chunked policy keeps this fast under the race detector; parity
	// is exercised on the sample and τ-bench.
	code, out, errOut := cli(t, "replay", "--json", "--sample", "conv-30",
		"--set", "arc.reactor.memory.policy.name=chunked", locomoFile)
	if code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	lines := parseJSONLines(t, out)
	s := lines[len(lines)-1].Summary
	if s == nil || s.Session != "replay:conv-30" || s.StoredMessages != 369 || s.Folds == 0 || len(s.Facts) == 0 {
		t.Fatalf("summary = %+v", s)
	}
	// conv-30 opens with speaker_b (the assistant side), whose message is
	// stored before the first user turn, prefixed with the session's date.
	first := lines[0].Context
	if len(first) != 2 || first[0].Role != "assistant" || !strings.HasPrefix(first[0].Content, "[") || first[1].Role != "user" {
		t.Fatalf("first turn: %+v", first)
	}
	hier := false
	for _, l := range lines[:len(lines)-1] {
		if l.Mode == "hierarchical" {
			hier = true
			break
		}
	}
	if !hier {
		t.Fatal("never hierarchical")
	}
	// Samples by index; a bad index is one clear line.
	code, _, errOut = cli(t, "replay", "--json", "--sample", "10", locomoFile)
	wantError(t, code, errOut, 1, "--sample 10 out of range (0–9)")
}

func TestMigrateAndInspect(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewEmptySchema(t)
	set := "arc.reactor.memory.datasource.url=" + schema.URL

	code, out, errOut := cli(t, "migrate", "version", "--set", set)
	if code != 0 || !strings.Contains(out, "schema version: none") {
		t.Fatalf("version: exit %d %q %q", code, out, errOut)
	}
	latest := fmt.Sprintf("schema version: %d", db.LatestMigration())
	code, out, errOut = cli(t, "migrate", "up", "--set", set)
	if code != 0 || !strings.Contains(out, latest) {
		t.Fatalf("up: exit %d %q %q", code, out, errOut)
	}
	code, out, _ = cli(t, "migrate", "up", "--set", set) // idempotent
	if code != 0 || !strings.Contains(out, latest) {
		t.Fatalf("second up: exit %d %q", code, out)
	}
	// distribute needs Citus: on plain PostgreSQL it says so and fails.
	code, _, errOut = cli(t, "migrate", "distribute", "--set", set)
	wantError(t, code, errOut, 1, "the citus extension is not installed")

	// Replay into PostgreSQL, then inspect the stored session.
	code, _, errOut = cli(t, "replay", "--json", "--set", set, "--session", "support-1", "--user", "priya", sample)
	if code != 0 {
		t.Fatalf("replay: exit %d %s", code, errOut)
	}
	code, _, errOut = cli(t, "replay", "--json", "--set", set, "--session", "support-1", "--user", "priya", sample)
	wantError(t, code, errOut, 1, `session "support-1" already holds 62 messages`)
	// Another user's session is neither counted nor deleted.
	code, _, errOut = cli(t, "replay", "--json", "--reset", "--set", set, "--session", "support-1", sample)
	wantError(t, code, errOut, 1, `session "support-1" belongs to another user`)
	code, _, errOut = cli(t, "replay", "--json", "--reset", "--set", set, "--session", "support-1", "--user", "priya", sample)
	if code != 0 {
		t.Fatalf("replay --reset: exit %d %s", code, errOut)
	}

	code, out, errOut = cli(t, "inspect", "--set", set, "--user", "priya", "support-1")
	if code != 0 {
		t.Fatalf("inspect: exit %d %s", code, errOut)
	}
	for _, want := range []string{"session:  support-1", "owner:    priya", "messages: 62", "cursor:   #", " of 62; summary version",
		"- order_id: #BL-58213 [ENTITY]", "narrative:", "what the model sees (take-last, 20 messages):", "   20   #",
		"#N = the message's seq, the number strata forget takes"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect lacks %q:\n%s", want, out)
		}
	}
	// With summaries on, what the model sees is the facts and narrative
	// blocks and the verbatim window, numbered: Manager.Load's messages.
	code, out, errOut = cli(t, "inspect", "--json", "--set", set, "--set", "arc.reactor.memory.summary.enabled=true", "--user", "priya", "support-1")
	if code != 0 {
		t.Fatalf("inspect --json: exit %d %s", code, errOut)
	}
	var rep inspectReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Mode != "hierarchical" || len(rep.Prompt) != 12 || rep.Summary == nil || rep.Summary.Cursor == 0 || rep.Prompt[11].Seq <= rep.Summary.Cursor {
		t.Fatalf("inspect --json = %+v", rep)
	}
	if !strings.HasPrefix(rep.Prompt[0].Text, "Conversation Facts:") || !strings.HasPrefix(rep.Prompt[1].Text, "Conversation Summary:") || rep.Prompt[0].Seq != 0 {
		t.Fatalf("the prompt does not start with the facts and narrative blocks: %+v", rep.Prompt[:2])
	}
	for i, m := range rep.Prompt[2:] {
		if m.Position != i+3 || m.Seq <= rep.Prompt[i+1].Seq {
			t.Fatalf("prompt message %d is at %d, seq %d; want %d, seqs increasing", i+3, m.Position, m.Seq, i+3)
		}
	}
	if c := rep.Summary.Folded; c < 1 || c > 62 {
		t.Fatalf("the summary folds %d messages, not a number within the session", c)
	}
	if strings.Contains(out, "extractedAt") || !strings.Contains(out, `"extracted_at"`) {
		t.Fatalf("inspect --json does not name the facts' fields as strata export does:\n%s", out)
	}
	code, _, errOut = cli(t, "inspect", "--set", set, "--user", "mallory", "support-1")
	wantError(t, code, errOut, 1, "owned by another user")
	code, _, errOut = cli(t, "inspect", "--set", set, "--user", "priya", "nope")
	wantError(t, code, errOut, 1, `session "nope" not found`)

	code, out, errOut = cli(t, "migrate", "down", "--yes", "--set", set)
	if code != 0 || !strings.Contains(out, "schema version: none") {
		t.Fatalf("down: exit %d %q %q", code, out, errOut)
	}
}
