package server

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-go/strata/internal/testutil"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// slowStore blocks appends to the session named by slow until released.
type slowStore struct {
	memory.MessageStore
	slow    atomic.Value // string
	entered chan struct{}
	release chan struct{}
}

func (s *slowStore) Append(ctx context.Context, id, user string, msgs ...store.Message) (store.AppendResult, error) {
	if slow, _ := s.slow.Load().(string); id == slow && len(msgs) > 0 {
		s.entered <- struct{}{}
		<-s.release
	}
	return s.MessageStore.Append(ctx, id, user, msgs...)
}

// slowSummarizer is the extractive summarizer, slowed down, announcing its
// first call.
func slowSummarizer(started chan<- struct{}, delay time.Duration) summary.Service {
	var once sync.Once
	ext := summary.NewExtractiveService()
	return summary.ServiceFunc(func(ctx context.Context, req summary.Request) (summary.Result, error) {
		once.Do(func() { close(started) })
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return summary.Result{}, ctx.Err()
		}
		return ext.Summarize(ctx, req)
	})
}

func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	store := &slowStore{MessageStore: memory.NewInMemoryStore(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	foldStarted := make(chan struct{})
	sums := summary.NewInMemoryStore(0)
	logs := &testutil.Buffer{}
	ts := stack{store: store, sums: sums, svc: slowSummarizer(foldStarted, 400*time.Millisecond), logs: logs,
		cfg: Config{ShutdownTimeout: 20 * time.Second}}.start(t)
	srv := ts.srv
	slow := ts.create(keyAlice, nil)
	store.slow.Store(slow)

	// Enough turns for a background fold, which the summarizer makes slow.
	fold := ts.create(keyAlice, nil)
	for i := range 8 {
		ts.must(200, "POST", "/v1/sessions/"+fold+"/messages", keyAlice,
			map[string]any{"turn": map[string]string{"user": fmt.Sprintf("Order #F-%d please", i), "assistant": "ok"}}, nil)
	}
	select {
	case <-foldStarted:
	case <-time.After(10 * time.Second):
		t.Fatal("no background fold started")
	}

	// A slow request is in flight when the shutdown begins.
	type res struct {
		r   reply
		err error
	}
	inflight := make(chan res, 1)
	go func() {
		r, err := ts.try(context.Background(), "POST", "/v1/sessions/"+slow+"/messages", keyAlice, map[string]any{"turn": map[string]string{"user": "still there?"}})
		inflight <- res{r, err}
	}()
	<-store.entered
	stopped := make(chan error, 1)
	go func() { stopped <- ts.stop() }()

	// The shutdown closes the listener first: new connections are refused.
	select {
	case <-ts.lnClosed:
	case <-time.After(10 * time.Second):
		t.Fatal("the shutdown did not close the listener")
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(ts.url, "http://"), 5*time.Second); err == nil {
		c.Close()
		t.Fatal("the listener still accepts connections during shutdown")
	}
	select {
	case err := <-stopped:
		t.Fatalf("Serve returned (%v) before the in-flight request finished", err)
	case <-time.After(100 * time.Millisecond):
	}

	close(store.release)
	got := <-inflight
	if got.err != nil || got.r.status != 200 {
		t.Fatalf("in-flight request: %v %s", got.err, got.r)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	// The background fold was flushed before the runtime closed.
	s, err := sums.Get(context.Background(), fold)
	if err != nil || s == nil || s.UpToSeq == 0 || srv.mgr.Stats().Folds == 0 {
		t.Fatalf("the background fold did not finish before exit: %+v, %v, stats %+v", s, err, srv.mgr.Stats())
	}
	if m, _ := store.Tail(context.Background(), slow, "alice", 0); m.Total != 1 {
		t.Fatalf("the in-flight append was lost: %d messages", m.Total)
	}
	if !strings.Contains(logs.String(), "strata serve: stopped") {
		t.Error("no stop line in the log")
	}
}

// TestShutdownDeadline: a request that outlives the shutdown timeout is cut
// off, and Serve says so.
func TestShutdownDeadline(t *testing.T) {
	t.Parallel()
	store := &slowStore{MessageStore: memory.NewInMemoryStore(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	srv := stack{store: store, quiet: true, cfg: Config{ShutdownTimeout: 300 * time.Millisecond}}.build(t)
	slow := newSessionID()
	if err := srv.mgr.Create(context.Background(), slow, "alice"); err != nil {
		t.Fatal(err)
	}
	store.slow.Store(slow)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	ts := &testServer{t: t, srv: srv, url: "http://" + ln.Addr().String(), client: serveClient()}
	defer ts.client.CloseIdleConnections()

	inflight := make(chan error, 1)
	go func() {
		_, err := ts.try(context.Background(), "POST", "/v1/sessions/"+slow+"/messages", keyAlice, map[string]any{"turn": map[string]string{"user": "x"}})
		inflight <- err
	}()
	<-store.entered
	cancel()
	var serveErr error
	select {
	case serveErr = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its shutdown timeout")
	}
	if serveErr == nil || !strings.Contains(serveErr.Error(), "in-flight requests not finished within 300ms") {
		t.Fatalf("Serve = %v", serveErr)
	}
	if err := <-inflight; err == nil {
		t.Fatal("the cut-off request succeeded")
	}
	close(store.release) // let the handler goroutine end
	// Serving again is refused.
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := srv.Serve(context.Background(), ln2); err == nil {
		t.Fatal("second Serve accepted")
	}
}
