package db_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

func TestFoldLeaseExclusiveAcrossReplicas(t *testing.T) {
	t.Parallel()
	testFoldLeaseExclusiveAcrossReplicas(t, dbtest.NewSchema(t))
}

func testFoldLeaseExclusiveAcrossReplicas(t *testing.T, s dbtest.Schema) {
	ctx := testCtx(t)
	// Two replicas: separate pools, separate stores.
	a := leaseOf(db.NewMessageStore(dbtest.Open(t, s.URL)))
	b := store.FoldLocker(db.NewSummaryStore(dbtest.Open(t, s.URL)))

	relA, ok, err := a.TryLockFold(ctx, "s", time.Minute)
	if err != nil || !ok {
		t.Fatalf("first lock: %v %v", ok, err)
	}
	if _, ok, err := b.TryLockFold(ctx, "s", time.Minute); err != nil || ok {
		t.Fatalf("second replica got a held lease: %v %v", ok, err)
	}
	if _, ok, _ := a.TryLockFold(ctx, "s", time.Minute); ok {
		t.Fatal("the same replica got a held lease twice")
	}
	relOther, ok, err := b.TryLockFold(ctx, "other", time.Minute)
	if err != nil || !ok {
		t.Fatalf("another session's lease: %v %v", ok, err)
	}
	relOther()
	relA()
	relA() // idempotent
	relB, ok, err := b.TryLockFold(ctx, "s", time.Minute)
	if err != nil || !ok {
		t.Fatalf("lease not free after release: %v %v", ok, err)
	}
	relB()
}

func TestFoldLeaseExpires(t *testing.T) {
	t.Parallel()
	testFoldLeaseExpires(t, dbtest.NewSchema(t))
}

func testFoldLeaseExpires(t *testing.T, s dbtest.Schema) {
	f := newFixtureOn(t, s)
	ctx := testCtx(t)
	relA, ok, err := leaseOf(f.messages).TryLockFold(ctx, "s", 150*time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("lock: %v %v", ok, err)
	}
	if _, ok, _ := f.sums.TryLockFold(ctx, "s", time.Minute); ok {
		t.Fatal("live lease taken over")
	}
	time.Sleep(300 * time.Millisecond)
	relB, ok, err := f.sums.TryLockFold(ctx, "s", time.Minute)
	if err != nil || !ok {
		t.Fatalf("expired lease not taken over: %v %v", ok, err)
	}
	// The first holder's late release must not free the new holder's lease.
	relA()
	if _, ok, _ := leaseOf(f.messages).TryLockFold(ctx, "s", time.Minute); ok {
		t.Fatal("a stale release freed another holder's lease")
	}
	relB()
	if rel, ok, _ := leaseOf(f.messages).TryLockFold(ctx, "s", 0); !ok {
		t.Fatal("lease not free after the holder's release")
	} else {
		rel()
	}
}

func TestFoldLeaseSingleHolderUnderContention(t *testing.T) {
	t.Parallel()
	testFoldLeaseSingleHolderUnderContention(t, dbtest.NewSchema(t))
}

func testFoldLeaseSingleHolderUnderContention(t *testing.T, s dbtest.Schema) {
	ctx := testCtx(t)
	var lockers []store.FoldLocker
	for range 4 {
		lockers = append(lockers, leaseOf(db.NewMessageStore(dbtest.Open(t, s.URL))))
	}
	var holders, maxHolders, acquired atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := lockers[i%len(lockers)]
			for range 20 {
				rel, ok, err := l.TryLockFold(ctx, "hot", time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					continue
				}
				acquired.Add(1)
				n := holders.Add(1)
				for {
					m := maxHolders.Load()
					if n <= m || maxHolders.CompareAndSwap(m, n) {
						break
					}
				}
				time.Sleep(time.Millisecond)
				holders.Add(-1)
				rel()
			}
		}()
	}
	wg.Wait()
	if maxHolders.Load() != 1 || acquired.Load() == 0 {
		t.Errorf("max concurrent holders %d, acquisitions %d", maxHolders.Load(), acquired.Load())
	}
}

