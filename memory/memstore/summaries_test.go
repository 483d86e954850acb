package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-go/strata/memory/memstore"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// Summaries keeps each summary in its session: it follows the
// summary.Store contract, refuses a summary for a session that is not
// live (or of another incarnation), and a summary goes with its session —
// and only with it: one user's new sessions past the bounds evict that
// user's own sessions, never another user's summaries.
func TestSummariesLiveInTheirSessions(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.WithMaxSessions(20), memstore.WithMaxSessionsPerUser(5))
	sums := s.Summaries()
	if err := sums.Save(ctx, summary.Summary{SessionID: "nobody", Narrative: "n", UpToSeq: 1}); !errors.Is(err, summary.ErrSessionGone) {
		t.Fatalf("save for no session: %v, want ErrSessionGone", err)
	}
	create := func(id, user string) int64 {
		t.Helper()
		res, err := s.Append(ctx, id, user, store.Message{Role: store.RoleUser, Content: "hi"})
		if errors.Is(err, store.ErrNotFound) {
			if err = s.Create(ctx, id, user); err == nil {
				res, err = s.Append(ctx, id, user, store.Message{Role: store.RoleUser, Content: "hi"})
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		return res.Epoch
	}
	epoch := create("a1", "alice")
	sm := summary.Summary{SessionID: "a1", Epoch: epoch, Narrative: "n1", UpToSeq: 5,
		Facts: []summary.Fact{{Key: "k", Value: "v", Sources: []int64{1}}}, Forgotten: []summary.Forgotten{{Digest: "x"}}}
	if err := sums.Save(ctx, summary.Summary{SessionID: "a1", Epoch: epoch + 100, Narrative: "n", UpToSeq: 1}); !errors.Is(err, summary.ErrSessionGone) {
		t.Fatalf("save for another incarnation: %v, want ErrSessionGone", err)
	}
	if err := sums.Save(ctx, sm); err != nil {
		t.Fatal(err)
	}
	sm.Facts[0].Sources[0] = 99 // the store keeps its own copy
	if err := sums.Save(ctx, summary.Summary{SessionID: "a1", Epoch: epoch, Narrative: "old", UpToSeq: 4}); !errors.Is(err, summary.ErrStale) {
		t.Fatalf("a lower cursor: %v, want ErrStale", err)
	}
	got, err := sums.Get(ctx, "a1")
	if err != nil || got == nil || got.Version != 1 || got.Narrative != "n1" || got.Facts[0].Sources[0] != 1 || len(got.Forgotten) != 1 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	// bob fills his bound many times over: alice's summary stays.
	for i := range 50 {
		id := fmt.Sprintf("b%d", i)
		ep := create(id, "bob")
		if err := sums.Save(ctx, summary.Summary{SessionID: id, Epoch: ep, Narrative: "bob's", UpToSeq: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := sums.Get(ctx, "a1"); err != nil || got == nil || got.Narrative != "n1" {
		t.Fatalf("bob's sessions evicted alice's summary: %+v, %v", got, err)
	}
	// A deleted session's summary goes with it, and a re-created session
	// starts without one.
	if err := s.Delete(ctx, "a1", "alice"); err != nil {
		t.Fatal(err)
	}
	create("a1", "alice")
	if got, err := sums.Get(ctx, "a1"); err != nil || got != nil {
		t.Fatalf("a re-created session has the old summary: %+v, %v", got, err)
	}
	if !s.KeepsSummaries(sums) || s.KeepsSummaries(summary.NewInMemoryStore(0)) || s.KeepsSummaries(memstore.New().Summaries()) {
		t.Fatal("the store does not recognise its own summary store, or takes another for it")
	}
	if store.Compose(s, sums) != store.Store(s) || store.Compose(s, summary.NewInMemoryStore(0)) == store.Store(s) {
		t.Fatal("Compose does not use the store alone with its own summaries, or does with another summary store")
	}
}

// The fold lease is exclusive under contention: of many goroutines
// trying at once, one holds it at a time, and a holder's save stores its
// summary and frees the lease for the next.
func TestFoldLeaseExclusiveUnderContention(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	if err := s.Create(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	res, err := s.Append(ctx, "s", "alice", store.Message{Role: store.RoleUser, Content: "q"})
	if err != nil {
		t.Fatal(err)
	}
	var holders, maxHolders, saved atomic.Int64
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				release, save, ok, err := s.TryLockFold(ctx, "s", time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					continue
				}
				n := holders.Add(1)
				for m := maxHolders.Load(); n > m && !maxHolders.CompareAndSwap(m, n); m = maxHolders.Load() {
				}
				runtime.Gosched() // hold the lease a while
				holders.Add(-1)   // before the save frees it
				if err := save(ctx, summary.Summary{SessionID: "s", Epoch: res.Epoch, UpToSeq: res.LastSeq, Narrative: fmt.Sprint("by ", i)}); err != nil {
					t.Error(err)
				} else {
					saved.Add(1)
				}
				release()
			}
		}()
	}
	wg.Wait()
	if maxHolders.Load() != 1 || saved.Load() == 0 {
		t.Fatalf("%d holders at once (want 1), %d saves", maxHolders.Load(), saved.Load())
	}
	if sum, err := s.Summary(ctx, "s"); err != nil || sum == nil || sum.Version != saved.Load() {
		t.Fatalf("summary %+v, %v; want version %d (one per save)", sum, err, saved.Load())
	}
}
