package db_test

import (
	"context"
	"errors"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// schemaObjects lists the tables, indexes and sequences of the current
// schema, except golang-migrate's bookkeeping table.
func schemaObjects(t *testing.T, ctx context.Context, d *sqlx.DB) []string {
	t.Helper()
	var names []string
	err := d.SelectContext(ctx, &names, `
		SELECT c.relkind::text || ':' || c.relname::text
		  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		 WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i', 'S', 'v', 'm')
		   AND c.relname NOT LIKE $1 || '%'`, db.MigrationsTable)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names
}

func TestMigrateUpDownUp(t *testing.T) {
	t.Parallel()
	s := dbtest.NewEmptySchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := testCtx(t)

	if v, dirty, err := db.MigrationVersion(ctx, d); err != nil || v != 0 || dirty {
		t.Fatalf("fresh schema: version %d dirty %v err %v", v, dirty, err)
	}
	if objs := schemaObjects(t, ctx, d); len(objs) != 0 {
		t.Fatalf("fresh schema holds %v", objs)
	}
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
	up := schemaObjects(t, ctx, d)
	for _, want := range []string{"r:strata_sessions", "r:strata_messages", "r:strata_summaries", "r:strata_fold_leases",
		"r:strata_session_index", "i:strata_messages_pkey", "S:strata_messages_seq_seq", "S:strata_session_epoch_seq"} {
		if !contains(up, want) {
			t.Errorf("after up, %s is missing from %v", want, up)
		}
	}
	v, dirty, err := db.MigrationVersion(ctx, d)
	if err != nil || v != db.LatestMigration() || dirty {
		t.Fatalf("after up: version %d dirty %v err %v; want %d", v, dirty, err, db.LatestMigration())
	}
	var tables []string
	if err := d.SelectContext(ctx, &tables, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1`, db.MigrationsTable); err != nil || len(tables) != 1 {
		t.Errorf("migrations table %s not found in the schema: %v %v", db.MigrationsTable, tables, err)
	}

	// Migrate twice is a no-op.
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	if v2, _, _ := db.MigrationVersion(ctx, d); v2 != v {
		t.Errorf("version moved from %d to %d on a no-op Migrate", v, v2)
	}
	// The pool is still usable: Migrate must not close it.
	if err := d.PingContext(ctx); err != nil {
		t.Fatalf("pool closed by Migrate: %v", err)
	}

	// Some data (a tombstone and a foreign store's summary among it), then
	// down: everything of ours goes.
	ms := db.NewMessageStore(d)
	mustAppend(t, ctx, ms, "s", "u", user("q"), assistant("a"))
	mustAppend(t, ctx, ms, "gone", "u", user("q"), assistant("a"))
	if err := ms.Delete(ctx, "gone", "u"); err != nil {
		t.Fatal(err)
	}
	if err := db.NewSummaryStore(d).Save(ctx, summary.Summary{SessionID: "elsewhere", Epoch: 1, Narrative: "n"}); err != nil {
		t.Fatal(err)
	}
	if err := db.MigrateDown(ctx, d); err != nil {
		t.Fatal(err)
	}
	if objs := schemaObjects(t, ctx, d); len(objs) != 0 {
		t.Errorf("down left %v behind", objs)
	}
	if v, _, err := db.MigrationVersion(ctx, d); err != nil || v != 0 {
		t.Errorf("after down: version %d err %v", v, err)
	}
	if err := db.MigrateDown(ctx, d); err != nil {
		t.Errorf("down on an empty schema: %v", err)
	}

	// And up again, to the same shape, with a working store.
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
	if again := schemaObjects(t, ctx, d); strings.Join(again, ",") != strings.Join(up, ",") {
		t.Errorf("second up differs:\n%v\n%v", again, up)
	}
	if res := mustAppend(t, ctx, ms, "s", "u", user("q")); res.Total != 1 {
		t.Errorf("after up-down-up Total = %d, want 1", res.Total)
	}
}

func TestMigrateConcurrentReplicas(t *testing.T) {
	t.Parallel()
	s := dbtest.NewEmptySchema(t)
	ctx := testCtx(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		d := dbtest.Open(t, s.URL)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = db.Migrate(ctx, d)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
}

func TestMigrateRespectsCancelledContext(t *testing.T) {
	t.Parallel()
	s := dbtest.NewEmptySchema(t)
	d := dbtest.Open(t, s.URL)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := db.Migrate(ctx, d); err == nil || !strings.HasPrefix(err.Error(), "db: migrate up") {
		t.Errorf("Migrate(cancelled) = %v", err)
	}
}

// TestMigration3KeepsExistingData migrates a version-2 database holding
// sessions, messages, summaries (with titles) and catalogue documents to
// version 3: every session gets its own epoch, every summary its
// session's, the data stays readable through the new API, and the way
// back to version 2 keeps what version 2 can hold.
func TestMigration3KeepsExistingData(t *testing.T) {
	t.Parallel()
	s := dbtest.NewEmptySchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := testCtx(t)
	if err := db.MigrateTo(ctx, d, 2); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO strata_sessions (session_id, user_id, message_count, first_user_message) VALUES ('a', 'alice', 2, 'hello'), ('b', 'bob', 0, NULL)`,
		`INSERT INTO strata_messages (session_id, role, content, user_id) VALUES ('a', 'user', 'hello', 'alice'), ('a', 'assistant', 'hi', 'alice')`,
		`INSERT INTO strata_summaries (session_id, narrative, up_to_seq, title) SELECT 'a', 'old narrative', max(seq), 'Greetings' FROM strata_messages`,
		`INSERT INTO strata_session_index (session_id, title, source) VALUES ('a', 'Greetings', 'turns')`,
	} {
		if _, err := d.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}

	ms, sums := db.NewMessageStore(d), db.NewSummaryStore(d)
	ta, err := ms.Tail(ctx, "a", "alice", 10)
	if err != nil || ta.Total != 2 || len(ta.Messages) != 2 || ta.Epoch <= 0 {
		t.Fatalf("Tail(a) after migration = %+v, %v", ta, err)
	}
	tb, err := ms.Tail(ctx, "b", "bob", 10)
	if err != nil || tb.Total != 0 || tb.Epoch <= 0 || tb.Epoch == ta.Epoch {
		t.Fatalf("Tail(b) after migration = %+v, %v; want its own epoch (a has %d)", tb, err, ta.Epoch)
	}
	sm, err := sums.Get(ctx, "a")
	if err != nil || sm == nil || sm.Epoch != ta.Epoch || sm.Narrative != "old narrative" || sm.UpToSeq != ta.Messages[1].Seq {
		t.Fatalf("summary after migration = %+v, %v; want epoch %d", sm, err, ta.Epoch)
	}
	if err := sums.Save(ctx, summary.Summary{SessionID: "a", Epoch: ta.Epoch, Narrative: "newer", UpToSeq: sm.UpToSeq}); err != nil {
		t.Errorf("Save for a migrated session: %v", err)
	}
	if _, err := ms.Append(ctx, "b", "alice", user("x")); !errors.Is(err, memory.ErrNotOwner) {
		t.Errorf("ownership lost in the migration: %v", err)
	}
	// New sessions draw epochs past the migrated ones.
	tc := mustAppend(t, ctx, ms, "c", "carol", user("q"))
	if tc.Epoch <= max(ta.Epoch, tb.Epoch) {
		t.Errorf("new session's epoch %d is not above the migrated %d, %d", tc.Epoch, ta.Epoch, tb.Epoch)
	}
	if err := ms.Delete(ctx, "c", "carol"); err != nil {
		t.Fatal(err)
	}

	// Back to version 2: live sessions, their messages, their current
	// summary and the catalogue stay; the tombstone goes.
	if err := db.MigrateTo(ctx, d, 2); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := d.GetContext(ctx, &n, `SELECT count(*) FROM strata_sessions`); err != nil || n != 2 {
		t.Errorf("%d sessions at version 2 (%v), want a and b", n, err)
	}
	if err := d.GetContext(ctx, &n, `SELECT count(*) FROM strata_messages WHERE session_id = 'a'`); err != nil || n != 2 {
		t.Errorf("%d messages of a at version 2 (%v), want 2", n, err)
	}
	var narrative string
	if err := d.GetContext(ctx, &narrative, `SELECT narrative FROM strata_summaries WHERE session_id = 'a'`); err != nil || narrative != "newer" {
		t.Errorf("summary of a at version 2 = %q (%v)", narrative, err)
	}
	if err := d.GetContext(ctx, &n, `SELECT count(*) FROM strata_session_index`); err != nil || n != 1 {
		t.Errorf("%d catalogue documents at version 2 (%v), want 1", n, err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestMigrationFailureNamesStatement breaks a migration on purpose: the
// error names the file, the line and the statement that failed (not the
// whole file), the file is rolled back as a whole, and the version to
// force is the one the schema is still at.
func TestMigrationFailureNamesStatement(t *testing.T) {
	t.Parallel()
	s := dbtest.NewEmptySchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := testCtx(t)

	// The first file's second table already exists, with another shape.
	if _, err := d.ExecContext(ctx, `CREATE TABLE strata_messages (x int)`); err != nil {
		t.Fatal(err)
	}
	err := db.Migrate(ctx, d)
	var me *db.MigrationError
	if !errors.As(err, &me) {
		t.Fatalf("Migrate = %v, want a *MigrationError", err)
	}
	if me.File != "000001_init.up.sql" || me.Version != 1 || !me.Up || me.SchemaVersion != -1 {
		t.Fatalf("MigrationError = %+v", me)
	}
	if !strings.HasPrefix(me.Statement, "CREATE TABLE strata_messages (") || strings.Contains(me.Statement, "CREATE TABLE strata_sessions") || !strings.HasSuffix(me.Statement, ");") {
		t.Fatalf("statement = %q, want only the CREATE TABLE strata_messages statement", me.Statement)
	}
	if wantLine := lineOf(t, "000001_init.up.sql", "CREATE TABLE strata_messages ("); me.Line != wantLine {
		t.Errorf("line %d, want %d", me.Line, wantLine)
	}
	msg := err.Error()
	for _, want := range []string{"000001_init.up.sql failed at line", `relation "strata_messages" already exists`,
		"failed statement: CREATE TABLE strata_messages (", "still at version none", "`strata migrate force -1`", "`strata migrate up`"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "-- Strata schema") {
		t.Errorf("the error quotes the whole file: %s", msg)
	}
	// Rolled back: the file's first table is not there.
	if objs := schemaObjects(t, ctx, d); strings.Contains(strings.Join(objs, ","), "strata_sessions") {
		t.Errorf("the failed file was not rolled back: %v", objs)
	}
	// Dirty now: migrating again says how to recover.
	if v, dirty, err := db.MigrationVersion(ctx, d); err != nil || v != 1 || !dirty {
		t.Fatalf("after the failure: version %d dirty %v err %v", v, dirty, err)
	}
	var de *db.DirtySchemaError
	if err := db.Migrate(ctx, d); !errors.As(err, &de) || de.Version != 1 || !strings.Contains(err.Error(), "`strata migrate force -1`") {
		t.Fatalf("Migrate on a dirty schema = %v", err)
	}
	if err := db.CheckSchema(ctx, d); !errors.As(err, &de) {
		t.Fatalf("CheckSchema on a dirty schema = %v", err)
	}
	// The recovery the message gives works.
	if _, err := d.ExecContext(ctx, `DROP TABLE strata_messages`); err != nil {
		t.Fatal(err)
	}
	if err := db.MigrateForce(ctx, d, -1); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatalf("Migrate after the recovery: %v", err)
	}
	if err := db.CheckSchema(ctx, d); err != nil {
		t.Fatalf("CheckSchema after the recovery: %v", err)
	}
}

// TestMigrationFailureInALaterFile: the version to force is the previous
// migration's, and the line is where PostgreSQL places the error.
func TestMigrationFailureInALaterFile(t *testing.T) {
	t.Parallel()
	s := dbtest.NewEmptySchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := testCtx(t)
	if err := db.MigrateTo(ctx, d, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ExecContext(ctx, `ALTER TABLE strata_session_index ADD COLUMN pinned int`); err != nil {
		t.Fatal(err)
	}
	err := db.Migrate(ctx, d)
	var me *db.MigrationError
	if !errors.As(err, &me) || me.File != "000004_catalog_titles.up.sql" || me.SchemaVersion != 3 {
		t.Fatalf("Migrate = %v (%+v)", err, me)
	}
	if !strings.HasPrefix(me.Statement, "ALTER TABLE strata_session_index") || strings.Contains(me.Statement, "--") {
		t.Fatalf("statement = %q", me.Statement)
	}
	if !strings.Contains(err.Error(), "`strata migrate force 3`") || !strings.Contains(err.Error(), "still at version 3") {
		t.Fatalf("error = %v", err)
	}
	if first := lineOf(t, "000004_catalog_titles.up.sql", "ALTER TABLE strata_session_index"); me.Line < first {
		t.Fatalf("line %d is before the statement (line %d)", me.Line, first)
	}
}

// lineOf returns the line of the embedded migration file on which want
// first appears.
func lineOf(t *testing.T, file, want string) int {
	t.Helper()
	data, err := os.ReadFile("migrations/" + file)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(data), want)
	if i < 0 {
		t.Fatalf("%s lacks %q", file, want)
	}
	return 1 + strings.Count(string(data[:i]), "\n")
}

func TestMigrateForceNone(t *testing.T) {
	t.Parallel()
	s := dbtest.NewEmptySchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := testCtx(t)
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := db.MigrateForce(ctx, d, -1); err != nil {
		t.Fatal(err)
	}
	if v, dirty, err := db.MigrationVersion(ctx, d); err != nil || v != 0 || dirty {
		t.Fatalf("after force -1: version %d dirty %v err %v", v, dirty, err)
	}
	if err := db.CheckSchema(ctx, d); !errors.Is(err, db.ErrSchemaNotMigrated) {
		t.Fatalf("CheckSchema after force -1 = %v", err)
	}
	if err := db.MigrateForce(ctx, d, -2); err == nil {
		t.Fatal("MigrateForce(-2) accepted")
	}
}

func TestCheckSchema(t *testing.T) {
	t.Parallel()
	s := dbtest.NewEmptySchema(t)
	d := dbtest.Open(t, s.URL)
	ctx := testCtx(t)
	err := db.CheckSchema(ctx, d)
	if !errors.Is(err, db.ErrSchemaNotMigrated) || !strings.Contains(err.Error(), "run `strata migrate up`") {
		t.Fatalf("CheckSchema(empty) = %v", err)
	}
	// Read-only: golang-migrate's table was not created.
	var n int
	if err := d.GetContext(ctx, &n, `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()`); err != nil || n != 0 {
		t.Fatalf("CheckSchema created %d tables (%v)", n, err)
	}
	_, err = d.ExecContext(ctx, `SELECT 1 FROM strata_messages`)
	if !db.IsMissingTable(err) {
		t.Fatalf("IsMissingTable(%v) = false", err)
	}
	if db.IsMissingTable(errors.New("relation does not exist")) || db.IsMissingTable(nil) {
		t.Fatal("IsMissingTable is true for a non-PostgreSQL error")
	}
	if err := db.MigrateTo(ctx, d, 2); err != nil {
		t.Fatal(err)
	}
	if err := db.CheckSchema(ctx, d); !errors.Is(err, db.ErrSchemaNotMigrated) || !strings.Contains(err.Error(), "schema version 2") {
		t.Fatalf("CheckSchema(version 2) = %v", err)
	}
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := db.CheckSchema(ctx, d); err != nil {
		t.Fatalf("CheckSchema(latest) = %v", err)
	}
}
