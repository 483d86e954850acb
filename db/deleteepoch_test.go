package db_test

import (
	"context"
	"testing"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// slowDelete pauses after each Delete of its message store, the moment in
// which another replica may re-create the session.
type slowDelete struct {
	*db.MessageStore
	deleted, proceed chan struct{}
}

func (s *slowDelete) Delete(ctx context.Context, sessionID, userID string) error {
	err := s.MessageStore.Delete(ctx, sessionID, userID)
	s.deleted <- struct{}{}
	<-s.proceed
	return err
}

// DeleteSession removes the summary of the incarnation it deleted only: a
// session re-created by another user on another replica, and folded,
// between the delete of the messages and the end of DeleteSession keeps
// its fresh summary.
func TestDeleteKeepsSummaryOfRecreatedSession(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSchema(t)
	cfg := hierarchicalConfig(memory.PolicyParity)
	svc := summary.ServiceFunc(func(_ context.Context, req summary.Request) (summary.Result, error) {
		return summary.Result{Narrative: "summary of " + req.Messages[0].GetContent()}, nil
	})
	d := dbtest.Open(t, s.URL)
	slow := &slowDelete{MessageStore: db.NewMessageStore(d), deleted: make(chan struct{}, 1), proceed: make(chan struct{})}
	a, err := memory.NewManager(slow, cfg, memory.WithSummaries(db.NewSummaryStore(d), svc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	b := newReplica(t, s.URL, cfg, svc)

	ctx := context.Background()
	for range 4 {
		if err := a.SaveTurn(ctx, "s", "alice", "alice's question", "answer"); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	deleted := make(chan error, 1)
	go func() { deleted <- a.DeleteSession(ctx, "s", "alice") }()
	<-slow.deleted
	// Bob re-creates the session on replica b and folds it.
	for range 4 {
		if err := b.mgr.SaveTurn(ctx, "s", "bob", "bob's question", "answer"); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if sum, err := b.mgr.Summary(ctx, "s", "bob"); err != nil || sum == nil {
		t.Fatalf("bob's summary before alice's delete ends: %v, %v", sum, err)
	}
	close(slow.proceed)
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	sum, err := b.mgr.Summary(ctx, "s", "bob")
	if err != nil || sum == nil || sum.Narrative != "summary of bob's question" {
		t.Fatalf("bob's summary after alice's delete of the old incarnation: %+v, %v", sum, err)
	}
}
