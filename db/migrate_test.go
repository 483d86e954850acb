package db_test

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
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
	for _, want := range []string{"r:strata_sessions", "r:strata_messages", "r:conversation_summaries", "r:strata_fold_leases", "i:strata_messages_pkey", "S:strata_messages_seq_seq"} {
		if !contains(up, want) {
			t.Errorf("after up, %s is missing from %v", want, up)
		}
	}
	v, dirty, err := db.MigrationVersion(ctx, d)
	if err != nil || v == 0 || dirty {
		t.Fatalf("after up: version %d dirty %v err %v", v, dirty, err)
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

	// Some data, then down: everything of ours goes.
	ms := db.NewMessageStore(d)
	mustAppend(t, ctx, ms, "s", "u", user("q"), assistant("a"))
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
