package db_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/internal/testutil"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// replica is one service process: its own pool, stores and Manager, on a
// database shared with the other replicas.
type replica struct {
	d    *db.MessageStore
	sums *db.SummaryStore
	mgr  *memory.Manager
}

func newReplica(t *testing.T, url string, cfg memory.Config, svc summary.Service, opts ...db.Option) *replica {
	t.Helper()
	d := dbtest.Open(t, url)
	r := &replica{
		d:    db.NewMessageStore(d, opts...),
		sums: db.NewSummaryStore(d, opts...),
	}
	// The manager's logs are shown only when the test fails.
	logs := &testutil.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	mgr, err := memory.NewManager(r.d, cfg, memory.WithSummaries(r.sums, svc), memory.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = mgr.Close()
		if t.Failed() {
			t.Logf("manager log:\n%s", logs.String())
		}
	})
	r.mgr = mgr
	return r
}

func hierarchicalConfig(policy memory.Policy) memory.Config {
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	cfg.TriggerMessageCount = 6
	cfg.RecentMessageCount = 4
	cfg.FailureCooldown = 0
	cfg.MaxFailureCooldown = 0
	cfg.Policy = policy
	if policy == memory.PolicyChunked {
		cfg.BufferMessageCount = 4
	}
	return cfg
}

func textOf(cm llms.ChatMessage) string { return cm.GetContent() }

// recordingService is a summarizer shared by all replicas. It records every
// call and detects the two ways single-flight can fail: calls for one
// session that overlap in time, and redundant calls — a fold of messages
// that the stored summary it was handed (read under the fold lock) already
// covers.
type recordingService struct {
	delay time.Duration
	d     *sqlx.DB // to look up the seq of a request's last message

	mu        sync.Mutex
	calls     int
	active    map[string]int // session → calls in progress
	overlaps  []string       // sessions summarized concurrently
	redundant []string       // folds of already covered messages
}

func newRecordingService(delay time.Duration, d *sqlx.DB) *recordingService {
	return &recordingService{delay: delay, d: d, active: map[string]int{}}
}

func (s *recordingService) Summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	last := ""
	if n := len(req.Messages); n > 0 {
		last = textOf(req.Messages[n-1])
	}
	s.mu.Lock()
	s.calls++
	s.active[req.SessionID]++
	if s.active[req.SessionID] > 1 {
		s.overlaps = append(s.overlaps, req.SessionID)
	}
	s.mu.Unlock()

	if req.Existing != nil && s.d != nil {
		// Message contents are unique within a session in these tests.
		var seq int64
		lookup, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := s.d.GetContext(lookup, &seq, `SELECT seq FROM strata_messages WHERE session_id = $1 AND content = $2`, req.SessionID, last)
		cancel()
		if err == nil && req.Existing.UpToSeq >= seq {
			s.mu.Lock()
			s.redundant = append(s.redundant, fmt.Sprintf("%s through %q (seq %d) already covered up to %d", req.SessionID, last, seq, req.Existing.UpToSeq))
			s.mu.Unlock()
		}
	}

	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
	}

	s.mu.Lock()
	s.active[req.SessionID]--
	s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return summary.Result{}, err
	}
	return summary.Result{
		Narrative: "summary through " + last,
		Facts:     []summary.Fact{{Key: "last_folded", Value: last, Category: summary.State}},
	}, nil
}

