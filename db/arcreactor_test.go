package db_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// arcReactorV20 is arc-reactor's summary table, as its migration V20
// creates it.
const arcReactorV20 = `
CREATE TABLE conversation_summaries (
    session_id       VARCHAR(255) PRIMARY KEY,
    narrative        TEXT         NOT NULL,
    facts_json       TEXT         NOT NULL DEFAULT '[]',
    summarized_up_to INT          NOT NULL DEFAULT 0,
    created_at       TIMESTAMP    NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at       TIMESTAMP    NOT NULL DEFAULT CURRENT_TIMESTAMP
)`

// tableDump is a table's columns (name, type, default) and rows, as text,
// to tell whether anything touched it.
func tableDump(t *testing.T, ctx context.Context, d *sqlx.DB, table string) string {
	t.Helper()
	var cols []string
	if err := d.SelectContext(ctx, &cols, `
		SELECT column_name || ' ' || data_type || ' ' || coalesce(column_default, '') || ' ' || is_nullable
		  FROM information_schema.columns
		 WHERE table_schema = current_schema() AND table_name = $1
		 ORDER BY ordinal_position`, table); err != nil {
		t.Fatal(err)
	}
	var rows []string
	if err := d.SelectContext(ctx, &rows, `SELECT t::text FROM `+table+` t ORDER BY 1`); err != nil {
		t.Fatal(err)
	}
	var cons []string
	if err := d.SelectContext(ctx, &cons, `
		SELECT conname::text FROM pg_constraint
		 WHERE conrelid = (current_schema() || '.' || $1)::regclass ORDER BY 1`, table); err != nil {
		t.Fatal(err)
	}
	return strings.Join(cols, "\n") + "\n--\n" + strings.Join(rows, "\n") + "\n--\n" + strings.Join(cons, ",")
}

