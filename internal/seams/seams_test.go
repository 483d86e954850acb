package seams

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/agent"
	"github.com/strata-go/strata/agent/agenttest"
	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// gate is a summarizer that blocks every call until released (or its
// context ends, unless it ignores cancellation) and counts calls and the
// most that ran at once.
type gate struct {
	open     chan struct{}
	once     sync.Once
	calls    atomic.Int64
	running  atomic.Int64
	maxAtOne atomic.Int64

	mu      sync.Mutex
	changed chan struct{} // closed when running changes; nil: nobody waits
}

func newGate() *gate { return &gate{open: make(chan struct{})} }

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

func (g *gate) Summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	g.calls.Add(1)
	n := g.running.Add(1)
	g.notify()
	defer g.notify()
	defer g.running.Add(-1)
	for {
		m := g.maxAtOne.Load()
		if n <= m || g.maxAtOne.CompareAndSwap(m, n) {
			break
		}
	}
	select {
	case <-g.open:
	case <-ctx.Done():
		return summary.Result{}, ctx.Err()
	}
	return summary.NewExtractiveService().Summarize(ctx, req)
}

// notify wakes the waiters of await.
func (g *gate) notify() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.changed != nil {
		close(g.changed)
		g.changed = nil
	}
}

// await waits until cond (of the running count) holds: it is checked
// again each time a call enters or leaves the gate. After 10s (a bound,
// never a pause) it fails t.
func (g *gate) await(t *testing.T, cond func(running int64) bool) {
	t.Helper()
	expired := time.NewTimer(10 * time.Second)
	defer expired.Stop()
	for {
		g.mu.Lock()
		if g.changed == nil {
			g.changed = make(chan struct{})
		}
		changed := g.changed
		g.mu.Unlock()
		if cond(g.running.Load()) {
			return
		}
		select {
		case <-changed:
		case <-expired.C:
			t.Fatalf("running summarizer calls: %d, condition not reached within 10s", g.running.Load())
		}
	}
}

func (g *gate) closed() bool {
	select {
	case <-g.open:
		return false
	default:
		return true
	}
}

func echoModel() *agenttest.Model {
	return agenttest.New(func(_ context.Context, req agenttest.Request) (*llms.ContentResponse, error) {
		return agenttest.Text("noted: " + req.LastText()), nil
	})
}

