package memory_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/memstore"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// countingSums counts the summary store's own saves.
type countingSums struct {
	summary.Store
	saves atomic.Int64
}

func (c *countingSums) Save(ctx context.Context, s summary.Summary) error {
	c.saves.Add(1)
	return c.Store.Save(ctx, s)
}

// savingStore is an in-memory store whose fold lease's save (the
// save-and-release every store.Store's lease may offer) is counted, and
// can be made to refuse as after a take-over.
type savingStore struct {
	*memstore.Store
	saves      atomic.Int64 // saves through the lease
	storeSaves atomic.Int64 // saves through SaveSummary
	refuse     atomic.Bool  // the lease was taken over: its saves are refused
	offered    atomic.Int64 // leases taken with a save
}

func (s *savingStore) SaveSummary(ctx context.Context, sm summary.Summary) error {
	s.storeSaves.Add(1)
	return s.Store.SaveSummary(ctx, sm)
}

func (s *savingStore) TryLockFold(ctx context.Context, id string, ttl time.Duration) (func(), func(context.Context, summary.Summary) error, bool, error) {
	release, save, ok, err := s.Store.TryLockFold(ctx, id, ttl)
	if !ok || save == nil {
		return release, save, ok, err
	}
	s.offered.Add(1)
	return release, func(ctx context.Context, sm summary.Summary) error {
		if s.refuse.Load() {
			return fmt.Errorf("fold lease taken over: %w", summary.ErrStale)
		}
		s.saves.Add(1)
		return save(ctx, sm)
	}, true, nil
}

// released reports whether the session's fold lease is free.
func (s *savingStore) released(t *testing.T, id string) bool {
	release, _, ok, err := s.Store.TryLockFold(context.Background(), id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		release()
	}
	return ok
}

// A fold ends with one save through its lease's save — its last (each
// earlier chunk is saved with SaveSummary, so progress survives a
// failure) — and the lease is released either way.
func TestFoldEndsWithTheLocksSave(t *testing.T) {
	cfg := hierConfig()
	cfg.MaxFoldInputTokens = 50 // chunks of two messages
	st := &savingStore{Store: memstore.New()}
	svc := &fakeSummarizer{}
	mgr := foldOnce(t, st, cfg, st.Summaries(), svc)
	ctx := context.Background()
	calls := svc.calls.Load()
	if calls < 2 || st.saves.Load() != 1 || st.storeSaves.Load() != calls-1 || st.offered.Load() != 1 {
		t.Fatalf("%d chunks: %d saves through the lease, %d through SaveSummary, %d leases offered a save; want the last one through the lease",
			calls, st.saves.Load(), st.storeSaves.Load(), st.offered.Load())
	}
	msgs := mustMessages(t, mgr, "s", "alice", 0)
	if s, _ := st.Summary(ctx, "s"); s == nil || s.UpToSeq != msgs[len(msgs)-cfg.RecentMessageCount-1].Seq {
		t.Fatalf("summary %+v", s)
	}
	if !st.released(t, "s") {
		t.Fatal("fold lease not released")
	}
}

// A save refused because the lease was taken over stores nothing, and the
// fold still releases its lease; over a summary store apart from the
// message store (store.Compose) the lease offers no save and the summary
// store saves.
func TestFoldLockSaveRefusedOrUnavailable(t *testing.T) {
	for _, c := range []struct {
		name           string
		refuse, others bool
	}{{"taken over", true, false}, {"other summary store", false, true}} {
		t.Run(c.name, func(t *testing.T) {
			st := &savingStore{Store: memstore.New()}
			var sums summary.Store = st.Summaries()
			other := &countingSums{Store: summary.NewInMemoryStore(0)}
			if c.others {
				sums = other
			}
			st.refuse.Store(c.refuse)
			foldOnce(t, st, hierConfig(), sums, &fakeSummarizer{})
			ctx := context.Background()
			s, _ := sums.Get(ctx, "s")
			switch {
			case c.refuse && (s != nil || st.storeSaves.Load() != 0):
				t.Fatalf("a refused save stored %+v (%d store saves)", s, st.storeSaves.Load())
			case c.others && (s == nil || other.saves.Load() != 1 || st.saves.Load() != 0 || st.offered.Load() != 1):
				t.Fatalf("summary %+v, %d summary store saves, %d lease saves; want the summary store's save", s, other.saves.Load(), st.saves.Load())
			}
			if !st.released(t, "s") {
				t.Fatal("fold lease not released")
			}
		})
	}
}

// countingLocker is a lockingStore that counts the session reads (Tail).
type countingLocker struct {
	*lockingStore
	tails atomic.Int64
}

func (c *countingLocker) Tail(ctx context.Context, sessionID, userID string, n int) (store.Tail, error) {
	c.tails.Add(1)
	return c.lockingStore.Tail(ctx, sessionID, userID, n)
}

// A chunked session played as an agent plays it (load, then save) is read
// once per load and once per fold: its first load starts tracking its
// backlog, each fold updates the backlog with what it folded, and a fold
// that a save's backlog asks for takes the lock at once and plans under
// it. Nothing unfolded is ever left out of a view.
func TestChunkedSessionReadOncePerLoadAndFold(t *testing.T) {
	store := &countingLocker{lockingStore: &lockingStore{MessageStore: memory.NewInMemoryStore(), held: map[string]bool{}}}
	svc := &fakeSummarizer{}
	sums := summary.NewInMemoryStore(0)
	mgr, err := memory.NewManager(store, chunkedConfig(4, 4), memory.WithSummaries(sums, svc), memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	ctx := context.Background()
	const turns = 40
	for i := 1; i <= turns; i++ {
		h, err := mgr.Load(ctx, "s", "alice")
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := sums.Get(ctx, "s"); s != nil {
			if unfolded := mustMessages(t, mgr, "s", "alice", s.UpToSeq); len(h.Recent) < len(unfolded) {
				t.Fatalf("turn %d: %d messages shown of the %d unfolded", i, len(h.Recent), len(unfolded))
			}
		}
		if err := mgr.SaveTurn(ctx, "s", "alice", fmt.Sprintf("u%d", i), fmt.Sprintf("a%d", i)); err != nil {
			t.Fatal(err)
		}
		if err := mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	folds := mgr.Stats().Folds
	if folds < 10 || folds > 16 {
		t.Fatalf("%d folds for %d turns", folds, turns)
	}
	loads := int64(turns)
	reads := store.tails.Load()
	t.Logf("%d loads, %d folds, %d session reads, %d lock grants", loads, folds, reads, store.grants.Load())
	if reads > loads+folds || store.grants.Load() != folds {
		t.Fatalf("%d session reads and %d lock grants for %d loads and %d folds; want a read per load and per fold, a grant per fold",
			reads, store.grants.Load(), loads, folds)
	}
	s, _ := sums.Get(ctx, "s")
	if n := len(mustMessages(t, mgr, "s", "alice", s.UpToSeq)); n < 4 || n > 8 {
		t.Fatalf("%d messages unfolded at the end, want between K and K+B", n)
	}
}

// foldOnce returns a manager over ms whose session "s" of alice holds 15
// seeded turns and one saved turn, with the fold that turn started done.
func foldOnce(t *testing.T, ms memory.MessageStore, cfg memory.Config, sums summary.Store, svc summary.Service) *memory.Manager {
	t.Helper()
	mgr, err := memory.NewManager(ms, cfg, memory.WithSummaries(sums, svc), memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	ctx := context.Background()
	seed(t, ms, "s", "alice", 15)
	if err := mgr.SaveTurn(ctx, "s", "alice", "u16", "a16"); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return mgr
}
