package memstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/strata-go/strata/memory/memstore"
	"github.com/strata-go/strata/memory/store"
)

// Seqs are per session and never reused for an id, also past the bound
// on the removed ids the store remembers (as many as it holds sessions):
// ids deleted or evicted, many more than the bound, each go on above
// their predecessor's numbers when created again, and two users' writes
// never show in each other's seqs.
func TestInMemorySeqsPerIDBeyondTheBound(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.WithMaxSessions(4), memstore.WithMaxSessionsPerUser(2))
	msg := store.Message{Role: store.RoleUser, Content: "x"}
	last := map[string]int64{}
	for round := range 3 {
		for i := range 10 {
			id := fmt.Sprint("id-", i)
			if err := s.Create(ctx, id, "alice"); err != nil {
				t.Fatal(err)
			}
			res, err := s.Append(ctx, id, "alice", msg, msg)
			if err != nil {
				t.Fatal(err)
			}
			if first := res.LastSeq - 1; first <= last[id] {
				t.Fatalf("round %d: %s re-created got seqs from %d, its predecessor reached %d", round, id, first, last[id])
			}
			last[id] = res.LastSeq
			if i%2 == 0 {
				// Odd ids are evicted by the next Creates (two per user).
				if err := s.Delete(ctx, id, "alice"); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// Bob's session is dense however much alice writes.
	if err := s.Create(ctx, "bob's", "bob"); err != nil {
		t.Fatal(err)
	}
	var prev int64
	for i := range 20 {
		res, err := s.Append(ctx, "bob's", "bob", msg)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && res.LastSeq != prev+1 {
			t.Fatalf("bob's seqs jump from %d to %d", prev, res.LastSeq)
		}
		prev = res.LastSeq
		if _, err := s.Append(ctx, "id-9", "alice", msg, msg); err != nil {
			t.Fatal(err)
		}
	}
}
