package summary

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/strata-go/strata/record"
)

// DefaultMaxSummaries bounds the in-memory store when NewInMemoryStore is
// given a size <= 0.
const DefaultMaxSummaries = 10_000

// ErrNoSessionID reports a Save of a summary without a SessionID.
var ErrNoSessionID = record.ErrNoSessionID

type inMemoryStore struct {
	mu    sync.Mutex
	cache *simplelru.LRU[string, Summary]
	now   func() time.Time
}

// NewInMemoryStore returns a goroutine-safe Store that keeps at most
// maxSummaries summaries (DefaultMaxSummaries when maxSummaries <= 0),
// evicting the least recently used one when full; Get and Save count as
// uses.
//
// Save follows the Store contract: a save whose UpToSeq is below the stored
// one is ignored; otherwise the summary is stored with CreatedAt kept from
// the first save (or set to now when zero), UpdatedAt = now and Version =
// the stored version + 1 (1 for the first save). The store keeps its own
// copy: Get returns a deep copy, and later changes to a saved value do not
// reach the store. Delete of an unknown session is not an error. All
// methods return ctx.Err() when ctx is already done.
func NewInMemoryStore(maxSummaries int) Store {
	if maxSummaries <= 0 {
		maxSummaries = DefaultMaxSummaries
	}
	cache, err := simplelru.NewLRU[string, Summary](maxSummaries, nil)
	if err != nil { // only for a non-positive size, excluded above
		panic(err)
	}
	return &inMemoryStore{cache: cache, now: time.Now}
}

// Get implements Store.
func (s *inMemoryStore) Get(ctx context.Context, sessionID string) (*Summary, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sum, ok := s.cache.Get(sessionID)
	if !ok {
		return nil, nil
	}
	c := sum.Clone()
	return &c, nil
}

// Save implements Store.
func (s *inMemoryStore) Save(ctx context.Context, sum Summary) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if sum.SessionID == "" {
		return ErrNoSessionID
	}
	sum = sum.Clone()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if old, ok := s.cache.Get(sum.SessionID); ok && old.Epoch == sum.Epoch {
		if sum.UpToSeq < old.UpToSeq {
			return ErrStale
		}
		sum.CreatedAt = old.CreatedAt
		sum.Version = old.Version + 1
	} else {
		if sum.CreatedAt.IsZero() {
			sum.CreatedAt = now
		}
		sum.Version = 1
	}
	sum.UpdatedAt = now
	s.cache.Add(sum.SessionID, sum)
	return nil
}

// Delete implements Store.
func (s *inMemoryStore) Delete(ctx context.Context, sessionID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cache.Remove(sessionID)
	return nil
}
