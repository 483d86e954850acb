package server

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

// countingStore counts the calls made to a message store.
type countingStore struct {
	memory.MessageStore
	calls atomic.Int64
}

func (c *countingStore) Create(ctx context.Context, id, user string) error {
	c.calls.Add(1)
	return c.MessageStore.Create(ctx, id, user)
}

func (c *countingStore) Append(ctx context.Context, id, user string, msgs ...store.Message) (store.AppendResult, error) {
	c.calls.Add(1)
	return c.MessageStore.Append(ctx, id, user, msgs...)
}

func (c *countingStore) Tail(ctx context.Context, id, user string, n int) (store.Tail, error) {
	c.calls.Add(1)
	return c.MessageStore.Tail(ctx, id, user, n)
}

func (c *countingStore) Range(ctx context.Context, id, user string, after, through int64, limit int) ([]store.Message, error) {
	c.calls.Add(1)
	return c.MessageStore.Range(ctx, id, user, after, through, limit)
}

func (c *countingStore) Delete(ctx context.Context, id, user string) error {
	c.calls.Add(1)
	return c.MessageStore.Delete(ctx, id, user)
}

func (c *countingStore) Sessions(ctx context.Context, user string, limit, offset int) ([]store.SessionInfo, int, error) {
	c.calls.Add(1)
	return c.MessageStore.Sessions(ctx, user, limit, offset)
}

// GET /v1/sessions/{id}/context makes as many store calls for a session
// that does not exist as for another user's: both answer 404, and neither
// costs a call the other does not.
func TestContextProbeCostsTheSame(t *testing.T) {
	cs := &countingStore{MessageStore: memory.NewInMemoryStore()}
	ts := stack{store: cs}.start(t)
	bobs := ts.create(keyBob, nil)
	ts.must(200, "POST", "/v1/sessions/"+bobs+"/messages", keyBob, turn("hi", "hello"), nil)
	cost := func(id string) int64 {
		t.Helper()
		before := cs.calls.Load()
		r := ts.do("GET", "/v1/sessions/"+id+"/context", keyAlice, nil)
		if e := r.errorOf(t); r.status != 404 || e.Code != "not_found" {
			t.Fatalf("context of %s as alice: %s", id, r)
		}
		return cs.calls.Load() - before
	}
	missing, others := cost("never-created"), cost(bobs)
	if missing != others {
		t.Fatalf("a missing session costs %d store calls, another user's %d", missing, others)
	}
}
