package db_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// A replica that closes while its fold hangs in a summarizer that ignores
// its context lets another replica fold that session within 8 s: Close
// abandons the fold, which releases its lease instead of renewing it.
func TestClosedReplicaReleasesHungFold(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSchema(t)
	cfg := hierarchicalConfig(memory.PolicyParity)
	cfg.CloseTimeout = 100 * time.Millisecond
	entered, release := make(chan struct{}, 16), make(chan struct{})
	var once sync.Once
	hung := summary.ServiceFunc(func(_ context.Context, req summary.Request) (summary.Result, error) {
		entered <- struct{}{}
		<-release // ignores its context
		return summary.Result{Narrative: "late"}, nil
	})
	folds := summary.ServiceFunc(func(_ context.Context, req summary.Request) (summary.Result, error) {
		return summary.Result{Narrative: "folded by b"}, nil
	})
	a := newReplica(t, s.URL, cfg, hung)
	b := newReplica(t, s.URL, cfg, folds)
	t.Cleanup(func() { once.Do(func() { close(release) }) })

	ctx := context.Background()
	for i := range 4 {
		if err := a.mgr.SaveTurn(ctx, "s", "alice", "question", "answer"); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("replica a's fold never called its summarizer")
	}
	if err := a.mgr.Close(); err == nil {
		t.Fatal("Close reported nothing about the abandoned summarizer call")
	}

	lctx, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	h, err := b.mgr.Load(lctx, "s", "alice")
	if err != nil || h.Summary == nil || h.Summary.Narrative != "folded by b" {
		t.Fatalf("replica b's load within 8 s of a's Close: mode %s, summary %+v, %v", h.Mode, h.Summary, err)
	}
	once.Do(func() { close(release) })
}
