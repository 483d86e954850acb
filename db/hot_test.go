package db_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/strata-go/strata/db/dbtest"
)

// TestAppendsUpdateSessionRowInPlace: the session row's bookkeeping does
// not make appends non-HOT updates. 300 appends to one session update its
// row 300 times; PostgreSQL's statistics must count (nearly) all of them
// as HOT updates, which leave no new index entry behind.
func TestAppendsUpdateSessionRowInPlace(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	const appends = 300
	for i := range appends {
		mustAppend(t, ctx, f.messages, "s", "alice", user(fmt.Sprint("q", i)), assistant(fmt.Sprint("a", i)))
	}
	// Backends report their statistics when idle, within about a second.
	var upd, hot int64
	admin := dbtest.Admin(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		row := admin.QueryRowxContext(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables
			WHERE schemaname = $1 AND relname = 'strata_sessions'`, f.schema.Name)
		if err := row.Scan(&upd, &hot); err != nil {
			t.Fatal(err)
		}
		if upd >= appends || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if upd < appends {
		t.Fatalf("statistics report %d updates of strata_sessions, want at least %d", upd, appends)
	}
	if hot < upd*9/10 {
		t.Errorf("%d of %d session row updates were HOT, want at least 90%%", hot, upd)
	}
}