func mustExec(t *testing.T, ctx context.Context, d *sqlx.DB, queries ...string) {
	t.Helper()
	for _, q := range queries {
		if _, err := d.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// A schema that already holds arc-reactor's conversation_summaries
// migrates cleanly, and arc-reactor's table is left exactly as it was.
func TestMigrateBesideArcReactorSummaries(t *testing.T) {
	t.Parallel()
	s := dbtest.NewEmptySchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := testCtx(t)
	mustExec(t, ctx, d, arcReactorV20,
		`INSERT INTO conversation_summaries (session_id, narrative, facts_json, summarized_up_to)
		 VALUES ('slack-1', 'They planned a trip.', '[{"key":"city","value":"Lisbon","category":"ENTITY"}]', 4)`)
	before := tableDump(t, ctx, d, "conversation_summaries")

	if err := db.Migrate(ctx, d); err != nil {
		t.Fatalf("Migrate beside arc-reactor's table: %v", err)
	}
	if v, dirty, err := db.MigrationVersion(ctx, d); err != nil || dirty || v != db.LatestMigration() {
		t.Fatalf("version %d dirty %v err %v", v, dirty, err)
	}
	if after := tableDump(t, ctx, d, "conversation_summaries"); after != before {
		t.Fatalf("arc-reactor's table changed:\nbefore\n%s\nafter\n%s", before, after)
	}
	objs := schemaObjects(t, ctx, d)
	for _, want := range []string{"r:strata_summaries", "i:strata_summaries_pkey", "r:conversation_summaries", "i:conversation_summaries_pkey"} {
		if !contains(objs, want) {
			t.Errorf("%s missing from %v", want, objs)
		}
	}
	// Strata's stores work beside it.
	f := storesOn(d)
	res := mustAppend(t, ctx, f.ms, "s", "u", user("q"))
	if err := f.sums.Save(ctx, summary.Summary{SessionID: "s", Epoch: res.Epoch, Narrative: "n", UpToSeq: res.LastSeq}); err != nil {
		t.Fatal(err)
	}
	if after := tableDump(t, ctx, d, "conversation_summaries"); after != before {
		t.Fatalf("a Strata save touched arc-reactor's table:\n%s", after)
	}
	// And all the way down leaves it too.
	if err := db.MigrateDown(ctx, d); err != nil {
		t.Fatal(err)
	}
	if after := tableDump(t, ctx, d, "conversation_summaries"); after != before {
		t.Fatalf("MigrateDown touched arc-reactor's table:\n%s", after)
	}
}

type stores struct {
	ms   *db.MessageStore
	sums *db.SummaryStore
}

func storesOn(d *sqlx.DB) stores {
	return stores{db.NewMessageStore(d), db.NewSummaryStore(d)}
}

// renameToOldName gives Strata's summary table, and its constraints and
// index, the name it had before version 5: conversation_summaries.
const renameToOldName = `
DO $$
DECLARE
    con record;
BEGIN
    FOR con IN SELECT conname FROM pg_constraint
                WHERE conrelid = (current_schema() || '.strata_summaries')::regclass
    LOOP
        EXECUTE format('ALTER TABLE strata_summaries RENAME CONSTRAINT %I TO %I', con.conname,
                       replace(con.conname, 'strata_summaries_', 'conversation_summaries_'));
    END LOOP;
    ALTER TABLE strata_summaries RENAME TO conversation_summaries;
END
$$`

// oldSummary inserts a summary of session a into the old-named table, in
// the shape of each version.
var oldSummary = map[uint]string{
	2: `INSERT INTO conversation_summaries (session_id, narrative, up_to_seq) SELECT 'a', 'old', max(seq) FROM strata_messages`,
	4: `INSERT INTO conversation_summaries (session_id, epoch, narrative, up_to_seq)
	    SELECT 'a', (SELECT epoch FROM strata_sessions WHERE session_id = 'a'), 'old', max(seq) FROM strata_messages`,
}

// A database made before version 5, whose Strata summary table is still
// named conversation_summaries, gets it renamed — from version 4 by
// migration 5, from version 2 by migration 3 — with its data, its
// constraints and its index; arc-reactor can then create its own table.
func TestMigrationRenamesStrataSummaryTable(t *testing.T) {
	t.Parallel()
	for _, from := range []uint{2, 4} {
		t.Run("from"+string(rune('0'+from)), func(t *testing.T) {
			t.Parallel()
			s := dbtest.NewEmptySchema(t)
			d := dbtest.Open(t, s.URL)
			ctx := testCtx(t)
			if err := db.MigrateTo(ctx, d, from); err != nil {
				t.Fatal(err)
			}
			mustExec(t, ctx, d,
				`INSERT INTO strata_sessions (session_id, user_id, message_count) VALUES ('a', 'alice', 1)`,
				`INSERT INTO strata_messages (session_id, role, content, user_id) VALUES ('a', 'user', 'hello', 'alice')`,
				renameToOldName,
				oldSummary[from])
			if err := db.Migrate(ctx, d); err != nil {
				t.Fatal(err)
			}
			objs := schemaObjects(t, ctx, d)
			if contains(objs, "r:conversation_summaries") || contains(objs, "i:conversation_summaries_pkey") ||
				!contains(objs, "r:strata_summaries") || !contains(objs, "i:strata_summaries_pkey") {
				t.Fatalf("after the rename: %v", objs)
			}
			var cons []string
			if err := d.SelectContext(ctx, &cons, `SELECT conname::text FROM pg_constraint
				WHERE conrelid = (current_schema() || '.strata_summaries')::regclass ORDER BY 1`); err != nil {
				t.Fatal(err)
			}
			for _, c := range cons {
				if !strings.HasPrefix(c, "strata_summaries_") {
					t.Errorf("constraint %s keeps the old name (all: %v)", c, cons)
				}
			}
			ta, err := db.NewMessageStore(d).Tail(ctx, "a", "alice", 1)
			if err != nil {
				t.Fatal(err)
			}
			sm, err := db.NewSummaryStore(d).Get(ctx, "a")
			if err != nil || sm == nil || sm.Narrative != "old" || sm.UpToSeq != ta.Messages[0].Seq || sm.Epoch != ta.Epoch {
				t.Fatalf("summary after the rename = %+v, %v", sm, err)
			}
			mustExec(t, ctx, d, arcReactorV20)
		})
	}
}

// arcReactorRows fills arc-reactor's tables: rows of several sessions
// interleaved (a session's history is its rows in id order), Jackson
// facts, every case the import distinguishes.
const arcReactorRows = `
INSERT INTO conversation_messages (session_id, role, content, timestamp, user_id) VALUES
 ('a', 'user',      'I am flying to Lisbon on May 3.',   1700000000001, 'alice'),
 ('b', 'user',      'Hello.',                            1700000000002, 'bob'),
 ('a', 'assistant', 'Noted: Lisbon, May 3.',             1700000000003, 'alice'),
 ('a', 'user',      'My budget is 900 EUR.',             1700000000004, 'alice'),
 ('b', 'ASSISTANT', 'Hi Bob.',                           1700000000005, 'bob'),
 ('a', 'assistant', 'Budget 900 EUR noted.',             1700000000006, 'alice'),
 ('a', 'user',      'Window seat please.',               1700000000007, 'alice'),
 ('a', 'assistant', 'Window seat requested.',            1700000000008, 'alice'),
 ('slack-x', 'user', 'first in the thread',              1700000000009, 'carol'),
 ('slack-x', 'user', 'second, another user',             1700000000010, 'dave'),
 ('t', 'user',      'look it up',                        1700000000011, 'tom'),
 ('t', 'tool',      '{"result": 42}',                    1700000000012, 'tom'),
 ('t', 'assistant', 'It is 42.',                         1700000000013, 'tom'),
 ('d', 'user',      'arc-reactor''s d',                  1700000000014, 'dan'),
 ('big', 'user',    repeat('x', 2000),                   1700000000015, 'bea');
INSERT INTO conversation_summaries (session_id, narrative, facts_json, summarized_up_to) VALUES
 ('a', 'Alice plans a trip to Lisbon.',
  '[{"key":"destination","value":"Lisbon","category":"ENTITY","extractedAt":"2025-01-02T03:04:05.123456789Z"},
    {"key":"budget","value":"900 EUR","category":"NUMERIC","extractedAt":1735787045.5,"unknown":true},
    {"value":"no key"},
    "not an object"]', 4),
 ('b', 'Bob said hello.', '[]', 4),
 ('c', 'c has no message left.', '[]', 2);`

// arcReactorManager is a manager over Strata's PostgreSQL stores whose
// summarizer counts its calls.
func arcReactorManager(t *testing.T, d *sqlx.DB, calls *atomic.Int64) *memory.Manager {
	t.Helper()
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	cfg.TriggerMessageCount = 2
	cfg.RecentMessageCount = 2
	cfg.MaxMessageBytes = 1000
	svc := summary.ServiceFunc(func(context.Context, summary.Request) (summary.Result, error) {
		calls.Add(1)
		return summary.Result{Narrative: "a fold ran"}, nil
	})
	m, err := memory.NewManager(db.NewMessageStore(d), cfg, memory.WithSummaries(db.NewSummaryStore(d), svc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// ImportArcReactor creates each arc-reactor session in Strata with its
// owner, its messages in id order with roles and timestamps, and its
// summary (cursor from summarized_up_to, Jackson facts), with no fold;
// a dry run writes nothing; a re-run skips what is there; an interrupted
// run resumes; arc-reactor's tables are never changed.
func TestImportArcReactor(t *testing.T) {
	t.Parallel()
	s := dbtest.NewEmptySchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := testCtx(t)
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	mgr := arcReactorManager(t, d, &calls)

	// Without arc-reactor's tables: nothing to import.
	if n, err := db.ArcReactorSessions(ctx, d); err != nil || n != 0 {
		t.Fatalf("ArcReactorSessions without the tables = %d, %v", n, err)
	}
	if res, err := db.ImportArcReactor(ctx, d, mgr, db.ArcReactorImportOptions{}); err != nil || res.Sessions != 0 || res.Imported != 0 {
		t.Fatalf("import without the tables = %+v, %v", res, err)
	}

	mustExec(t, ctx, d, dbtest.ArcReactorSchema, arcReactorRows)
	// d is already in Strata, with another history.
	if err := mgr.SaveTurn(ctx, "d", "dan", "Strata's d", ""); err != nil {
		t.Fatal(err)
	}
	before := tableDump(t, ctx, d, "conversation_messages") + tableDump(t, ctx, d, "conversation_summaries")
	if n, err := db.ArcReactorSessions(ctx, d); err != nil || n != 7 {
		t.Fatalf("ArcReactorSessions = %d, %v; want 7 (a, b, big, c, d, slack-x, t)", n, err)
	}

	// A dry run reports and writes nothing.
	dry, err := db.ImportArcReactor(ctx, d, mgr, db.ArcReactorImportOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if dry.Sessions != 7 || dry.Imported != 4 || dry.Existing != 1 || dry.NoMessages != 1 || len(dry.Failed) != 1 ||
		dry.Failed[0].SessionID != "big" || dry.Summaries != 2 || len(dry.SeveralUsers) != 1 || dry.SeveralUsers[0].SessionID != "slack-x" ||
		fmt.Sprint(dry.SeveralUsers[0].Users) != "[carol dave]" || dry.SeveralUsers[0].Shared || dry.UndecodableFacts != 2 {
		t.Fatalf("dry run = %+v", dry)
	}
	if _, err := mgr.Count(ctx, "a", "alice"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the dry run wrote session a: %v", err)
	}

	// Interrupted after the first session, then resumed.
	cctx, cancel := context.WithCancel(ctx)
	_, err = db.ImportArcReactor(cctx, d, mgr, db.ArcReactorImportOptions{Progress: func(done, total int) {
		if done == 1 {
			cancel()
		}
	}})
	if err == nil {
		t.Fatal("an interrupted import returned no error")
	}
	var progress []string
	res, err := db.ImportArcReactor(ctx, d, mgr, db.ArcReactorImportOptions{Progress: func(done, total int) {
		progress = append(progress, fmt.Sprintf("%d/%d", done, total))
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Imported != 3 || res.Current != 1 || res.Existing != 1 || res.NoMessages != 1 || len(res.Failed) != 1 || res.Messages != 7 ||
		!errors.Is(res.Failed[0].Err, store.ErrMessageTooLarge) {
		t.Fatalf("resumed import = %+v; want b, slack-x, t imported, a current (imported before), d existing, big failed", res)
	}
	if strings.Join(progress, " ") != "1/7 2/7 3/7 4/7 5/7 6/7 7/7" {
		t.Fatalf("progress %v", progress)
	}

	// a: its owner, its messages in id order with roles and timestamps,
	// its summary with the cursor on its 4th message.
	msgs, err := mgr.Messages(ctx, "a", "alice", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		role, text string
		ms         int64
	}{{"user", "I am flying to Lisbon on May 3.", 1}, {"assistant", "Noted: Lisbon, May 3.", 3}, {"user", "My budget is 900 EUR.", 4},
		{"assistant", "Budget 900 EUR noted.", 6}, {"user", "Window seat please.", 7}, {"assistant", "Window seat requested.", 8}}
	if len(msgs) != len(want) {
		t.Fatalf("a holds %d messages, want %d", len(msgs), len(want))
	}
	for i, w := range want {
		m := msgs[i]
		if string(m.Role) != w.role || m.Content != w.text || !m.CreatedAt.Equal(time.UnixMilli(1700000000000+w.ms)) {
			t.Errorf("a[%d] = %s %q %v; want %s %q at %d ms", i, m.Role, m.Content, m.CreatedAt, w.role, w.text, w.ms)
		}
	}
	if _, err := mgr.Messages(ctx, "a", "bob", 0, 0); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("bob reads alice's session: %v", err)
	}
	sum, err := mgr.Summary(ctx, "a", "alice")
	if err != nil || sum == nil || sum.UpToSeq != msgs[3].Seq || sum.Narrative != "Alice plans a trip to Lisbon." || len(sum.Facts) != 2 {
		t.Fatalf("a's summary = %+v, %v; want the cursor on the 4th message (seq %d) and two facts", sum, err, msgs[3].Seq)
	}
	if f := sum.Facts[0]; f.Key != "destination" || f.Category != summary.Entity || !f.ExtractedAt.Equal(time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC)) {
		t.Errorf("fact 0 = %+v", f)
	}
	if f := sum.Facts[1]; f.Key != "budget" || f.Value != "900 EUR" || f.Category != summary.Numeric || !f.ExtractedAt.Equal(time.Unix(1735787045, 5e8)) {
		t.Errorf("fact 1 = %+v", f)
	}
	h, err := mgr.Load(ctx, "a", "alice")
	if err != nil || h.Mode != "hierarchical" || len(h.Recent) != 2 {
		t.Fatalf("load a: mode %s, %d verbatim, %v", h.Mode, len(h.Recent), err)
	}
	if text := fmt.Sprint(h.Messages); !strings.Contains(text, "- destination: Lisbon") || !strings.Contains(text, "Alice plans a trip to Lisbon.") {
		t.Fatalf("load a does not show the imported facts and narrative: %v", h.Messages)
	}

	// b: arc-reactor's cursor covers more than b holds: nothing folded.
	if sb, err := mgr.Summary(ctx, "b", "bob"); err != nil || sb == nil || sb.UpToSeq != 0 || sb.Narrative != "Bob said hello." {
		t.Fatalf("b's summary = %+v, %v", sb, err)
	}
	if mb, err := mgr.Messages(ctx, "b", "bob", 0, 0); err != nil || len(mb) != 2 || mb[1].Role != store.RoleAssistant {
		t.Fatalf("b = %+v, %v (ASSISTANT is an assistant message)", mb, err)
	}
	// slack-x: owned by the first writer; t: the tool row is a tool result.
	if _, err := mgr.Messages(ctx, "slack-x", "carol", 0, 0); err != nil {
		t.Fatalf("slack-x for its first writer: %v", err)
	}
	if mt, err := mgr.Messages(ctx, "t", "tom", 0, 0); err != nil || len(mt) != 3 || mt[1].Role != store.RoleTool || mt[1].Name != "tool" {
		t.Fatalf("t = %+v, %v", mt, err)
	}
	// d keeps Strata's history.
	if md, err := mgr.Messages(ctx, "d", "dan", 0, 0); err != nil || len(md) != 1 || md[0].Content != "Strata's d" {
		t.Fatalf("d = %+v, %v", md, err)
	}

	// No fold ran, and arc-reactor's tables are as they were.
	if err := mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the summarizer ran %d times during the import", n)
	}
	if after := tableDump(t, ctx, d, "conversation_messages") + tableDump(t, ctx, d, "conversation_summaries"); after != before {
		t.Fatal("the import changed arc-reactor's tables")
	}

	// A re-run imports nothing twice.
	again, err := db.ImportArcReactor(ctx, d, mgr, db.ArcReactorImportOptions{})
	if err != nil || again.Imported != 0 || again.Current != 4 || again.Existing != 1 || len(again.Updated) != 0 {
		t.Fatalf("re-run = %+v, %v; want 0 imported, 4 current (a, b, slack-x, t), 1 existing (d)", again, err)
	}
}

// Jackson's facts_json: ISO-8601 or numeric instants, unknown fields,
// unknown categories, non-string values; what cannot be decoded is
// counted.
func TestDecodeArcReactorFacts(t *testing.T) {
	t.Parallel()
	facts, bad := db.DecodeArcReactorFacts([]byte(`[
		{"key":"a","value":"1","category":"DECISION","extractedAt":"2025-01-02T03:04:05Z"},
		{"key":"b","value":2,"category":"SOMETHING","extractedAt":1735787045},
		{"key":"c","value":"3","extractedAt":"yesterday"},
		{"key":"","value":"x"}, 7, null]`))
	if bad != 3 || len(facts) != 3 {
		t.Fatalf("facts %+v, %d bad; want 3 and 3", facts, bad)
	}
	if facts[0].Category != "DECISION" || facts[0].ExtractedAt.Year() != 2025 || facts[1].Value != "2" || facts[1].Category != "GENERAL" ||
		!facts[1].ExtractedAt.Equal(time.Unix(1735787045, 0)) || !facts[2].ExtractedAt.IsZero() {
		t.Fatalf("facts %+v", facts)
	}
	for _, raw := range []string{"", "null", "[]"} {
		if f, b := db.DecodeArcReactorFacts([]byte(raw)); len(f) != 0 || b != 0 {
			t.Errorf("%q: %v %d", raw, f, b)
		}
	}
	if f, b := db.DecodeArcReactorFacts([]byte("not json")); len(f) != 0 || b != 1 {
		t.Errorf("not json: %v %d", f, b)
	}
}