// TestManagerConcurrentSaveTurnsKeepPairsAdjacent: 20 concurrent SaveTurn
// calls on one session, through one Manager, store 20 whole, adjacent
// pairs.
func TestManagerConcurrentSaveTurnsKeepPairsAdjacent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	mgr, err := memory.NewManager(f.messages, memory.DefaultConfig(), memory.WithLogger(slog.New(slog.NewTextHandler(f.logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if err := mgr.SaveTurn(ctx, "s", "alice", fmt.Sprint("q", i), fmt.Sprint("a", i)); err != nil {
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if n := len(allMessages(t, ctx, f.messages, "s", "alice")); n != 40 {
		t.Fatalf("%d messages, want 40", n)
	}
	assertConsistent(t, ctx, f, "s")
	hist, err := mgr.LoadHistory(ctx, "s", "alice")
	if err != nil || len(hist) != 20 {
		t.Errorf("LoadHistory = %d messages, %v; want the takeLast 20", len(hist), err)
	}
	if _, err := mgr.LoadHistory(ctx, "s", "mallory"); !errors.Is(err, memory.ErrNotOwner) {
		t.Errorf("foreign load: %v, want ErrNotOwner", err)
	}
	if err := mgr.SaveTurn(ctx, "s", "mallory", "q", "a"); !errors.Is(err, memory.ErrNotOwner) {
		t.Errorf("foreign save: %v, want ErrNotOwner", err)
	}
}

// TestManagersOnSharedDatabaseFoldOnce runs several replicas (separate
// pools, stores and Managers) against one database, all saving to and
// loading the same sessions. The summarizer must never run twice at once
// for a session, never be called for messages the stored summary already
// covers (exactly one call per needed fold), and no reader may ever see a
// session's summary cursor go down.
func TestManagersOnSharedDatabaseFoldOnce(t *testing.T) {
	t.Parallel()
	for _, policy := range []memory.Policy{memory.PolicyParity, memory.PolicyChunked} {
		for _, replicas := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/replicas=%d", policy, replicas), func(t *testing.T) {
				t.Parallel()
				testManagersFoldOnce(t, policy, replicas, dbtest.NewSchema(t).URL)
			})
			// The same through PgBouncer in transaction mode (skipped without).
			t.Run(fmt.Sprintf("%s/replicas=%d/pgbouncer", policy, replicas), func(t *testing.T) {
				t.Parallel()
				testManagersFoldOnce(t, policy, replicas, dbtest.NewPooled(t).PooledURL)
			})
		}
	}
}

func testManagersFoldOnce(t *testing.T, policy memory.Policy, replicas int, url string) {
	ctx := testCtx(t)
	svc := newRecordingService(15*time.Millisecond, dbtest.Open(t, url))
	cfg := hierarchicalConfig(policy)
	var rs []*replica
	for range replicas {
		rs = append(rs, newReplica(t, url, cfg, svc))
	}
	sessions := []string{"hot-1", "hot-2"}
	const turns = 12 // per replica and session

	// Watch the cursors from the side, as another reader would.
	stopWatch := make(chan struct{})
	watchDone := make(chan struct{})
	var regressions []string
	go func() {
		defer close(watchDone)
		last := map[string]int64{}
		for {
			select {
			case <-stopWatch:
				return
			default:
			}
			for _, sess := range sessions {
				sm, err := rs[0].sums.Get(ctx, sess)
				if err != nil || sm == nil {
					continue
				}
				if sm.UpToSeq < last[sess] {
					regressions = append(regressions, fmt.Sprintf("%s: %d after %d", sess, sm.UpToSeq, last[sess]))
				}
				last[sess] = sm.UpToSeq
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()

	var wg sync.WaitGroup
	for ri, r := range rs {
		for _, sess := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range turns {
					q, a := fmt.Sprintf("q r%d-%d", ri, k), fmt.Sprintf("a r%d-%d", ri, k)
					if err := r.mgr.SaveTurn(ctx, sess, "alice", q, a); err != nil {
						t.Errorf("SaveTurn: %v", err)
						return
					}
					if _, err := r.mgr.LoadHistory(ctx, sess, "alice"); err != nil {
						t.Errorf("LoadHistory: %v", err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	for _, r := range rs {
		if err := r.mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A final load on every replica: the summary is fresh and shown.
	for _, sess := range sessions {
		for _, r := range rs {
			h, err := r.mgr.Load(ctx, sess, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if h.Mode != "hierarchical" || h.Summary == nil {
				t.Errorf("%s: final load mode %s, want hierarchical with a summary", sess, h.Mode)
			}
		}
	}
	close(stopWatch)
	<-watchDone

	svc.mu.Lock()
	defer svc.mu.Unlock()
	t.Logf("%d replicas, %d sessions × %d turns each: %d summarizer calls", replicas, len(sessions), turns*replicas, svc.calls)
	if len(svc.overlaps) > 0 {
		t.Errorf("the summarizer ran concurrently for one session %d times (%v)", len(svc.overlaps), svc.overlaps)
	}
	if len(svc.redundant) > 0 {
		t.Errorf("%d summarizer calls folded messages already covered: %v", len(svc.redundant), svc.redundant)
	}
	if len(regressions) > 0 {
		t.Errorf("a summary cursor went down: %v", regressions)
	}
	if svc.calls == 0 {
		t.Error("the summarizer was never called")
	}
	for _, sess := range sessions {
		assertConsistentPairs(t, ctx, rs[0].d, sess, "alice", 2*turns*replicas)
	}
}

// assertConsistentPairs checks that owner's session holds want messages
// in whole, adjacent "q X"/"a X" pairs.
func assertConsistentPairs(t *testing.T, ctx context.Context, s memory.MessageStore, session, owner string, want int) {
	t.Helper()
	msgs := allMessages(t, ctx, s, session, owner)
	if len(msgs) != want {
		t.Errorf("%s: %d messages, want %d", session, len(msgs), want)
	}
	for i := 0; i+1 < len(msgs); i += 2 {
		if msgs[i].Role != store.RoleUser || msgs[i+1].Content != "a"+msgs[i].Content[1:] {
			t.Errorf("%s: messages %d,%d (%q, %q) are not a pair", session, i, i+1, msgs[i].Content, msgs[i+1].Content)
			return
		}
	}
}

// blockingService lets a test hold a fold inside the summarizer.
type blockingService struct {
	entered chan string   // receives the session id when a call starts
	release chan struct{} // closed to let calls finish
	calls   atomic.Int32
}

func (s *blockingService) Summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	s.calls.Add(1)
	select {
	case s.entered <- req.SessionID:
	default:
	}
	select {
	case <-s.release:
	case <-ctx.Done():
		return summary.Result{}, ctx.Err()
	}
	return summary.Result{Narrative: "late summary", Facts: []summary.Fact{{Key: "k", Value: "v", Category: summary.General}}}, nil
}

// TestDeleteOnOtherReplicaDuringFoldWritesNothing: replica A is folding a
// session (its summarizer is slow) when replica B deletes the session; A
// knows nothing of the delete, so only the database can stop its late
// save. Then the same again, with the session re-created before the fold
// ends.
func TestDeleteOnOtherReplicaDuringFoldWritesNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		recreate, pooled bool
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		name := fmt.Sprint("recreate=", c.recreate)
		if c.pooled {
			name += "/pgbouncer" // through PgBouncer in transaction mode (skipped without)
		}
		recreate := c.recreate
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var url string
			if c.pooled {
				url = dbtest.NewPooled(t).PooledURL
			} else {
				url = dbtest.NewSchema(t).URL
			}
			ctx := testCtx(t)
			cfg := hierarchicalConfig(memory.PolicyParity)
			slow := &blockingService{entered: make(chan string, 1), release: make(chan struct{})}
			a := newReplica(t, url, cfg, slow)
			b := newReplica(t, url, cfg, newRecordingService(0, nil))

			for k := range 5 { // 10 messages > trigger 6: A starts a background fold
				if err := a.mgr.SaveTurn(ctx, "s", "alice", fmt.Sprint("q", k), fmt.Sprint("a", k)); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-slow.entered:
			case <-time.After(30 * time.Second):
				t.Fatal("no background fold started")
			}
			if err := b.mgr.DeleteSession(ctx, "s", "alice"); err != nil {
				t.Fatal(err)
			}
			if recreate {
				if err := b.mgr.SaveTurn(ctx, "s", "alice", "new q", "new a"); err != nil {
					t.Fatal(err)
				}
			}
			close(slow.release)
			if err := a.mgr.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if sm, err := a.sums.Get(ctx, "s"); err != nil || sm != nil {
				t.Errorf("summary after delete = %+v, %v; want none", sm, err)
			}
			switch msgs, err := a.d.Range(ctx, "s", "alice", 0, 1<<62, 0); {
			case recreate && (err != nil || len(msgs) != 2):
				t.Errorf("re-created session: %d messages, %v; want 2", len(msgs), err)
			case !recreate && !errors.Is(err, store.ErrNotFound):
				t.Errorf("deleted session: %d messages, %v; want ErrNotFound", len(msgs), err)
			}
		})
	}
}

// TestManagerRecoversFromKilledConnections runs a Manager while every
// connection of its pool is terminated again and again: calls fail with
// errors (never a panic or a half-written turn) and succeed again, with no
// intervention, once the killing stops.
func TestManagerRecoversFromKilledConnections(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fault injection skipped in -short mode")
	}
	s := dbtest.NewSchema(t)
	ctx := testCtx(t)
	// A fold lease whose release is lost to a killed connection frees
	// itself within one lease slice; keep that short for the test.
	r := newReplica(t, s.URL, hierarchicalConfig(memory.PolicyParity), newRecordingService(time.Millisecond, nil),
		db.WithFoldLeaseSlice(time.Second))
	var stop atomic.Bool
	var saveErrs, loadErrs, saves atomic.Int64
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; !stop.Load(); k++ {
				if err := r.mgr.SaveTurn(ctx, "s", "alice", fmt.Sprintf("q w%d-%d", w, k), fmt.Sprintf("a w%d-%d", w, k)); err != nil {
					saveErrs.Add(1)
				} else {
					saves.Add(1)
				}
				if _, err := r.mgr.LoadHistory(ctx, "s", "alice"); err != nil {
					loadErrs.Add(1)
				}
			}
		}()
	}
	kills := 0
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
		kills += terminateBackends(t, ctx, s.Name)
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("terminated %d backends; saves ok %d failed %d; load errors %d", kills, saves.Load(), saveErrs.Load(), loadErrs.Load())

	// Recovery, on its own and promptly.
	began := time.Now()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// Enough turns to pass the fold trigger, however few the faults let
	// through.
	for k := range 4 {
		if err := r.mgr.SaveTurn(rctx, "s", "alice", fmt.Sprint("q final ", k), fmt.Sprint("a final ", k)); err != nil {
			t.Fatalf("SaveTurn after the faults: %v", err)
		}
	}
	if err := r.mgr.Flush(rctx); err != nil {
		t.Fatal(err)
	}
	h, err := r.mgr.Load(rctx, "s", "alice")
	if err != nil || h.Mode != "hierarchical" {
		t.Fatalf("Load after the faults: mode %s, %v", h.Mode, err)
	}
	t.Logf("recovered in %v", time.Since(began).Round(time.Millisecond))
	msgs := allMessages(t, ctx, r.d, "s", "alice")
	assertConsistentPairs(t, ctx, r.d, "s", "alice", len(msgs)-len(msgs)%2)
	if len(msgs)%2 != 0 {
		t.Errorf("odd number of messages (%d): a half-written turn", len(msgs))
	}
}
