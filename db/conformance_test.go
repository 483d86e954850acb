package db_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/memorytest"
	"github.com/strata-go/strata/memory/store"
)

// TestMessageStoreConformance runs the memory.MessageStore conformance
// suite, its 1000-round ownership race included (100 under -short),
// against one PostgreSQL store.
func TestMessageStoreConformance(t *testing.T) {
	t.Parallel()
	d := dbtest.New(t)
	d.SetMaxIdleConns(dbtest.MaxOpenConns) // the suite's 8 contenders, without reconnecting
	store := db.NewMessageStore(d)
	memorytest.Run(t, func(t *testing.T) memory.MessageStore { return store })
}

// TestSummaryCapabilitiesConformance runs the conformance suite of the
// capabilities that involve summaries (store.FoldLocker, FoldSaveLocker,
// SnapshotReader, AfterSummaryReader) against the PostgreSQL stores, which
// implement all four.
func TestSummaryCapabilitiesConformance(t *testing.T) {
	t.Parallel()
	d := dbtest.New(t)
	memorytest.RunSummaryCapabilities(t, func(*testing.T) memorytest.Stores {
		return memorytest.Stores{Messages: db.NewMessageStore(d), Summaries: db.NewSummaryStore(d)}
	})
}

// TestMessageStoreConformanceAcrossReplicas runs the suite against two
// replicas sharing one database: every call goes to the next of two
// stores on separate pools, so the promises must hold across processes,
// not only within one.
func TestMessageStoreConformanceAcrossReplicas(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSchema(t)
	r := &replicas{stores: [2]memory.MessageStore{
		db.NewMessageStore(dbtest.Open(t, s.URL)),
		db.NewMessageStore(dbtest.Open(t, s.URL)),
	}}
	memorytest.Run(t, func(t *testing.T) memory.MessageStore { return r })
}

// replicas is a memory.MessageStore that sends each call to the next of
// its stores in turn.
type replicas struct {
	stores [2]memory.MessageStore
	n      atomic.Uint64
}

func (r *replicas) next() memory.MessageStore { return r.stores[r.n.Add(1)%2] }

func (r *replicas) Create(ctx context.Context, sessionID, userID string) error {
	return r.next().Create(ctx, sessionID, userID)
}

func (r *replicas) Append(ctx context.Context, sessionID, userID string, msgs ...store.Message) (store.AppendResult, error) {
	return r.next().Append(ctx, sessionID, userID, msgs...)
}

func (r *replicas) Tail(ctx context.Context, sessionID, userID string, n int) (store.Tail, error) {
	return r.next().Tail(ctx, sessionID, userID, n)
}

func (r *replicas) Range(ctx context.Context, sessionID, userID string, afterSeq, throughSeq int64, limit int) ([]store.Message, error) {
	return r.next().Range(ctx, sessionID, userID, afterSeq, throughSeq, limit)
}

func (r *replicas) Replace(ctx context.Context, sessionID, userID string, msgs ...store.Message) (store.AppendResult, error) {
	return r.next().(store.Replacer).Replace(ctx, sessionID, userID, msgs...)
}

func (r *replicas) Delete(ctx context.Context, sessionID, userID string) error {
	return r.next().Delete(ctx, sessionID, userID)
}

func (r *replicas) Sessions(ctx context.Context, userID string, limit, offset int) ([]store.SessionInfo, int, error) {
	return r.next().Sessions(ctx, userID, limit, offset)
}
