package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

// talk fills two sessions of alice, first and second, whose turns
// interleave, so that on PostgreSQL the seqs of second are neither 1…N nor
// consecutive.
func talk(t *testing.T, m *memory.Manager) {
	t.Helper()
	ctx := context.Background()
	for i := 1; i <= 4; i++ {
		for _, s := range []string{"first", "second"} {
			if err := m.SaveTurn(ctx, s, "alice", fmt.Sprintf("%s small talk number %d", s, i), fmt.Sprintf("%s answer %d", s, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// shownSeq is the number inspect's text output shows for the message
// whose content is text.
func shownSeq(t *testing.T, out, text string) int64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s+\d+\s+\S?\s+#(\d+)\s+\w+\s+` + regexp.QuoteMeta(text) + `$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("inspect does not show %q:\n%s", text, out)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// wantErased checks that of both sessions exactly the message gone went.
func wantErased(t *testing.T, m *memory.Manager, gone string) {
	t.Helper()
	for _, s := range []string{"first", "second"} {
		msgs, err := m.Messages(context.Background(), s, "alice", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := 8
		if s == "second" {
			want = 7
		}
		if len(msgs) != want {
			t.Fatalf("%s holds %d messages, want %d", s, len(msgs), want)
		}
		for _, msg := range msgs {
			if msg.Content == gone {
				t.Fatalf("%q is still in %s", gone, s)
			}
		}
	}
}

// inspect → forget erases exactly the message inspect showed, on
// PostgreSQL: the number on the line is the one strata forget takes.
// Seqs are per session and never reused for an id, so the session
// "second", whose id held ten messages before (deleted since), numbers
// its messages from 11 on, not 1…N. A seq of another session, or of the
// id's deleted predecessor, is a clear error that erases nothing.
func TestInspectThenForgetPostgres(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewSchema(t)
	set := "arc.reactor.memory.datasource.url=" + schema.URL
	m := pgManager(t, schema.URL)
	ctx := context.Background()
	for i := range 5 {
		if err := m.SaveTurn(ctx, "second", "alice", fmt.Sprintf("earlier %d", i), "earlier answer"); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.DeleteSession(ctx, "second", "alice"); err != nil {
		t.Fatal(err)
	}
	talk(t, m)
	code, out, errOut := cli(t, "inspect", "--set", set, "--user", "alice", "second")
	if code != 0 {
		t.Fatalf("inspect: exit %d %s", code, errOut)
	}
	seq := shownSeq(t, out, "second small talk number 3")
	if seq == 5 {
		t.Fatalf("inspect shows the message's place in the session (5), not its seq:\n%s", out)
	}
	other := shownSeq(t, mustInspect(t, set, "first"), "first answer 4")
	code, _, errOut = cli(t, "forget", "--set", set, "--user", "alice", "second", fmt.Sprint(other))
	wantError(t, code, errOut, 1, fmt.Sprintf("seq %d is not a message of session second", other))
	code, _, errOut = cli(t, "forget", "--set", set, "--user", "alice", "second", "3")
	wantError(t, code, errOut, 1, "seq 3 is not a message of session second")
	code, out, errOut = cli(t, "forget", "--set", set, "--user", "alice", "second", fmt.Sprint(seq))
	if code != 0 || out != "erased 1 message of session second\n" {
		t.Fatalf("forget: exit %d %q %q", code, out, errOut)
	}
	wantErased(t, m, "second small talk number 3")
}

func mustInspect(t *testing.T, set, session string) string {
	t.Helper()
	code, out, errOut := cli(t, "inspect", "--set", set, "--user", "alice", session)
	if code != 0 {
		t.Fatalf("inspect: exit %d %s", code, errOut)
	}
	return out
}

// The same on the in-memory store: what inspect prints for a message is
// what Forget (strata forget's call) erases.
func TestInspectThenForgetInMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, err := memory.NewManager(memory.NewInMemoryStore(), memory.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	talk(t, m)
	rep, err := inspect(ctx, m, m, "second", "alice")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	printInspect(&out, rep)
	seq := shownSeq(t, out.String(), "second answer 2")
	if err := m.Forget(ctx, "second", "alice", shownSeq(t, out.String(), "second answer 2")+1000); !errors.Is(err, store.ErrUnknownMessage) {
		t.Fatalf("forget of a seq the session lacks: %v", err)
	}
	if err := m.Forget(ctx, "second", "alice", seq); err != nil {
		t.Fatal(err)
	}
	wantErased(t, m, "second answer 2")
}

// strata migrate version only reads: it answers through PgBouncer in
// transaction mode, where migrate up is refused with the direct-URL hint.
func TestMigrateVersionThroughPooler(t *testing.T) {
	t.Parallel()
	p := dbtest.NewPooled(t)
	set := "arc.reactor.memory.datasource.url=" + p.PooledURL
	code, out, errOut := cli(t, "migrate", "version", "--set", set)
	if code != 0 || out != fmt.Sprintf("schema version: %d\n", db.LatestMigration()) {
		t.Fatalf("migrate version through the pooler: exit %d %q %q", code, out, errOut)
	}
	code, _, errOut = cli(t, "migrate", "up", "--set", set)
	wantError(t, code, errOut, 1, "connection pooler")
}

// An error wrapped by several packages names each package once.
func TestErrorsDoNotRepeatPrefixes(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("inspect: %w", fmt.Errorf("memory: load %q: %w", "s", fmt.Errorf("db: snapshot %q: %w", "s", store.ErrNotOwner)))
	if got, want := errorText(err), `inspect: memory: load "s": db: snapshot "s": session is owned by another user`; got != want {
		t.Fatalf("errorText = %q, want %q", got, want)
	}
	if got := errorText(errors.New(`import: line 3: session "memory: db: x": memory: bad`)); got != `import: line 3: session "memory: db: x": memory: bad` {
		t.Fatalf("errorText changed a quoted id or a first prefix: %q", got)
	}
	schema := dbtest.NewSchema(t)
	m := pgManager(t, schema.URL)
	talk(t, m)
	for _, args := range [][]string{{"export", "--user", "bob", "first"}, {"forget", "--user", "bob", "first", "1"}, {"inspect", "--user", "bob", "first"}} {
		code, _, errOut := cli(t, append(args, "--set", "arc.reactor.memory.datasource.url="+schema.URL)...)
		wantError(t, code, errOut, 1, "owned by another user")
		for _, p := range []string{"memory: ", "db: "} {
			if strings.Count(errOut, p) > 1 {
				t.Errorf("%v: %q repeats %q", args, errOut, p)
			}
		}
	}
}
