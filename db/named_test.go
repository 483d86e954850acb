package db_test

import (
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
)

// TestNamedHeldStatement: the held load's check, a statement each server
// connection keeps prepared by name (SQL PREPARE, run by EXECUTE): it is
// prepared on a connection that lacks it in the call's own round trip,
// again after DEALLOCATE ALL (a pooler's reset) and after a column it
// returns changed type, reads the caller's schema after the connection's
// search_path changed, takes any session id as a
// literal (quotes, backslashes, Korean), and answers right through a
// transaction-mode pooler whose server connections have it or not.
func TestNamedHeldStatement(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	a, b := dbtest.NewSchema(t), dbtest.NewSchema(t)
	ids := []string{"s", `o'brien`, `back\slash`, `\'`, "세션 하나", "x''; DROP TABLE strata_sessions; --"}
	for _, sc := range []struct {
		s     dbtest.Schema
		owner string
	}{{a, "alice"}, {b, "bob"}} {
		d := dbtest.Open(t, sc.s.URL)
		for _, id := range ids {
			if err := db.NewMessageStore(d).Create(ctx, id, sc.owner); err != nil {
				t.Fatal(err)
			}
		}
	}
	d := dbtest.Open(t, a.URL)
	d.SetMaxOpenConns(1) // one server connection: what it keeps is observable
	prepared := func() bool {
		t.Helper()
		var n int
		if err := d.GetContext(ctx, &n, `SELECT count(*) FROM pg_prepared_statements WHERE name = $1`, db.HeldStmtName); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	check := func(what, want string) {
		t.Helper()
		for _, id := range ids {
			got, err := db.HeldOwner(ctx, d, id)
			if err != nil || got != want {
				t.Fatalf("%s, session %q: owner %q, %v; want %q", what, id, got, err, want)
			}
		}
	}
	if prepared() {
		t.Fatal("a new connection has the statement already")
	}
	check("first call", "alice")
	if !prepared() {
		t.Fatal("the connection was not given the statement")
	}
	check("prepared", "alice")
	if _, err := d.ExecContext(ctx, `DEALLOCATE ALL`); err != nil {
		t.Fatal(err)
	}
	check("after DEALLOCATE ALL", "alice")
	if _, err := d.ExecContext(ctx, fmt.Sprintf(`SET search_path TO %q`, b.Name)); err != nil {
		t.Fatal(err)
	}
	check("after the search_path moved to another schema", "bob")
	if _, err := db.HeldOwner(ctx, d, "missing"); !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("a missing session: %v, want sql.ErrNoRows", err)
	}
	// A migration changes the type of a column the statement returns: the
	// connection's plan of it no longer fits ("cached plan must not change
	// result type") and the call prepares it anew.
	if _, err := d.ExecContext(ctx, fmt.Sprintf(`ALTER TABLE %q.strata_sessions ALTER COLUMN summary_writes TYPE numeric`, b.Name)); err != nil {
		t.Fatal(err)
	}
	check("after a column's type changed", "bob")

	t.Run("pooler", func(t *testing.T) {
		t.Parallel()
		p := dbtest.NewPooled(t)
		direct := dbtest.Open(t, p.DirectURL)
		if err := db.Migrate(ctx, direct); err != nil {
			t.Fatal(err)
		}
		owners := map[string]string{}
		for i := range 40 {
			id, owner := fmt.Sprint("p", i), fmt.Sprint("u", i%7)
			if err := db.NewMessageStore(direct).Create(ctx, id, owner); err != nil {
				t.Fatal(err)
			}
			owners[id] = owner
		}
		// The pooler's server connections get the statement as the calls
		// reach them, and lose it to the clients' DEALLOCATE ALL.
		seed := rand.Uint64()
		t.Logf("seed %d", seed)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := range 8 {
			pool := dbtest.Open(t, p.PooledURL)
			wg.Add(1)
			go func(pool *sqlx.DB) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, uint64(w)))
				for range 150 {
					id := fmt.Sprint("p", rng.IntN(40))
					if rng.IntN(20) == 0 {
						if _, err := pool.ExecContext(ctx, `DEALLOCATE ALL`); err != nil {
							errs <- err
							return
						}
					}
					got, err := db.HeldOwner(ctx, pool, id)
					if err != nil || got != owners[id] {
						errs <- fmt.Errorf("session %s: owner %q, %v; want %q", id, got, err, owners[id])
						return
					}
				}
			}(pool)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// TestNamedLiterals: every parameter a named statement takes reaches the
// server as the value a parameterized query would pass (strings with
// quotes, backslashes and Korean; integers; booleans; times with their
// microseconds and zone; NULL and sql.Null* values; text arrays whose
// elements quote, escape and nest), and an unsupported
// type is an error, not a guess.
func TestNamedLiterals(t *testing.T) {
	t.Parallel()
	d := dbtest.New(t)
	ctx := testCtx(t)
	seoul := time.FixedZone("KST", 9*3600)
	for _, c := range []struct {
		v   any
		typ string
	}{
		{"plain", "text"}, {`o'brien`, "text"}, {`back\slash \' ''`, "text"}, {"세션 하나", "text"}, {"", "text"},
		{int64(-9007199254740993), "bigint"}, {42, "int"}, {true, "boolean"}, {false, "boolean"},
		{time.Date(2026, 11, 27, 15, 4, 5, 123456000, time.UTC), "timestamptz"},
		{time.Date(1999, 1, 2, 3, 4, 5, 6000, seoul), "timestamptz"},
		{nil, "text"}, {sql.NullInt64{}, "bigint"}, {sql.NullInt64{Int64: 7, Valid: true}, "bigint"},
		{sql.NullTime{Time: time.Date(2026, 1, 1, 0, 0, 0, 1000, time.UTC), Valid: true}, "timestamptz"},
		{sql.NullTime{}, "timestamptz"},
		{pq.Array([]string{`a'b`, `c\d`, "세션", "", `"q"`, "{x,y}", "NULL", " spaced "}), "text[]"},
		{pq.Array([]string{}), "text[]"}, {sql.NullString{String: "it's", Valid: true}, "text"}, {sql.NullString{}, "text"},
	} {
		lit, err := db.Literal(c.v)
		if err != nil {
			t.Fatalf("%#v: %v", c.v, err)
		}
		var same sql.NullBool
		if err := d.GetContext(ctx, &same, fmt.Sprintf(`SELECT (%s)::%s IS NOT DISTINCT FROM $1::%s`, lit, c.typ, c.typ), c.v); err != nil {
			t.Fatalf("%#v as %s: %v", c.v, lit, err)
		}
		if !same.Bool {
			t.Errorf("%#v: the literal %s is not the parameter's value", c.v, lit)
		}
	}
	if _, err := db.Literal(3.5); err == nil {
		t.Error("a float became a literal")
	}
	if _, err := db.Literal([]byte("x")); err == nil {
		t.Error("bytes became a literal")
	}
}