// TestAgentRepliesNeverWaitForASlowFold runs 40 agent turns while every
// fold is stuck in the summarizer: each reply must come back while the
// summarizer is still blocked — so no turn waited for a fold — and every
// turn must be stored. Both policies, in memory and on PostgreSQL.
func TestAgentRepliesNeverWaitForASlowFold(t *testing.T) {
	stores := map[string]func(t *testing.T) (memory.MessageStore, summary.Store){
		"in-memory": func(*testing.T) (memory.MessageStore, summary.Store) {
			return memory.NewInMemoryStore(), summary.NewInMemoryStore(0)
		},
		"postgres": func(t *testing.T) (memory.MessageStore, summary.Store) {
			d := dbtest.New(t)
			return db.NewMessageStore(d), db.NewSummaryStore(d)
		},
	}
	for storeName, mk := range stores {
		for _, pol := range []memory.Policy{memory.PolicyParity, memory.PolicyChunked} {
			t.Run(storeName+"/"+string(pol), func(t *testing.T) {
				store, sums := mk(t)
				g := newGate()
				cfg := memory.DefaultConfig()
				cfg.Enabled, cfg.Policy = true, pol
				cfg.TriggerMessageCount, cfg.RecentMessageCount, cfg.BufferMessageCount = 8, 4, 4
				// The first load past the trigger (no summary yet) may wait
				// for its fold this long at most; the others not at all.
				cfg.FoldWait = 50 * time.Millisecond
				mgr, err := memory.NewManager(store, cfg, memory.WithSummaries(sums, g))
				if err != nil {
					t.Fatal(err)
				}
				bot, err := agent.New(echoModel(), mgr, agent.WithSystemPrompt("be brief"))
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				session := fmt.Sprintf("slow-%s-%d", pol, time.Now().UnixNano())
				for i := range 40 {
					if _, err := bot.Run(ctx, session, "alice", fmt.Sprintf("turn %d marker-%03d", i, i)); err != nil {
						t.Fatalf("turn %d: %v", i, err)
					}
					if !g.closed() {
						t.Fatal("gate opened during the run")
					}
				}
				// A fold is under way (a burst of saves under the parity policy
				// supersedes folds until it settles): the turns above all
				// completed while it could not finish.
				g.await(t, func(running int64) bool { return running >= 1 })
				if g.maxAtOne.Load() > 1 {
					t.Fatalf("%d folds of one session ran at once", g.maxAtOne.Load())
				}
				msgs, err := mgr.Messages(ctx, session, "alice", 0, 0)
				if err != nil || len(msgs) != 80 {
					t.Fatalf("stored %d messages (%v), want 80", len(msgs), err)
				}
				g.release()
				if err := mgr.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				h, err := mgr.Load(ctx, session, "alice")
				if err != nil || h.Summary == nil {
					t.Fatalf("after the fold finished: mode %s, summary %v, err %v", h.Mode, h.Summary, err)
				}
				if err := mgr.Close(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestCatalogueNeverIndexesADeletedSession: replica A folds alice's session
// (its summarizer held), replica B deletes the session and bob re-creates
// the id; when A's fold finishes, its summary must not be stored, no
// observer may see it, and nothing of alice's text may reach bob's
// catalogue entries (title, search) — on either replica.
func TestCatalogueNeverIndexesADeletedSession(t *testing.T) {
	schema := dbtest.NewSchema(t)
	type replica struct {
		mgr   *memory.Manager
		cat   *catalog.Catalog
		folds atomic.Int64
	}
	newReplica := func(svc summary.Service) *replica {
		d := dbtest.Open(t, schema.URL)
		r := &replica{}
		cfg := memory.DefaultConfig()
		cfg.Enabled = true
		cfg.TriggerMessageCount, cfg.RecentMessageCount = 4, 2
		cfg.FoldWait = 50 * time.Millisecond
		mgr, err := memory.NewManager(db.NewMessageStore(d), cfg,
			memory.WithSummaries(db.NewSummaryStore(d), svc),
			memory.WithFoldObserver(func(context.Context, memory.FoldEvent) { r.folds.Add(1) }))
		if err != nil {
			t.Fatal(err)
		}
		cat, err := catalog.New(mgr, db.NewCatalogIndex(d))
		if err != nil {
			t.Fatal(err)
		}
		r.mgr, r.cat = mgr, cat
		t.Cleanup(func() { _ = cat.Close(); _ = mgr.Close() })
		return r
	}
	g := newGate()
	a := newReplica(g)
	b := newReplica(summary.NewExtractiveService())
	ctx := context.Background()
	const id = "shared-thread"
	for i := range 4 {
		if err := a.mgr.SaveTurn(ctx, id, "alice", fmt.Sprintf("My secret is zebracorn-%d and my order is #ALICE%d", i, i), "ok"); err != nil {
			t.Fatal(err)
		}
	}
	// A's background fold is now blocked in the summarizer.
	g.await(t, func(running int64) bool { return running == 1 })
	if err := b.mgr.DeleteSession(ctx, id, "alice"); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := b.mgr.SaveTurn(ctx, id, "bob", fmt.Sprintf("bob asks about the weather %d", i), "sunny"); err != nil {
			t.Fatal(err)
		}
	}
	g.release()
	for _, r := range []*replica{a, b} {
		if err := r.mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := r.cat.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := a.folds.Load(); n != 0 {
		t.Errorf("replica A's observers saw %d fold(s) of the deleted session", n)
	}
	for name, r := range map[string]*replica{"A": a, "B": b} {
		if _, err := r.cat.Reindex(ctx, "bob"); err != nil {
			t.Fatalf("replica %s reindex: %v", name, err)
		}
		page, err := r.cat.List(ctx, "bob", 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Sessions {
			if strings.Contains(strings.ToLower(fmt.Sprintf("%+v", e)), "zebracorn") {
				t.Errorf("replica %s lists bob's session with alice's text: %+v", name, e)
			}
		}
		res, err := r.cat.Search(ctx, "bob", "zebracorn secret order", 5)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(strings.ToLower(fmt.Sprintf("%+v", res)), "zebracorn") {
			t.Errorf("replica %s search shows alice's text to bob: %+v", name, res)
		}
		s, err := r.mgr.Summary(ctx, id, "bob")
		if err != nil {
			t.Fatal(err)
		}
		if s != nil && strings.Contains(strings.ToLower(summary.FactsBlock(s.Facts)+s.Narrative), "zebracorn") {
			t.Errorf("replica %s: bob's summary holds alice's text: %+v", name, s)
		}
		h, err := r.mgr.Load(ctx, id, "bob")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range h.Messages {
			if strings.Contains(strings.ToLower(m.GetContent()), "zebracorn") {
				t.Errorf("replica %s: bob's history shows alice's text: %q", name, m.GetContent())
			}
		}
	}
	if _, err := a.mgr.Load(ctx, id, "alice"); !errors.Is(err, memory.ErrNotOwner) {
		t.Errorf("alice loading bob's re-created session: %v, want ErrNotOwner", err)
	}
}

// TestRecreatedSessionNeverGetsTwoFolds: a delete on replica B does not
// remove the lease of replica A's fold still running, so the re-created
// session's fold on B waits for it rather than running beside it.
func TestRecreatedSessionNeverGetsTwoFolds(t *testing.T) {
	schema := dbtest.NewSchema(t)
	g := newGate()
	newMgr := func() *memory.Manager {
		d := dbtest.Open(t, schema.URL)
		cfg := memory.DefaultConfig()
		cfg.Enabled = true
		cfg.TriggerMessageCount, cfg.RecentMessageCount = 4, 2
		cfg.FoldWait = 200 * time.Millisecond
		mgr, err := memory.NewManager(db.NewMessageStore(d), cfg, memory.WithSummaries(db.NewSummaryStore(d), g))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.release(); _ = mgr.Close() })
		return mgr
	}
	a, b := newMgr(), newMgr()
	ctx := context.Background()
	const id = "recreated"
	for i := range 4 {
		if err := a.SaveTurn(ctx, id, "alice", fmt.Sprintf("alice %d", i), "ok"); err != nil {
			t.Fatal(err)
		}
	}
	g.await(t, func(running int64) bool { return running == 1 })
	if err := b.DeleteSession(ctx, id, "alice"); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := b.SaveTurn(ctx, id, "bob", fmt.Sprintf("bob %d", i), "ok"); err != nil {
			t.Fatal(err)
		}
	}
	// Loads on B ask for a fold too; none may start beside A's.
	for range 3 {
		if _, err := b.Load(ctx, id, "bob"); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := g.maxAtOne.Load(); n != 1 {
		t.Fatalf("%d folds of the session ran at once, want 1", n)
	}
	g.release()
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if s, err := b.Summary(ctx, id, "bob"); err != nil || (s != nil && strings.Contains(s.Narrative+summary.FactsBlock(s.Facts), "alice")) {
		t.Fatalf("bob's summary after A's late fold: %+v, %v", s, err)
	}
}

// TestOwnershipAcrossReplicas races alice creating and writing a session on
// one replica against bob reading and deleting the same id on another: bob
// never reads alice's text and every turn acknowledged to alice is there.
func TestOwnershipAcrossReplicas(t *testing.T) {
	schema := dbtest.NewSchema(t)
	newMgr := func() *memory.Manager {
		mgr, err := memory.NewManager(db.NewMessageStore(dbtest.Open(t, schema.URL)), memory.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = mgr.Close() })
		return mgr
	}
	a, b := newMgr(), newMgr()
	ctx := context.Background()
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	var leaks, lost int
	for r := range rounds {
		id := fmt.Sprintf("race-%d-%d", time.Now().UnixNano(), r)
		var wg sync.WaitGroup
		var acked []string
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := a.Create(ctx, id, "alice"); err != nil {
				return // bob's delete or nothing: the id may be taken only by alice
			}
			for i := range 3 {
				text := fmt.Sprintf("alice-private-%d-%d", r, i)
				if err := a.SaveTurn(ctx, id, "alice", text, ""); err == nil {
					acked = append(acked, text)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 3 {
				if h, err := b.Load(ctx, id, "bob"); err == nil {
					for _, m := range h.Messages {
						if strings.Contains(m.GetContent(), "alice-private") {
							leaks++
						}
					}
				}
				if msgs, err := b.Messages(ctx, id, "bob", 0, 0); err == nil {
					for _, m := range msgs {
						if strings.Contains(m.Content, "alice-private") {
							leaks++
						}
					}
				}
				_ = b.DeleteSession(ctx, id, "bob")
			}
		}()
		wg.Wait()
		msgs, err := a.Messages(ctx, id, "alice", 0, 0)
		if len(acked) > 0 && err != nil {
			t.Fatalf("round %d: alice's session unreadable after acknowledged turns: %v", r, err)
		}
		have := map[string]bool{}
		for _, m := range msgs {
			have[m.Content] = true
		}
		for _, text := range acked {
			if !have[text] {
				lost++
			}
		}
	}
	if leaks != 0 || lost != 0 {
		t.Fatalf("%d reads of alice's text by bob, %d acknowledged turns lost, in %d rounds", leaks, lost, rounds)
	}
}
