package server

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// An erasure while another replica's fold of the session hangs (its
// summarizer ignores its context, the fold lease stays held) answers 503
// with Retry-After once the manager's FoldWait is over, not 500: the
// session is busy, and a retry after the fold succeeds. Both forms of
// erasure, and ForgetFact, on PostgreSQL with two replicas.
func TestForgetDuringAnotherReplicasHungFoldIs503(t *testing.T) {
	t.Parallel()
	d := dbtest.New(t)
	cfg := testMemoryConfig()
	cfg.FoldWait = 300 * time.Millisecond
	cfg.CloseTimeout = 100 * time.Millisecond

	entered, release := make(chan struct{}, 16), make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	hung := summary.ServiceFunc(func(context.Context, summary.Request) (summary.Result, error) {
		entered <- struct{}{}
		<-release // ignores its context
		return summary.Result{Narrative: "late"}, nil
	})
	a, err := memory.NewManager(db.NewMessageStore(d), cfg, memory.WithSummaries(db.NewSummaryStore(d), hung))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	ctx := context.Background()
	for i := range 8 {
		if err := a.SaveTurn(ctx, "busy-session", "alice", fmt.Sprintf("Question %d about my order.", i), "An answer."); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("replica a's fold never called its summarizer")
	}

	ts := stack{mcfg: &cfg, store: db.NewMessageStore(d), sums: db.NewSummaryStore(d), idx: db.NewCatalogIndex(d)}.start(t)
	for _, path := range []string{
		"/v1/sessions/busy-session/messages/1",
		"/v1/sessions/busy-session/messages?seq=1&seq=2",
		"/v1/sessions/busy-session/facts/anything",
	} {
		r := ts.do("DELETE", path, keyAlice, nil)
		if r.status != 503 || r.header.Get("Retry-After") == "" {
			t.Fatalf("DELETE %s during another replica's hung fold: %s (Retry-After %q), want 503 with Retry-After", path, r, r.header.Get("Retry-After"))
		}
		if e := r.errorOf(t); e.Code != "unavailable" {
			t.Fatalf("code %q, want unavailable", e.Code)
		}
	}
	// The fold ends (Flush waits for it, lease released): the erasure goes
	// through.
	once.Do(func() { close(release) })
	_ = a.Close()
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := a.Flush(fctx); err != nil {
		t.Fatalf("replica a's fold did not end once released: %v", err)
	}
	if r := ts.do("DELETE", "/v1/sessions/busy-session/messages/1", keyAlice, nil); r.status != 204 {
		t.Fatalf("DELETE after the fold ended: %s", r)
	}
}
