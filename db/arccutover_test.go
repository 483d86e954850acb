package db_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// cutoverManager is a manager over Strata's stores on d, with shared
// the shared-session prefixes.
func cutoverManager(t *testing.T, d *sqlx.DB, shared ...string) *memory.Manager {
	t.Helper()
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	cfg.SharedSessionPrefixes = shared
	svc := summary.ServiceFunc(func(context.Context, summary.Request) (summary.Result, error) {
		return summary.Result{}, errors.New("no fold during a cut-over test")
	})
	m, err := memory.NewManager(db.NewMessageStore(d), cfg, memory.WithSummaries(db.NewSummaryStore(d), svc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// arcInsert writes one conversation_messages row as arc-reactor's
// JdbcMemoryStore does, and returns its id.
func arcInsert(t *testing.T, ctx context.Context, d *sqlx.DB, session, role, content, user string, ms int64) int64 {
	t.Helper()
	var id int64
	if err := d.GetContext(ctx, &id, `INSERT INTO conversation_messages (session_id, role, content, timestamp, user_id)
		VALUES ($1, $2, $3, $4, $5) RETURNING id`, session, role, content, ms, user); err != nil {
		t.Fatal(err)
	}
	return id
}

// wantHistory checks a session's messages: contents in order, each with
// its arc-reactor row id and author as metadata.
func wantHistory(t *testing.T, ctx context.Context, m *memory.Manager, session, user string, want []string, authors []string) []store.Message {
	t.Helper()
	msgs, err := m.Messages(ctx, session, user, 0, 0)
	if err != nil {
		t.Fatalf("%s read by %s: %v", session, user, err)
	}
	var got []string
	for _, msg := range msgs {
		got = append(got, msg.Content)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s = %q\nwant %q", session, got, want)
	}
	for i, msg := range msgs {
		if msg.Metadata[db.MetadataArcReactorUser] != authors[i] || msg.Metadata[db.MetadataArcReactorID] == "" {
			t.Fatalf("%s[%d] metadata %v, want author %s and a row id", session, i, msg.Metadata, authors[i])
		}
	}
	return msgs
}

// The cut-over: import while arc-reactor runs, arc-reactor writes more,
// the import runs again and adds exactly the new rows, in order, with
// their authors — none twice, not even from two runs at once, and not a
// message erased in Strata meanwhile; a thread imported under its first
// author is re-homed as shared once the prefix is set, and both authors
// read it; a session deleted in Strata stays deleted. arc-reactor's
// TIMESTAMP columns, written in the JVM's zone, keep their instant with
// TimeZone.
func TestImportArcReactorCutover(t *testing.T) {
	t.Parallel()
	s := dbtest.NewEmptySchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := testCtx(t)
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
	mustExec(t, ctx, d, dbtest.ArcReactorSchema)
	arcInsert(t, ctx, d, "web-1", "user", "w1", "alice", 1_700_000_000_001)
	arcInsert(t, ctx, d, "slack-T", "user", "s1", "carol", 1_700_000_000_002)
	arcInsert(t, ctx, d, "web-1", "assistant", "w2", "alice", 1_700_000_000_003)
	arcInsert(t, ctx, d, "slack-T", "user", "s2", "dave", 1_700_000_000_004)
	arcInsert(t, ctx, d, "web-1", "user", "w3", "alice", 1_700_000_000_005)
	// arc-reactor's JVM ran in Seoul: its summary's created_at is Seoul's
	// wall-clock time.
	mustExec(t, ctx, d, `INSERT INTO conversation_summaries (session_id, narrative, facts_json, summarized_up_to, created_at, updated_at)
		VALUES ('web-1', 'Alice said w1.', '[]', 1, '2026-03-01 18:30:00', '2026-03-01 18:45:00')`)
	seoul := time.FixedZone("KST", 9*3600)

	m := cutoverManager(t, d)
	dry, err := db.ImportArcReactor(ctx, d, m, db.ArcReactorImportOptions{DryRun: true, TimeZone: seoul})
	if err != nil || dry.Imported != 2 || len(dry.SeveralUsers) != 1 || dry.SeveralUsers[0].SessionID != "slack-T" || dry.SeveralUsers[0].Shared {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	res, err := db.ImportArcReactor(ctx, d, m, db.ArcReactorImportOptions{TimeZone: seoul})
	if err != nil || res.Imported != 2 || res.Messages != 5 {
		t.Fatalf("import = %+v, %v", res, err)
	}
	sum, err := m.Summary(ctx, "web-1", "alice")
	if err != nil || sum == nil || !sum.CreatedAt.Equal(time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)) || !sum.UpdatedAt.After(sum.CreatedAt) {
		t.Fatalf("summary %+v, %v: created_at is not 18:30 in Seoul (09:30 UTC)", sum, err)
	}
	msgs := wantHistory(t, ctx, m, "web-1", "alice", []string{"w1", "w2", "w3"}, []string{"alice", "alice", "alice"})
	wantHistory(t, ctx, m, "slack-T", "carol", []string{"s1", "s2"}, []string{"carol", "dave"})

	// arc-reactor writes on; Strata erases w3 meanwhile.
	if err := m.Forget(ctx, "web-1", "alice", msgs[2].Seq); err != nil {
		t.Fatal(err)
	}
	arcInsert(t, ctx, d, "web-1", "assistant", "w4", "alice", 1_700_000_000_006)
	arcInsert(t, ctx, d, "slack-T", "assistant", "s3", "dave", 1_700_000_000_007)
	arcInsert(t, ctx, d, "web-1", "user", "w5 (a failed turn: no answer)", "alice", 1_700_000_000_008)

	dry, err = db.ImportArcReactor(ctx, d, m, db.ArcReactorImportOptions{DryRun: true})
	if err != nil || fmt.Sprint(dry.Updated) != "[{slack-T 1} {web-1 2}]" {
		t.Fatalf("dry re-run = %+v, %v", dry, err)
	}
	// Two runs at once add each row once.
	var wg sync.WaitGroup
	results := make([]db.ArcReactorImport, 2)
	errs := make([]error, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = db.ImportArcReactor(ctx, d, cutoverManager(t, d), db.ArcReactorImportOptions{})
		}()
	}
	wg.Wait()
	added := 0
	for i, r := range results {
		if errs[i] != nil || r.Imported != 0 || len(r.Failed) != 0 {
			t.Fatalf("concurrent re-run %d = %+v, %v", i, r, errs[i])
		}
		for _, u := range r.Updated {
			added += u.Added
		}
	}
	if added != 3 {
		t.Fatalf("the two re-runs added %d messages, want 3: %+v", added, results)
	}
	wantHistory(t, ctx, m, "web-1", "alice", []string{"w1", "w2", "w4", "w5 (a failed turn: no answer)"}, []string{"alice", "alice", "alice", "alice"})
	wantHistory(t, ctx, m, "slack-T", "carol", []string{"s1", "s2", "s3"}, []string{"carol", "dave", "dave"})
	if n, err := m.Count(ctx, "web-1", "alice"); err != nil || n != 4 {
		t.Fatalf("web-1's count = %d, %v", n, err)
	}

	// The thread's prefix is declared shared: the next run re-homes it,
	// and both its authors read it.
	shared := cutoverManager(t, d, "slack-")
	if _, err := shared.Messages(ctx, "slack-T", "dave", 0, 0); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("before the re-run, the shared thread is read as %v", err)
	}
	res, err = db.ImportArcReactor(ctx, d, shared, db.ArcReactorImportOptions{})
	if err != nil || fmt.Sprint(res.Rehomed) != "[slack-T]" || res.Current != 2 || len(res.Updated) != 0 || !res.SeveralUsers[0].Shared {
		t.Fatalf("re-run with the prefix = %+v, %v", res, err)
	}
	for _, u := range []string{"carol", "dave"} {
		msgs := wantHistory(t, ctx, shared, "slack-T", u, []string{"s1", "s2", "s3"}, []string{"carol", "dave", "dave"})
		for i, want := range []string{"carol", "dave", "dave"} {
			if msgs[i].UserID != want {
				t.Fatalf("the shared thread's message %d is recorded as %q's, want its author %q", i, msgs[i].UserID, want)
			}
		}
	}
	if err := shared.SaveTurn(ctx, "slack-T", "dave", "s4 in Strata", "ok"); err != nil {
		t.Fatalf("dave writes in the shared thread: %v", err)
	}

	// web-1 is deleted in Strata: a re-run does not bring it back.
	if err := m.DeleteSession(ctx, "web-1", "alice"); err != nil {
		t.Fatal(err)
	}
	res, err = db.ImportArcReactor(ctx, d, shared, db.ArcReactorImportOptions{})
	if err != nil || res.Deleted != 1 || res.Imported != 0 || res.Current != 1 {
		t.Fatalf("re-run after a delete = %+v, %v", res, err)
	}
	if _, err := m.Count(ctx, "web-1", "alice"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("web-1 came back: %v", err)
	}
	// Created anew in Strata under the same id, it receives none of
	// arc-reactor's rows, old or new.
	if err := m.SaveTurn(ctx, "web-1", "alice", "a fresh start", "ok"); err != nil {
		t.Fatal(err)
	}
	arcInsert(t, ctx, d, "web-1", "user", "w6", "alice", 1_700_000_000_009)
	res, err = db.ImportArcReactor(ctx, d, shared, db.ArcReactorImportOptions{})
	if err != nil || res.Deleted != 1 || len(res.Updated) != 0 {
		t.Fatalf("re-run after a re-creation = %+v, %v", res, err)
	}
	if msgs, err := m.Messages(ctx, "web-1", "alice", 0, 0); err != nil || len(msgs) != 2 || msgs[0].Content != "a fresh start" {
		t.Fatalf("the re-created web-1 = %+v, %v", msgs, err)
	}
}

// A thread whose prefix is shared before the first import is imported as
// shared, each message recorded as its author's, and a later row of a new
// author is too.
func TestImportArcReactorSharedThread(t *testing.T) {
	t.Parallel()
	s := dbtest.NewEmptySchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := testCtx(t)
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
	mustExec(t, ctx, d, dbtest.ArcReactorSchema)
	arcInsert(t, ctx, d, "slack-U", "user", "u1", "erin", 1_700_000_000_001)
	arcInsert(t, ctx, d, "slack-U", "user", "u2", "finn", 1_700_000_000_002)
	m := cutoverManager(t, d, "slack-")
	if res, err := db.ImportArcReactor(ctx, d, m, db.ArcReactorImportOptions{}); err != nil || res.Imported != 1 || !res.SeveralUsers[0].Shared {
		t.Fatalf("import = %+v, %v", res, err)
	}
	arcInsert(t, ctx, d, "slack-U", "user", "u3", "gus", 1_700_000_000_003)
	if res, err := db.ImportArcReactor(ctx, d, m, db.ArcReactorImportOptions{}); err != nil || fmt.Sprint(res.Updated) != "[{slack-U 1}]" {
		t.Fatalf("re-run = %+v, %v", res, err)
	}
	for _, reader := range []string{"erin", "finn", "gus"} {
		msgs := wantHistory(t, ctx, m, "slack-U", reader, []string{"u1", "u2", "u3"}, []string{"erin", "finn", "gus"})
		for i, want := range []string{"erin", "finn", "gus"} {
			if msgs[i].UserID != want {
				t.Fatalf("message %d is recorded as %q's, want %q", i, msgs[i].UserID, want)
			}
		}
	}
}

// A session imported by a Strata that kept no record of the import (no
// row id metadata, no strata_arc_reactor_imports row) is recognised by
// its messages being arc-reactor's first rows, and brought up to date.
func TestImportArcReactorAdoptsAnEarlierImport(t *testing.T) {
	t.Parallel()
	s := dbtest.NewEmptySchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := testCtx(t)
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
	mustExec(t, ctx, d, dbtest.ArcReactorSchema)
	arcInsert(t, ctx, d, "old", "user", "o1", "olga", 1_700_000_000_001)
	arcInsert(t, ctx, d, "old", "assistant", "o2", "olga", 1_700_000_000_002)
	arcInsert(t, ctx, d, "mine", "user", "m1", "mia", 1_700_000_000_003)
	m := cutoverManager(t, d)
	if err := m.SaveTurn(ctx, "old", "olga", "o1", "o2"); err != nil { // as the earlier import left it
		t.Fatal(err)
	}
	if err := m.SaveTurn(ctx, "mine", "mia", "something else", ""); err != nil { // Strata's own
		t.Fatal(err)
	}
	arcInsert(t, ctx, d, "old", "user", "o3", "olga", 1_700_000_000_004)
	res, err := db.ImportArcReactor(ctx, d, m, db.ArcReactorImportOptions{})
	if err != nil || fmt.Sprint(res.Updated) != "[{old 1}]" || res.Existing != 1 {
		t.Fatalf("import = %+v, %v", res, err)
	}
	msgs, err := m.Messages(ctx, "old", "olga", 0, 0)
	if err != nil || len(msgs) != 3 || msgs[2].Content != "o3" {
		t.Fatalf("old = %+v, %v", msgs, err)
	}
	if msgs, err := m.Messages(ctx, "mine", "mia", 0, 0); err != nil || len(msgs) != 1 {
		t.Fatalf("Strata's own session changed: %+v, %v", msgs, err)
	}
}

// Randomized cut-overs (seeded; the seed is printed): arc-reactor writes
// to a few sessions, its eviction keeping only each session's newest rows,
// and the import runs at random moments, Strata erasing a message now and
// then. After every run each Strata session holds exactly the rows a
// model of the import says: those present in arc-reactor at some run after
// the last row imported before it, in id order, once each, minus the
// erased ones.
func TestImportArcReactorRandomizedCutover(t *testing.T) {
	t.Parallel()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	s := dbtest.NewEmptySchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := testCtx(t)
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
	mustExec(t, ctx, d, dbtest.ArcReactorSchema)
	m := cutoverManager(t, d)
	const keep = 6
	sessions := []string{"r-a", "r-b", "r-c"}
	owners := map[string]string{"r-a": "ann", "r-b": "ben", "r-c": "cat"}
	type row struct {
		id      int64
		content string
	}
	arc := map[string][]row{}     // what arc-reactor holds
	want := map[string][]string{} // the model of Strata's sessions
	last := map[string]int64{}    // newest row imported per session
	erased := map[string]bool{}
	n := 0
	for step := 0; step < 60; step++ {
		switch r := rng.IntN(10); {
		case r < 7: // arc-reactor writes
			sess := sessions[rng.IntN(len(sessions))]
			n++
			content := fmt.Sprintf("%s row %d", sess, n)
			var id int64
			tx := d.MustBegin()
			if err := tx.GetContext(ctx, &id, `INSERT INTO conversation_messages (session_id, role, content, timestamp, user_id)
				VALUES ($1, $2, $3, $4, $5) RETURNING id`, sess, []string{"user", "assistant"}[n%2], content, 1_700_000_000_000+int64(n), owners[sess]); err != nil {
				t.Fatal(err)
			}
			tx.MustExec(`DELETE FROM conversation_messages WHERE session_id = $1 AND id NOT IN
				(SELECT id FROM conversation_messages WHERE session_id = $1 ORDER BY id DESC LIMIT $2)`, sess, keep)
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			arc[sess] = append(arc[sess], row{id, content})
			if len(arc[sess]) > keep {
				arc[sess] = arc[sess][len(arc[sess])-keep:]
			}
		case r < 9: // the import runs
			if _, err := db.ImportArcReactor(ctx, d, m, db.ArcReactorImportOptions{}); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			for _, sess := range sessions {
				for _, r := range arc[sess] {
					if r.id > last[sess] {
						want[sess] = append(want[sess], r.content)
						last[sess] = r.id
					}
				}
			}
		default: // Strata erases one imported message
			sess := sessions[rng.IntN(len(sessions))]
			msgs, err := m.Messages(ctx, sess, owners[sess], 0, 0)
			if errors.Is(err, store.ErrNotFound) || len(msgs) == 0 {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			victim := msgs[rng.IntN(len(msgs))]
			if err := m.Forget(ctx, sess, owners[sess], victim.Seq); err != nil {
				t.Fatal(err)
			}
			erased[victim.Content] = true
		}
		for _, sess := range sessions {
			var expect []string
			for _, c := range want[sess] {
				if !erased[c] {
					expect = append(expect, c)
				}
			}
			msgs, err := m.Messages(ctx, sess, owners[sess], 0, 0)
			if errors.Is(err, store.ErrNotFound) && len(want[sess]) == 0 {
				continue
			}
			if err != nil {
				t.Fatalf("seed %d step %d: %s: %v", seed, step, sess, err)
			}
			var got []string
			for _, msg := range msgs {
				got = append(got, msg.Content)
			}
			if fmt.Sprint(got) != fmt.Sprint(expect) {
				t.Fatalf("seed %d step %d: %s = %q\nwant %q", seed, step, sess, got, expect)
			}
		}
	}
}

// arc-reactor before its summary table (V20): only conversation_messages.
// Each session is counted, imported and reported once.
func TestImportArcReactorWithoutSummaryTable(t *testing.T) {
	t.Parallel()
	s := dbtest.NewEmptySchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := testCtx(t)
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
	mustExec(t, ctx, d, dbtest.ArcReactorSchema, `DROP TABLE conversation_summaries`)
	for i, sess := range []string{"x", "y", "x", "y", "x"} {
		arcInsert(t, ctx, d, sess, "user", fmt.Sprintf("%s %d", sess, i), "u-"+sess, 1_700_000_000_000+int64(i))
	}
	if n, err := db.ArcReactorSessions(ctx, d); err != nil || n != 2 {
		t.Fatalf("ArcReactorSessions = %d, %v; want 2", n, err)
	}
	m := cutoverManager(t, d)
	res, err := db.ImportArcReactor(ctx, d, m, db.ArcReactorImportOptions{})
	if err != nil || res.Sessions != 2 || res.Imported != 2 || res.Messages != 5 {
		t.Fatalf("import = %+v, %v", res, err)
	}
	res, err = db.ImportArcReactor(ctx, d, m, db.ArcReactorImportOptions{})
	if err != nil || res.Current != 2 || res.Imported != 0 {
		t.Fatalf("re-run = %+v, %v", res, err)
	}
}
