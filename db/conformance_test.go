package db_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory/memorytest"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// TestMessageStoreConformance runs the memory.MessageStore conformance
// suite, its 1000-round ownership race included (100 under -short),
// against one PostgreSQL store.
func TestMessageStoreConformance(t *testing.T) {
	t.Parallel()
	d := dbtest.New(t)
	d.SetMaxIdleConns(dbtest.MaxOpenConns) // the suite's 8 contenders, without reconnecting
	ms := db.NewMessageStore(d)
	memorytest.Run(t, func(t *testing.T) store.Store { return ms })
}

// TestSummaryConformance runs the conformance suite of the summary part of
// the store contract (summary, snapshot reads, fold lease) against the
// PostgreSQL store, alone and across two replicas.
func TestSummaryConformance(t *testing.T) {
	t.Parallel()
	d := dbtest.New(t)
	memorytest.RunSummaries(t, func(*testing.T) store.Store { return db.NewMessageStore(d) })
	s := dbtest.NewSchema(t)
	r := &replicas{stores: [2]store.Store{db.NewMessageStore(dbtest.Open(t, s.URL)), db.NewMessageStore(dbtest.Open(t, s.URL))}}
	t.Run("AcrossReplicas", func(t *testing.T) {
		memorytest.RunSummaries(t, func(*testing.T) store.Store { return r })
	})
}

// TestMessageStoreConformanceAcrossReplicas runs the suite against two
// replicas sharing one database: every call goes to the next of two
// stores on separate pools, so the promises must hold across processes,
// not only within one.
func TestMessageStoreConformanceAcrossReplicas(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSchema(t)
	r := &replicas{stores: [2]store.Store{
		db.NewMessageStore(dbtest.Open(t, s.URL)),
		db.NewMessageStore(dbtest.Open(t, s.URL)),
	}}
	memorytest.Run(t, func(t *testing.T) store.Store { return r })
}

// replicas is a store.Store that sends each call to the next of its
// stores in turn.
type replicas struct {
	stores [2]store.Store
	n      atomic.Uint64
}

func (r *replicas) next() store.Store { return r.stores[r.n.Add(1)%2] }

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
	return r.next().Replace(ctx, sessionID, userID, msgs...)
}

func (r *replicas) Delete(ctx context.Context, sessionID, userID string) error {
	return r.next().Delete(ctx, sessionID, userID)
}

func (r *replicas) Sessions(ctx context.Context, userID string, limit, offset int) ([]store.SessionInfo, int, error) {
	return r.next().Sessions(ctx, userID, limit, offset)
}

func (r *replicas) Import(ctx context.Context, sessionID, userID string, msgs []store.Message, sum func(int64, []int64) *summary.Summary) (store.AppendResult, error) {
	return r.next().Import(ctx, sessionID, userID, msgs, sum)
}

func (r *replicas) Forget(ctx context.Context, sessionID, userID string, seqs []int64, clean func(*summary.Summary, int64, []store.Message) *summary.Summary) error {
	return r.next().Forget(ctx, sessionID, userID, seqs, clean)
}

func (r *replicas) ParticipantSessions(ctx context.Context, ownerID, participant string, limit, offset int) ([]store.SessionInfo, int, error) {
	return r.next().ParticipantSessions(ctx, ownerID, participant, limit, offset)
}

func (r *replicas) Summary(ctx context.Context, sessionID string) (*summary.Summary, error) {
	return r.next().Summary(ctx, sessionID)
}

func (r *replicas) SaveSummary(ctx context.Context, s summary.Summary) error {
	return r.next().SaveSummary(ctx, s)
}

func (r *replicas) Snapshot(ctx context.Context, sessionID, userID string, n int) (store.Tail, *summary.Summary, error) {
	return r.next().Snapshot(ctx, sessionID, userID, n)
}

func (r *replicas) SnapshotAfterSummary(ctx context.Context, sessionID, userID string, n int) (store.Tail, *summary.Summary, error) {
	return r.next().SnapshotAfterSummary(ctx, sessionID, userID, n)
}

func (r *replicas) EditJournal(ctx context.Context, sessionID string, epoch int64, edit func(j *store.Journal)) error {
	return r.next().EditJournal(ctx, sessionID, epoch, edit)
}

func (r *replicas) ReadJournal(ctx context.Context, sessionID string, epoch int64) (store.Journal, error) {
	return r.next().ReadJournal(ctx, sessionID, epoch)
}

func (r *replicas) TryLockFold(ctx context.Context, sessionID string, ttl time.Duration) (func(), func(context.Context, summary.Summary) error, bool, error) {
	return r.next().TryLockFold(ctx, sessionID, ttl)
}
