package db_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory/memorytest"
	"github.com/strata-go/strata/memory/store"
)

// The tests of this file run through PgBouncer in transaction mode
// (STRATA_PGBOUNCER_URL, started by scripts/with-postgres.sh with
// ignore_startup_parameters = extra_float_digits only), on a database
// migrated over the direct URL. They are skipped, with one line, without
// a pooler.

// TestPooledMessageStoreConformance runs the memory.MessageStore
// conformance suite, its ownership race included, through the pooler.
func TestPooledMessageStoreConformance(t *testing.T) {
	t.Parallel()
	p := dbtest.NewPooled(t)
	d := dbtest.Open(t, p.PooledURL)
	d.SetMaxIdleConns(dbtest.MaxOpenConns)
	ms := db.NewMessageStore(d)
	memorytest.Run(t, func(t *testing.T) store.Store { return ms })
}

// TestPooledConformanceAcrossReplicas runs the suite through the pooler
// against two replicas (two pools), every call going to the next one.
func TestPooledConformanceAcrossReplicas(t *testing.T) {
	t.Parallel()
	p := dbtest.NewPooled(t)
	r := &replicas{stores: [2]store.Store{
		db.NewMessageStore(dbtest.Open(t, p.PooledURL)),
		db.NewMessageStore(dbtest.Open(t, p.PooledURL)),
	}}
	memorytest.Run(t, func(t *testing.T) store.Store { return r })
}

// TestPooledNoStatementRunsAnothersSQL: two statements with the same
// number of parameters, interleaved from many goroutines on two pools
// through the pooler, each result checked. A driver that parsed a
// statement on one server connection and bound it on another (named
// prepared statements, or lib/pq's two-round-trip unnamed ones) would run
// one statement's SQL with the other's arguments here.
func TestPooledNoStatementRunsAnothersSQL(t *testing.T) {
	t.Parallel()
	p := dbtest.NewPooled(t)
	a, b := dbtest.Open(t, p.PooledURL), dbtest.Open(t, p.PooledURL)
	const (
		qA = `SELECT 'A' AS which, $1::text || '/' || $2::bigint::text AS echo`
		qB = `SELECT 'B' AS which, $2::bigint::text || '\' || $1::text AS echo`
	)
	const goroutines, rounds = 32, 200
	ctx := testCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := a
			if g%2 == 1 {
				d = b
			}
			for i := range rounds {
				arg1, arg2 := fmt.Sprintf("g%d-r%d", g, i), int64(g*100000+i)
				q, wantWhich, wantEcho := qA, "A", fmt.Sprintf("%s/%d", arg1, arg2)
				if (g+i)%2 == 1 {
					q, wantWhich, wantEcho = qB, "B", fmt.Sprintf("%d\\%s", arg2, arg1)
				}
				var which, echo string
				if err := d.QueryRowContext(ctx, q, arg1, arg2).Scan(&which, &echo); err != nil {
					errs <- fmt.Errorf("goroutine %d round %d: %w", g, i, err)
					return
				}
				if which != wantWhich || echo != wantEcho {
					errs <- fmt.Errorf("goroutine %d round %d: statement %s returned (%s, %q), want (%s, %q)",
						g, i, wantWhich, which, echo, wantWhich, wantEcho)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestPooledStatementTimeout: through the pooler, the pool's statement
// timeout still cancels a statement on the server, and an append held up
// past it fails as an outage.
func TestPooledStatementTimeout(t *testing.T) {
	t.Parallel()
	p := dbtest.NewPooled(t)
	checkStatementTimeout(t, testCtx(t), p.PooledURL, p.Name)
}

// TestPooledOpenRefusesStartupParameter: a data source name whose
// start-up parameter the pooler refuses fails Open at once, with an error
// naming the parameter and the fix.
func TestPooledOpenRefusesStartupParameter(t *testing.T) {
	t.Parallel()
	p := dbtest.NewPooled(t)
	dsn, err := db.WithDSNParams(p.PooledURL, map[string]string{"statement_timeout": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := db.Open(testCtx(t), dsn)
	if err == nil {
		_ = d.Close()
		t.Fatal("Open with statement_timeout in a pooled URL succeeded")
	}
	for _, want := range []string{`"statement_timeout"`, "remove it from the data source name", "ignore_startup_parameters"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open error %q does not contain %q", err, want)
		}
	}
}

// TestPooledMigrateRefused: Migrate through the pooler is refused with
// ErrMigrateThroughPooler (which names the direct-URL setting), changing
// nothing; over the direct URL it succeeds.
func TestPooledMigrateRefused(t *testing.T) {
	t.Parallel()
	p := dbtest.NewPooled(t)
	ctx := testCtx(t)
	d := dbtest.Open(t, p.PooledURL)
	err := db.Migrate(ctx, d)
	if !errors.Is(err, db.ErrMigrateThroughPooler) {
		t.Fatalf("Migrate through the pooler = %v, want ErrMigrateThroughPooler", err)
	}
	if !strings.Contains(err.Error(), "arc.reactor.memory.datasource.url") {
		t.Errorf("the refusal %q does not name the setting", err)
	}
	if err := db.Migrate(ctx, dbtest.Open(t, p.DirectURL)); err != nil {
		t.Errorf("Migrate over the direct URL: %v", err)
	}
	// Reading the version only reads: it works through the pooler.
	if v, dirty, err := db.MigrationVersion(ctx, d); err != nil || v != db.LatestMigration() || dirty {
		t.Errorf("MigrationVersion through the pooler = %d, %v, %v; want %d", v, dirty, err, db.LatestMigration())
	}
}

// TestPooledFoldLeaseAcrossReplicas: two replicas reaching the database
// through the pooler take a session's fold lease exclusively; it is free
// again once released, and an expired one can be taken over.
func TestPooledFoldLeaseAcrossReplicas(t *testing.T) {
	t.Parallel()
	p := dbtest.NewPooled(t)
	ctx := testCtx(t)
	r1 := db.NewMessageStore(dbtest.Open(t, p.PooledURL))
	r2 := db.NewMessageStore(dbtest.Open(t, p.PooledURL))
	release, ok, err := leaseOf(r1).TryLockFold(ctx, "s", time.Minute)
	if err != nil || !ok {
		t.Fatalf("replica 1: ok=%v err=%v", ok, err)
	}
	if _, ok, err := leaseOf(r2).TryLockFold(ctx, "s", time.Minute); err != nil || ok {
		t.Fatalf("replica 2 while 1 holds the lease: ok=%v err=%v, want refused", ok, err)
	}
	release()
	rel2, ok, err := leaseOf(r2).TryLockFold(ctx, "s", 50*time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("replica 2 after release: ok=%v err=%v", ok, err)
	}
	defer rel2()
	time.Sleep(100 * time.Millisecond) // the 50ms lease expires (server clock)
	rel1, ok, err := leaseOf(r1).TryLockFold(ctx, "s", time.Minute)
	if err != nil || !ok {
		t.Fatalf("replica 1 after the lease expired: ok=%v err=%v", ok, err)
	}
	rel1()
}
