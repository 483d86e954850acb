package db_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
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

// ImportArcReactorSummaries copies arc-reactor's summaries onto the
// sessions Strata holds, maps summarized_up_to to the seq of the same
// position, never hides a message behind a cursor it cannot map, never
// replaces a summary, and leaves arc-reactor's table untouched.
func TestMigrationImportArcReactorSummaries(t *testing.T) {
	t.Parallel()
	s := dbtest.NewEmptySchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := testCtx(t)

	// Without arc-reactor's table: nothing to import.
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
	if n, err := db.ArcReactorSummaries(ctx, d); err != nil || n != 0 {
		t.Fatalf("ArcReactorSummaries without the table = %d, %v", n, err)
	}
	if n, err := db.ImportArcReactorSummaries(ctx, d); err != nil || n != 0 {
		t.Fatalf("import without the table = %d, %v", n, err)
	}

	mustExec(t, ctx, d, arcReactorV20, `
		INSERT INTO conversation_summaries (session_id, narrative, facts_json, summarized_up_to) VALUES
		 ('a', 'a: four folded', '[{"key":"city","value":"Lisbon","category":"ENTITY","extractedAt":"2025-01-02T03:04:05Z"}]', 4),
		 ('b', 'b: more than Strata holds', '[]', 4),
		 ('c', 'c: unknown to Strata', '[]', 2),
		 ('d', 'd: arc-reactor''s', '[]', 1),
		 ('e', 'e: bad facts', 'not json', 0)`)
	before := tableDump(t, ctx, d, "conversation_summaries")
	if n, err := db.ArcReactorSummaries(ctx, d); err != nil || n != 5 {
		t.Fatalf("ArcReactorSummaries = %d, %v; want 5", n, err)
	}

	f := storesOn(d)
	ra := mustAppend(t, ctx, f.ms, "a", "alice", user("1"), assistant("2"), user("3"), assistant("4"), user("5"), assistant("6"))
	rb := mustAppend(t, ctx, f.ms, "b", "bob", user("1"), assistant("2"))
	rd := mustAppend(t, ctx, f.ms, "d", "dan", user("1"), assistant("2"))
	re := mustAppend(t, ctx, f.ms, "e", "eve", user("1"))
	if err := f.sums.Save(ctx, summary.Summary{SessionID: "d", Epoch: rd.Epoch, Narrative: "Strata's own", UpToSeq: rd.LastSeq}); err != nil {
		t.Fatal(err)
	}

	n, err := db.ImportArcReactorSummaries(ctx, d)
	if err != nil || n != 3 {
		t.Fatalf("import = %d, %v; want 3 (a, b, e)", n, err)
	}
	msgsA := allMessages(t, ctx, f.ms, "a", "alice")
	get := func(id string) *summary.Summary {
		t.Helper()
		sm, err := f.sums.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return sm
	}
	a := get("a")
	if a == nil || a.Narrative != "a: four folded" || a.Epoch != ra.Epoch || a.UpToSeq != msgsA[3].Seq ||
		len(a.Facts) != 1 || a.Facts[0].Key != "city" || a.Facts[0].Category != summary.Entity || a.Facts[0].ExtractedAt.Year() != 2025 {
		t.Fatalf("a = %+v; want cursor %d (the 4th message), epoch %d", a, msgsA[3].Seq, ra.Epoch)
	}
	if b := get("b"); b == nil || b.UpToSeq != 0 || b.Epoch != rb.Epoch {
		t.Fatalf("b = %+v; want cursor 0 (Strata holds 2 < 4 messages)", b)
	}
	if c := get("c"); c != nil {
		t.Fatalf("c, unknown to Strata, imported: %+v", c)
	}
	if dd := get("d"); dd == nil || dd.Narrative != "Strata's own" {
		t.Fatalf("d replaced: %+v", dd)
	}
	if e := get("e"); e == nil || e.Narrative != "e: bad facts" || len(e.Facts) != 0 || e.UpToSeq != 0 || e.Epoch != re.Epoch {
		t.Fatalf("e = %+v", e)
	}
	if after := tableDump(t, ctx, d, "conversation_summaries"); after != before {
		t.Fatalf("the import changed arc-reactor's table:\n%s", after)
	}
	if n, err := db.ImportArcReactorSummaries(ctx, d); err != nil || n != 0 {
		t.Fatalf("second import = %d, %v; want 0", n, err)
	}
}