func TestFoldLeaseRenewedWhileHeld(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSchema(t)
	ctx := testCtx(t)
	// A slice long enough that a renewal (every third of a slice, bounded
	// by that third) gets through on a machine busy with other tests.
	slice := db.WithFoldLeaseSlice(900 * time.Millisecond)
	a := leaseOf(db.NewMessageStore(dbtest.Open(t, s.URL), slice))
	b := leaseOf(db.NewMessageStore(dbtest.Open(t, s.URL), slice))

	rel, ok, err := a.TryLockFold(ctx, "s", time.Minute)
	if err != nil || !ok {
		t.Fatalf("lock: %v %v", ok, err)
	}
	for range 4 { // 3.6 s: four slices, the lease must be renewed
		time.Sleep(900 * time.Millisecond)
		if _, ok, _ := b.TryLockFold(ctx, "s", time.Minute); ok {
			t.Fatal("a held lease expired: not renewed")
		}
	}
	rel()
	if rel2, ok, _ := b.TryLockFold(ctx, "s", time.Minute); !ok {
		t.Fatal("lease not free after release")
	} else {
		rel2()
	}

	// Renewal stops at the asked ttl.
	if _, ok, _ := a.TryLockFold(ctx, "short", 500*time.Millisecond); !ok {
		t.Fatal("lock short")
	}
	time.Sleep(1200 * time.Millisecond)
	if rel3, ok, _ := b.TryLockFold(ctx, "short", time.Minute); !ok {
		t.Fatal("lease outlived its ttl")
	} else {
		rel3()
	}
}

