package summary

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestInMemoryStoreUpsertGetDelete runs in a testing/synctest bubble, so
// that the save after a sleep is later on the store's clock without
// waiting for real.
func TestInMemoryStoreUpsertGetDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := NewInMemoryStore(0)

		got, err := st.Get(ctx, "unknown")
		if got != nil || err != nil {
			t.Fatalf("Get(unknown) = %v, %v; want nil, nil", got, err)
		}
		if err := st.Delete(ctx, "unknown"); err != nil {
			t.Fatalf("Delete(unknown) = %v", err)
		}

		first := Summary{SessionID: "s1", Narrative: "n1", Facts: []Fact{{Key: "order_id", Value: "#1234", Category: Entity}}, UpToSeq: 10}
		if err := st.Save(ctx, first); err != nil {
			t.Fatal(err)
		}
		got, err = st.Get(ctx, "s1")
		if err != nil || got == nil {
			t.Fatalf("Get = %v, %v", got, err)
		}
		if got.Narrative != "n1" || got.UpToSeq != 10 || got.Version != 1 || len(got.Facts) != 1 {
			t.Fatalf("first save stored %+v", got)
		}
		if got.CreatedAt.IsZero() || !got.UpdatedAt.Equal(got.CreatedAt) {
			t.Fatalf("timestamps %v / %v", got.CreatedAt, got.UpdatedAt)
		}
		created := got.CreatedAt

		// The bubble's clock moves on exactly this much, at once.
		time.Sleep(2 * time.Millisecond)
		second := Summary{SessionID: "s1", Narrative: "n2", UpToSeq: 20, CreatedAt: created.Add(time.Hour)}
		if err := st.Save(ctx, second); err != nil {
			t.Fatal(err)
		}
		got, _ = st.Get(ctx, "s1")
		if got.Narrative != "n2" || got.UpToSeq != 20 || got.Version != 2 || len(got.Facts) != 0 {
			t.Fatalf("upsert stored %+v", got)
		}
		if !got.CreatedAt.Equal(created) {
			t.Fatalf("CreatedAt changed: %v -> %v", created, got.CreatedAt)
		}
		if !got.UpdatedAt.After(created) {
			t.Fatalf("UpdatedAt %v not after CreatedAt %v", got.UpdatedAt, created)
		}

		// Same cursor: still an upsert.
		if err := st.Save(ctx, Summary{SessionID: "s1", Narrative: "n3", UpToSeq: 20}); err != nil {
			t.Fatal(err)
		}
		if got, _ = st.Get(ctx, "s1"); got.Narrative != "n3" || got.Version != 3 {
			t.Fatalf("same-cursor save stored %+v", got)
		}

		if err := st.Delete(ctx, "s1"); err != nil {
			t.Fatal(err)
		}
		if got, err = st.Get(ctx, "s1"); got != nil || err != nil {
			t.Fatalf("after Delete: %v, %v", got, err)
		}
		// A session saved again after deletion starts over.
		_ = st.Save(ctx, Summary{SessionID: "s1", Narrative: "again", UpToSeq: 1})
		if got, _ = st.Get(ctx, "s1"); got.Version != 1 || got.UpToSeq != 1 {
			t.Fatalf("re-created %+v", got)
		}
	})
}

func TestInMemoryStoreKeepsGivenCreatedAt(t *testing.T) {
	ctx := context.Background()
	st := NewInMemoryStore(10)
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	_ = st.Save(ctx, Summary{SessionID: "s", Narrative: "x", CreatedAt: at})
	got, _ := st.Get(ctx, "s")
	if !got.CreatedAt.Equal(at) {
		t.Fatalf("CreatedAt = %v, want %v", got.CreatedAt, at)
	}
}

func TestInMemoryStoreNeverLowersCursor(t *testing.T) {
	ctx := context.Background()
	st := NewInMemoryStore(10)
	_ = st.Save(ctx, Summary{SessionID: "s", Narrative: "newer", UpToSeq: 40})
	if err := st.Save(ctx, Summary{SessionID: "s", Narrative: "older", UpToSeq: 30}); !errors.Is(err, ErrStale) {
		t.Fatalf("stale save returned %v, want ErrStale", err)
	}
	got, _ := st.Get(ctx, "s")
	if got.Narrative != "newer" || got.UpToSeq != 40 || got.Version != 1 {
		t.Fatalf("stale save changed the summary: %+v", got)
	}
	// Another epoch (the session was re-created) replaces it, whatever the
	// cursor: the old summary belonged to a deleted predecessor.
	if err := st.Save(ctx, Summary{SessionID: "s", Epoch: 2, Narrative: "successor", UpToSeq: 5}); err != nil {
		t.Fatalf("save of a new epoch: %v", err)
	}
	got, _ = st.Get(ctx, "s")
	if got.Narrative != "successor" || got.Epoch != 2 || got.Version != 1 {
		t.Fatalf("new epoch stored %+v", got)
	}
}

