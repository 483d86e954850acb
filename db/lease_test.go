package db_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory/store"
)

func TestFoldLeaseExclusiveAcrossReplicas(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSchema(t)
	ctx := testCtx(t)
	// Two replicas: separate pools, separate stores.
	a := store.FoldLocker(db.NewMessageStore(dbtest.Open(t, s.URL)))
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
	f := newFixture(t)
	ctx := testCtx(t)
	relA, ok, err := f.messages.TryLockFold(ctx, "s", 150*time.Millisecond)
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
	if _, ok, _ := f.messages.TryLockFold(ctx, "s", time.Minute); ok {
		t.Fatal("a stale release freed another holder's lease")
	}
	relB()
	if rel, ok, _ := f.messages.TryLockFold(ctx, "s", 0); !ok {
		t.Fatal("lease not free after the holder's release")
	} else {
		rel()
	}
}

func TestFoldLeaseSingleHolderUnderContention(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSchema(t)
	ctx := testCtx(t)
	var lockers []store.FoldLocker
	for range 4 {
		lockers = append(lockers, store.FoldLocker(db.NewMessageStore(dbtest.Open(t, s.URL))))
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
	a := store.FoldLocker(db.NewMessageStore(dbtest.Open(t, s.URL), slice))
	b := store.FoldLocker(db.NewMessageStore(dbtest.Open(t, s.URL), slice))

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
	a := store.FoldLocker(db.NewMessageStore(dying, slice))
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
