package memory_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-go/strata/memory"
)

func msg(role memory.Role, content string) memory.Message {
	return memory.Message{Role: role, Content: content}
}

func TestInMemoryTailAndRange(t *testing.T) {
	s := memory.NewInMemoryStore()
	ctx := context.Background()
	seed(t, s, "s", "alice", 50)
	tail, err := s.Tail(ctx, "s", 3)
	if err != nil || tail.Total != 100 || len(tail.Messages) != 3 || tail.Messages[2].Content != "a50" {
		t.Fatalf("tail = %+v, %v", tail, err)
	}
	if tail, _ := s.Tail(ctx, "s", 1000); len(tail.Messages) != 100 {
		t.Fatalf("oversized tail returned %d", len(tail.Messages))
	}
	if tail, _ := s.Tail(ctx, "unknown", 5); tail.Total != 0 || len(tail.Messages) != 0 {
		t.Fatalf("unknown session tail = %+v", tail)
	}
	r, _ := s.Range(ctx, "s", 10, 14, 0)
	if len(r) != 4 || r[0].Seq != 11 || r[3].Seq != 14 {
		t.Fatalf("range = %+v", r)
	}
	if r, _ := s.Range(ctx, "s", 10, math.MaxInt64, 2); len(r) != 2 || r[0].Seq != 11 {
		t.Fatalf("limited range = %+v", r)
	}
	// Returned messages are copies.
	tail.Messages[0].Content = "mutated"
	if again, _ := s.Tail(ctx, "s", 3); again.Messages[0].Content == "mutated" {
		t.Fatal("store shares memory with callers")
	}
}

func TestInMemorySeqNeverReused(t *testing.T) {
	s := memory.NewInMemoryStore()
	ctx := context.Background()
	first, _ := s.Append(ctx, "s", "alice", msg(memory.RoleUser, "one"))
	_ = s.Delete(ctx, "s")
	second, _ := s.Append(ctx, "s", "bob", msg(memory.RoleUser, "again"))
	if second.LastSeq <= first.LastSeq || second.Total != 1 {
		t.Fatalf("re-created session reused a sequence: %+v after %+v", second, first)
	}
	if owner, _ := s.Owner(ctx, "s"); owner != "bob" {
		t.Fatalf("owner after re-creation = %q", owner)
	}
}

func TestInMemoryOwnershipIsAtomic(t *testing.T) {
	s := memory.NewInMemoryStore()
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	winners := map[string]bool{}
	for _, u := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		wg.Add(1)
		go func(u string) {
			defer wg.Done()
			if _, err := s.Append(ctx, "s", u, msg(memory.RoleUser, u)); err == nil {
				mu.Lock()
				winners[u] = true
				mu.Unlock()
			} else if !errors.Is(err, memory.ErrNotOwner) {
				t.Error(err)
			}
		}(u)
	}
	wg.Wait()
	if tail, _ := s.Tail(ctx, "s", 10); len(winners) != 1 || tail.Total != 1 {
		t.Fatalf("winners %v, stored %d", winners, tail.Total)
	}
}

func TestInMemoryRetentionIsExplicit(t *testing.T) {
	s := memory.NewInMemoryStoreWith(memory.WithRetention(4))
	seed(t, s, "s", "alice", 5)
	tail, _ := s.Tail(context.Background(), "s", 10)
	if tail.Total != 4 || tail.Messages[0].Content != "u4" {
		t.Fatalf("retention kept %+v", tail)
	}
	unbounded := memory.NewInMemoryStore()
	seed(t, unbounded, "s", "alice", 100)
	if tail, _ := unbounded.Tail(context.Background(), "s", 0); tail.Total != 200 {
		t.Fatalf("default store dropped messages: %d", tail.Total)
	}
}

func TestInMemorySessionsListing(t *testing.T) { // E36 listing rules
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := memory.NewInMemoryStoreWith(memory.WithStoreClock(func() time.Time { now = now.Add(time.Second); return now }))
	ctx := context.Background()
	long := strings.Repeat("é", 60)
	_, _ = s.Append(ctx, "old", "alice", msg(memory.RoleAssistant, "hello"), msg(memory.RoleUser, long))
	_, _ = s.Append(ctx, "bob-1", "bob", msg(memory.RoleUser, "bob's"))
	_, _ = s.Append(ctx, "new", "alice", msg(memory.RoleSystem, "sys"))
	page, total, err := s.Sessions(ctx, "alice", 1, 0)
	if err != nil || total != 2 || len(page) != 1 || page[0].SessionID != "new" || page[0].Preview != "Empty conversation" {
		t.Fatalf("page 1 = %+v, total %d, %v", page, total, err)
	}
	page, _, _ = s.Sessions(ctx, "alice", 1, 1)
	if len(page) != 1 || page[0].SessionID != "old" || page[0].Preview != strings.Repeat("é", 50)+"..." || page[0].MessageCount != 2 {
		t.Fatalf("page 2 = %+v", page)
	}
	if page, _, _ := s.Sessions(ctx, "alice", 10, 5); len(page) != 0 {
		t.Fatalf("offset past the end = %+v", page)
	}
	if page, total, _ := s.Sessions(ctx, "alice", 0, -3); total != 2 || len(page) != 2 {
		t.Fatalf("negative offset = %+v", page)
	}
}

func TestInMemoryRejectsInvalidMessagesAtomically(t *testing.T) {
	s := memory.NewInMemoryStore()
	_, err := s.Append(context.Background(), "s", "alice", msg(memory.RoleUser, "ok"), msg(memory.Role("robot"), "x"))
	if !errors.Is(err, memory.ErrInvalidMessage) {
		t.Fatalf("err = %v", err)
	}
	if tail, _ := s.Tail(context.Background(), "s", 5); tail.Total != 0 {
		t.Fatal("half a batch was stored")
	}
}