func TestInMemoryStoreCopies(t *testing.T) {
	ctx := context.Background()
	st := NewInMemoryStore(10)
	s := Summary{SessionID: "s", Facts: []Fact{{Key: "k", Value: "v"}}}
	_ = st.Save(ctx, s)
	s.Facts[0].Value = "changed by caller after save"

	got, _ := st.Get(ctx, "s")
	if got.Facts[0].Value != "v" {
		t.Fatalf("store shares memory with the saved value")
	}
	got.Facts[0].Value = "changed by caller after get"
	got.Narrative = "changed"
	again, _ := st.Get(ctx, "s")
	if again.Facts[0].Value != "v" || again.Narrative != "" {
		t.Fatalf("Get does not return a deep copy: %+v", again)
	}
}

func TestInMemoryStoreBound(t *testing.T) {
	ctx := context.Background()
	st := NewInMemoryStore(5)
	for i := 0; i < 100; i++ {
		if err := st.Save(ctx, Summary{SessionID: fmt.Sprintf("s%03d", i), Narrative: "n", UpToSeq: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var kept []string
	for i := 0; i < 100; i++ {
		id := fmt.Sprintf("s%03d", i)
		if got, _ := st.Get(ctx, id); got != nil {
			kept = append(kept, id)
		}
	}
	if fmt.Sprint(kept) != "[s095 s096 s097 s098 s099]" {
		t.Fatalf("kept %v", kept)
	}
}

func TestInMemoryStoreDefaultBound(t *testing.T) {
	st := NewInMemoryStore(-1).(*inMemoryStore)
	ctx := context.Background()
	for i := 0; i < DefaultMaxSummaries+10; i++ {
		_ = st.Save(ctx, Summary{SessionID: fmt.Sprint(i)})
	}
	if n := st.cache.Len(); n != DefaultMaxSummaries {
		t.Fatalf("len = %d, want %d", n, DefaultMaxSummaries)
	}
}

func TestInMemoryStoreLRU(t *testing.T) {
	ctx := context.Background()
	st := NewInMemoryStore(2)
	_ = st.Save(ctx, Summary{SessionID: "a"})
	_ = st.Save(ctx, Summary{SessionID: "b"})
	_, _ = st.Get(ctx, "a") // a is now the most recently used
	_ = st.Save(ctx, Summary{SessionID: "c"})
	if got, _ := st.Get(ctx, "b"); got != nil {
		t.Fatal("least recently used summary not evicted")
	}
	if got, _ := st.Get(ctx, "a"); got == nil {
		t.Fatal("recently read summary evicted")
	}
}

func TestInMemoryStoreErrors(t *testing.T) {
	st := NewInMemoryStore(2)
	if err := st.Save(context.Background(), Summary{}); !errors.Is(err, ErrNoSessionID) {
		t.Fatalf("Save without session id: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := st.Save(ctx, Summary{SessionID: "s"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Save: %v", err)
	}
	if _, err := st.Get(ctx, "s"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get: %v", err)
	}
	if err := st.Delete(ctx, "s"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Delete: %v", err)
	}
}

func TestInMemoryStoreConcurrent(t *testing.T) {
	ctx := context.Background()
	st := NewInMemoryStore(50)
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				id := fmt.Sprintf("s%d", i%8)
				_ = st.Save(ctx, Summary{SessionID: id, Narrative: fmt.Sprint(w), UpToSeq: int64(i), Facts: []Fact{{Key: "k", Value: fmt.Sprint(i)}}})
				got, err := st.Get(ctx, id)
				if err != nil {
					t.Errorf("Get(%s): %v", id, err)
					return
				}
				if got == nil { // another worker deleted it in between
					continue
				}
				got.Facts[0].Value = "mutated"
				if i%50 == 0 {
					_ = st.Delete(ctx, fmt.Sprintf("s%d", (i+1)%8))
				}
			}
		}(w)
	}
	wg.Wait()
	// Cursors only grow, and every saved cursor was at most 199.
	for i := 0; i < 8; i++ {
		got, _ := st.Get(ctx, fmt.Sprintf("s%d", i))
		if got != nil && (got.UpToSeq > 199 || got.Facts[0].Value == "mutated") {
			t.Fatalf("summary %+v", got)
		}
	}
}

func TestInMemoryStoreConcurrentCursorMonotonic(t *testing.T) {
	ctx := context.Background()
	st := NewInMemoryStore(10)
	var wg sync.WaitGroup
	for i := 1; i <= 100; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_ = st.Save(ctx, Summary{SessionID: "s", UpToSeq: int64(i)})
		}(i)
	}
	wg.Wait()
	got, _ := st.Get(ctx, "s")
	if got.UpToSeq != 100 {
		t.Fatalf("UpToSeq = %d, want 100", got.UpToSeq)
	}
}
