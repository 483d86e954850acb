package memory_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-go/strata/memory"
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

// savingLocker is a lockingStore that can also save a fold's result and
// release the lock in one step (the capability the PostgreSQL stores
// have), for the summary store writes, and records how it is used.
type savingLocker struct {
	*lockingStore
	writes  summary.Store // the summary store its saves can write to
	saves   atomic.Int64  // saves through the lock
	refuse  atomic.Bool   // the lock was taken over: saves are refused
	offered atomic.Int64  // locks taken with a save
}

func (s *savingLocker) TryLockFoldSaving(ctx context.Context, id string, ttl time.Duration, sums store.SummaryStore) (func(), func(context.Context, summary.Summary) error, bool, error) {
	release, ok, err := s.TryLockFold(ctx, id, ttl)
	if !ok || sums != s.writes {
		return release, nil, ok, err
	}
	s.offered.Add(1)
	var once sync.Once
	rel := func() { once.Do(release) }
	save := func(ctx context.Context, sm summary.Summary) error {
		if s.refuse.Load() {
			return fmt.Errorf("fold lock taken over: %w", summary.ErrStale)
		}
		s.saves.Add(1)
		w := s.writes
		if c, ok := w.(*countingSums); ok {
			w = c.Store // a save of its own, not the store's Save
		}
		err := w.Save(ctx, sm)
		rel()
		return err
	}
	return rel, save, true, nil
}

func newSavingLocker() *savingLocker {
	return &savingLocker{lockingStore: &lockingStore{MessageStore: memory.NewInMemoryStore(), held: map[string]bool{}}}
}

// A fold whose lock can save ends with one save through it — its last
// (each earlier chunk is saved by the summary store, so progress survives a
// failure) — and the lock is released either way.
func TestFoldEndsWithTheLocksSave(t *testing.T) {
	cfg := hierConfig()
	cfg.MaxFoldInputTokens = 50 // chunks of two messages
	store := newSavingLocker()
	sums := &countingSums{Store: summary.NewInMemoryStore(0)}
	store.writes = sums
	svc := &fakeSummarizer{}
	mgr := foldOnce(t, store, cfg, sums, svc)
	ctx := context.Background()
	calls := svc.calls.Load()
	if calls < 2 || store.saves.Load() != 1 || sums.saves.Load() != calls-1 || store.offered.Load() != 1 {
		t.Fatalf("%d chunks: %d saves through the lock, %d through the store, %d locks offered a save; want the last one through the lock",
			calls, store.saves.Load(), sums.saves.Load(), store.offered.Load())
	}
	msgs := mustMessages(t, mgr, "s", "alice", 0)
	if s, _ := sums.Get(ctx, "s"); s == nil || s.UpToSeq != msgs[len(msgs)-cfg.RecentMessageCount-1].Seq {
		t.Fatalf("summary %+v", s)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if len(store.held) != 0 {
		t.Fatal("fold lock not released")
	}
}

// A save refused because the lock was taken over stores nothing, and the
// fold still releases its lock; a lock that cannot write to the manager's
// summary store (save nil) leaves the saves to the store.
func TestFoldLockSaveRefusedOrUnavailable(t *testing.T) {
	for _, c := range []struct {
		name           string
		refuse, others bool
	}{{"taken over", true, false}, {"other summary store", false, true}} {
		t.Run(c.name, func(t *testing.T) {
			store := newSavingLocker()
			sums := &countingSums{Store: summary.NewInMemoryStore(0)}
			store.writes = sums
			if c.others {
				store.writes = summary.NewInMemoryStore(0)
			}
			store.refuse.Store(c.refuse)
			foldOnce(t, store, hierConfig(), sums, &fakeSummarizer{})
			ctx := context.Background()
			s, _ := sums.Get(ctx, "s")
			switch {
			case c.refuse && (s != nil || sums.saves.Load() != 0):
				t.Fatalf("a refused save stored %+v (%d store saves)", s, sums.saves.Load())
			case c.others && (s == nil || sums.saves.Load() != 1 || store.saves.Load() != 0):
				t.Fatalf("summary %+v, %d store saves, %d lock saves; want the store's save", s, sums.saves.Load(), store.saves.Load())
			}
			store.mu.Lock()
			defer store.mu.Unlock()
			if len(store.held) != 0 {
				t.Fatal("fold lock not released")
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