// TestFoldLeaseOfDeadHolderFreesWithinSlice: a holder whose process dies
// (here: its pool is closed, so it can neither renew nor release) blocks
// other replicas for at most one slice, not for the whole ttl.
func TestFoldLeaseOfDeadHolderFreesWithinSlice(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSchema(t)
	ctx := testCtx(t)
	slice := db.WithFoldLeaseSlice(300 * time.Millisecond)
	dying, err := db.Open(ctx, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	a := leaseOf(db.NewMessageStore(dying, slice))
	b := store.FoldLocker(db.NewSummaryStore(dbtest.Open(t, s.URL), slice))
	if _, ok, err := a.TryLockFold(ctx, "s", 2*time.Second); err != nil || !ok {
		t.Fatalf("lock: %v %v", ok, err)
	}
	_ = dying.Close()
	start := time.Now()
	for {
		rel, ok, err := b.TryLockFold(ctx, "s", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			rel()
			break
		}
		if time.Since(start) > 1500*time.Millisecond {
			t.Fatal("a dead holder's lease outlived its slice")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("dead holder's lease taken over after %v", time.Since(start).Round(time.Millisecond))
}

// leaseHolder is the lease row of a session: its holder and whether there
// is one.
func leaseHolder(t *testing.T, ctx context.Context, f *fixture, session string) (string, bool) {
	t.Helper()
	var holder string
	err := f.d.GetContext(ctx, &holder, `SELECT holder FROM strata_fold_leases WHERE session_id = $1`, session)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return holder, true
}

// TestFoldLeaseSaveReleases: TryLockFold's save stores the summary exactly
// as SummaryStore.Save does and releases the lease in the same statement;
// after it, release does nothing (it does not free a lease taken since).
func TestFoldLeaseSaveReleases(t *testing.T) {
	t.Parallel()
	testFoldLeaseSaveReleases(t, dbtest.NewSchema(t))
}

func testFoldLeaseSaveReleases(t *testing.T, s dbtest.Schema) {
	f := newFixtureOn(t, s)
	ctx := testCtx(t)
	res := mustAppend(t, ctx, f.messages, "s", "alice", user("q"), assistant("a"))
	release, save, ok, err := f.messages.TryLockFold(ctx, "s", time.Minute)
	if err != nil || !ok || save == nil {
		t.Fatalf("TryLockFold: save %v, ok %v, %v", save != nil, ok, err)
	}
	if _, held := leaseHolder(t, ctx, f, "s"); !held {
		t.Fatal("no lease row")
	}
	// The lease is held: nobody else gets it, through either store.
	if _, ok, _ := f.sums.TryLockFold(ctx, "s", time.Minute); ok {
		t.Fatal("a held lease was taken")
	}
	old, _ := f.sums.Get(ctx, "s")
	sm := summary.Summary{SessionID: "s", Epoch: res.Epoch, UpToSeq: res.LastSeq, Narrative: "by the lease",
		Facts: []summary.Fact{{Key: "k", Value: "v", Category: summary.Entity}}}
	if err := save(ctx, sm); err != nil {
		t.Fatalf("save: %v", err)
	}
	got, err := f.sums.Get(ctx, "s")
	if err != nil || got == nil || got.Narrative != sm.Narrative || got.UpToSeq != sm.UpToSeq || len(got.Facts) != 1 {
		t.Fatalf("stored %+v, %v", got, err)
	}
	if old != nil && got.Version != old.Version+1 {
		t.Errorf("version %d after %d", got.Version, old.Version)
	}
	if _, held := leaseHolder(t, ctx, f, "s"); held {
		t.Fatal("the lease survived the save")
	}
	// A new holder's lease is not freed by the old holder's release.
	rel2, ok, err := f.sums.TryLockFold(ctx, "s", time.Minute)
	if err != nil || !ok {
		t.Fatalf("lease not free after the save: %v %v", ok, err)
	}
	before, _ := leaseHolder(t, ctx, f, "s")
	release()
	if after, held := leaseHolder(t, ctx, f, "s"); !held || after != before {
		t.Fatal("the old holder's release touched the new lease")
	}
	rel2()

	// Save's refusals release the lease too: the fold is over.
	release, save, _, _ = f.messages.TryLockFold(ctx, "s", time.Minute)
	older := summary.Summary{SessionID: "s", Epoch: res.Epoch, UpToSeq: res.LastSeq - 1, Narrative: "older"}
	if err := save(ctx, older); !errors.Is(err, summary.ErrStale) {
		t.Fatalf("save of an older cursor: %v, want ErrStale", err)
	}
	if _, held := leaseHolder(t, ctx, f, "s"); held {
		t.Fatal("the lease survived a refused save")
	}
	release()
	release, save, _, _ = f.messages.TryLockFold(ctx, "s", time.Minute)
	if err := f.messages.Delete(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := save(ctx, summary.Summary{SessionID: "s", Epoch: res.Epoch, UpToSeq: res.LastSeq + 1, Narrative: "late"}); !errors.Is(err, summary.ErrSessionGone) {
		t.Fatalf("save for a deleted session: %v, want ErrSessionGone", err)
	}
	if n := countRows(t, ctx, f.d, "strata_summaries", "s"); n != 0 {
		t.Fatalf("%d summaries after the delete", n)
	}
	if _, held := leaseHolder(t, ctx, f, "s"); held {
		t.Fatal("the lease survived a save for a deleted session")
	}
	release()
}

// TestFoldLeaseSaveRefusedAfterTakeOver: a holder whose lease expired and
// was taken over by another holder cannot save through it: nothing is
// written, and the new holder's lease stays.
func TestFoldLeaseSaveRefusedAfterTakeOver(t *testing.T) {
	t.Parallel()
	testFoldLeaseSaveRefusedAfterTakeOver(t, dbtest.NewSchema(t))
}

func testFoldLeaseSaveRefusedAfterTakeOver(t *testing.T, s dbtest.Schema) {
	ctx := testCtx(t)
	slice := db.WithFoldLeaseSlice(100 * time.Millisecond)
	pool := dbtest.Open(t, s.URL)
	messages, sums := db.NewMessageStore(pool, slice), db.NewSummaryStore(pool, slice)
	other := db.NewSummaryStore(dbtest.Open(t, s.URL), slice) // another replica
	if err := messages.Create(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	res, err := messages.Append(ctx, "s", "alice", user("q"), assistant("a"))
	if err != nil {
		t.Fatal(err)
	}
	// 150 ms asked, in slices of 100 ms: renewed once, then left to expire.
	release, save, ok, err := messages.TryLockFold(ctx, "s", 150*time.Millisecond)
	if err != nil || !ok || save == nil {
		t.Fatalf("lock: %v %v", ok, err)
	}
	var rel2 func()
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if rel2, ok, err = other.TryLockFold(ctx, "s", time.Minute); err != nil {
			t.Fatal(err)
		} else if ok {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("the expired lease was never taken over")
		}
	}
	defer rel2()
	var newHolder string
	if err := pool.GetContext(ctx, &newHolder, `SELECT holder FROM strata_fold_leases WHERE session_id = 's'`); err != nil {
		t.Fatal(err)
	}
	err = save(ctx, summary.Summary{SessionID: "s", Epoch: res.Epoch, UpToSeq: res.LastSeq, Narrative: "late"})
	if !errors.Is(err, summary.ErrStale) {
		t.Fatalf("save after a take-over: %v, want ErrStale", err)
	}
	if got, err := sums.Get(ctx, "s"); err != nil || got != nil {
		t.Fatalf("a refused save stored %+v (%v)", got, err)
	}
	release()
	var holder string
	if err := pool.GetContext(ctx, &holder, `SELECT holder FROM strata_fold_leases WHERE session_id = 's'`); err != nil || holder != newHolder {
		t.Fatalf("the new holder's lease: %q, %v; want %q kept", holder, err, newHolder)
	}
}
