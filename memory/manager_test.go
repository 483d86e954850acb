package memory_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

func TestTakeLastWhenSummariesOff(t *testing.T) {
	f := newFixture(t, memory.DefaultConfig())
	seed(t, f.store, "s", "alice", 15)
	h, err := f.mgr.Load(context.Background(), "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != "take-last" || h.Summary != nil || h.Total != 30 {
		t.Fatalf("mode %s, summary %v, total %d", h.Mode, h.Summary, h.Total)
	}
	wantContents(t, h.Messages, seqStrings(6, 15)...)
	if f.svc.calls.Load() != 0 {
		t.Fatal("summarizer called with summaries off")
	}
}

// Summaries wired but Enabled false: nothing folds, ever.
func TestFlagOffIgnoresWiredSummaries(t *testing.T) {
	f := newFixture(t, memory.DefaultConfig())
	for i := 0; i < 20; i++ {
		if err := f.mgr.SaveTurn(context.Background(), "s", "u", "q", "a"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.mgr.Load(context.Background(), "s", "u"); err != nil {
		t.Fatal(err)
	}
	if err := f.mgr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f.svc.calls.Load() != 0 {
		t.Fatal("fold ran with Enabled=false")
	}
}

func TestEmptyAndMissingSessions(t *testing.T) {
	f := newFixture(t, hierConfig())
	ctx := context.Background()
	h, err := f.mgr.Load(ctx, "nobody-here", "alice")
	if err != nil || h.Mode != "empty" || len(h.Messages) != 0 {
		t.Fatalf("missing session: %+v, %v", h, err)
	}
	if err := f.mgr.Create(ctx, "new", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := f.mgr.Create(ctx, "new", "bob"); !errors.Is(err, store.ErrSessionExists) {
		t.Fatalf("second create err = %v, want ErrSessionExists", err)
	}
	h, err = f.mgr.Load(ctx, "new", "alice")
	if err != nil || h.Mode != "empty" || len(h.Messages) != 0 {
		t.Fatalf("empty session: %+v, %v", h, err)
	}
	if err := f.mgr.Create(ctx, "", "alice"); err == nil {
		t.Fatal("created a session without an id")
	}
}

func TestThresholdIsStrict(t *testing.T) {
	f := newFixture(t, hierConfig())
	seed(t, f.store, "s", "alice", 10) // 20 messages == trigger
	h, err := f.mgr.Load(context.Background(), "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != "take-last" {
		t.Fatalf("mode = %s", h.Mode)
	}
	wantContents(t, h.Messages, seqStrings(1, 10)...)
	if f.svc.calls.Load() != 0 {
		t.Fatal("summarizer called at N == trigger")
	}
}

func TestHierarchicalLayout(t *testing.T) {
	f := newFixture(t, hierConfig())
	seed(t, f.store, "s", "alice", 16) // 32 messages
	h, err := f.mgr.Load(context.Background(), "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != "hierarchical" || h.Total != 32 {
		t.Fatalf("mode = %s, total %d", h.Mode, h.Total)
	}
	got := h.Messages
	if len(got) != 12 {
		t.Fatalf("len = %d, want 2 system + 10 recent", len(got))
	}
	if got[0].GetType() != llms.ChatMessageTypeSystem || got[0].GetContent() != summary.FactsHeader+"\n- folded: 22" {
		t.Fatalf("facts message = %#v", got[0])
	}
	if got[1].GetType() != llms.ChatMessageTypeSystem || got[1].GetContent() != summary.NarrativeHeader+"\nfolded u1 to a11" {
		t.Fatalf("narrative message = %#v", got[1])
	}
	wantContents(t, got[2:], seqStrings(12, 16)...)
	reqs := f.svc.requests()
	if len(reqs) != 1 || len(reqs[0].Messages) != 22 || reqs[0].Existing != nil || reqs[0].SessionID != "s" {
		t.Fatalf("summarizer requests = %+v", reqs)
	}
	s, _ := f.sums.Get(context.Background(), "s")
	if s == nil || s.UpToSeq != h.Recent[0].Seq-1 || h.Summary == nil || h.Summary.UpToSeq != s.UpToSeq {
		t.Fatalf("stored summary %+v, shown %+v, want cursor just before the window (seq %d)", s, h.Summary, h.Recent[0].Seq)
	}
	if !reflect.DeepEqual(summary.Blocks(h.Summary), got[:2]) {
		t.Fatal("the blocks shown are not the rendering of History.Summary")
	}
	// Manager.Summary is the same summary.
	ms, err := f.mgr.Summary(context.Background(), "s", "alice")
	if err != nil || ms == nil || ms.UpToSeq != s.UpToSeq || ms.Narrative != s.Narrative {
		t.Fatalf("Manager.Summary = %+v, %v", ms, err)
	}
}

func TestOnlyOneBlockWhenOtherEmpty(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  summary.Result
		want string
	}{
		{"facts only", summary.Result{Facts: []summary.Fact{{Key: "k", Value: "v"}}, Narrative: "  \n"}, summary.FactsHeader + "\n- k: v"},
		{"narrative only", summary.Result{Narrative: "talked"}, summary.NarrativeHeader + "\ntalked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, hierConfig())
			f.svc.set(func(context.Context, int64, summary.Request) (summary.Result, error) { return tc.res, nil })
			seed(t, f.store, "s", "alice", 11)
			got, err := f.mgr.LoadHistory(context.Background(), "s", "alice")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 11 || got[0].GetContent() != tc.want || got[1].GetType() == llms.ChatMessageTypeSystem {
				t.Fatalf("got %q", contents(got))
			}
		})
	}
}

func TestEmptySummaryFallsBackAndIsNotStored(t *testing.T) {
	f := newFixture(t, hierConfig())
	f.svc.set(func(context.Context, int64, summary.Request) (summary.Result, error) {
		return summary.Result{Narrative: " "}, nil
	})
	seed(t, f.store, "s", "alice", 16)
	h, err := f.mgr.Load(context.Background(), "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != "fallback" || h.Summary != nil {
		t.Fatalf("mode = %s, summary %v", h.Mode, h.Summary)
	}
	wantContents(t, h.Messages, seqStrings(7, 16)...)
	if s, _ := f.sums.Get(context.Background(), "s"); s != nil {
		t.Fatalf("empty summary stored: %+v", s)
	}
	// A later load tries again (no cool-down configured).
	if _, err := f.mgr.LoadHistory(context.Background(), "s", "alice"); err != nil {
		t.Fatal(err)
	}
	if f.svc.calls.Load() != 2 {
		t.Fatalf("calls = %d, want a retry on the next load", f.svc.calls.Load())
	}
}

func TestFreshSummaryIsReused(t *testing.T) {
	f := newFixture(t, hierConfig())
	seed(t, f.store, "s", "alice", 16)
	first, _ := f.mgr.LoadHistory(context.Background(), "s", "alice")
	second, _ := f.mgr.LoadHistory(context.Background(), "s", "alice")
	if f.svc.calls.Load() != 1 {
		t.Fatalf("calls = %d, want 1", f.svc.calls.Load())
	}
	wantContents(t, second, contents(first)...)
}

func TestGrownConversationRegeneratesWithPreviousFacts(t *testing.T) {
	f := newFixture(t, hierConfig())
	f.svc.set(func(_ context.Context, call int64, req summary.Request) (summary.Result, error) {
		if call == 1 {
			return summary.Result{Narrative: "n1", Facts: []summary.Fact{{Key: "order_id", Value: "#1"}, {Key: "city", Value: "Paris"}}}, nil
		}
		return summary.Result{Narrative: "n2", Facts: []summary.Fact{{Key: "order_id", Value: "#2"}}}, nil
	})
	seed(t, f.store, "s", "alice", 16)
	if _, err := f.mgr.LoadHistory(context.Background(), "s", "alice"); err != nil {
		t.Fatal(err)
	}
	seedTurns(t, f.store, "s", "alice", "", 17, 18)
	h, err := f.mgr.Load(context.Background(), "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.svc.requests()
	if len(reqs) != 2 || reqs[1].Existing == nil || len(reqs[1].Existing.Facts) != 2 || reqs[1].Incremental {
		t.Fatalf("second request lacks previous facts or is incremental: %+v", reqs)
	}
	if len(reqs[1].Messages) != 26 || reqs[1].Messages[0].GetContent() != "u1" {
		t.Fatalf("parity re-summarizes from the first message: got %d messages from %q", len(reqs[1].Messages), reqs[1].Messages[0].GetContent())
	}
	// The ledger keeps the omitted fact and replaces the changed one.
	if h.Mode != "hierarchical" || h.Messages[0].GetContent() != summary.FactsHeader+"\n- order_id: #2\n- city: Paris" {
		t.Fatalf("mode %s, facts = %q", h.Mode, h.Messages[0].GetContent())
	}
}

func TestSummarizerErrorFallsBackToTakeLast(t *testing.T) {
	f := newFixture(t, hierConfig())
	f.svc.set(func(context.Context, int64, summary.Request) (summary.Result, error) {
		return summary.Result{}, errors.New("boom: out of memory")
	})
	seed(t, f.store, "s", "alice", 16)
	h, err := f.mgr.Load(context.Background(), "s", "alice")
	if err != nil {
		t.Fatalf("summarizer error leaked to caller: %v", err)
	}
	if h.Mode != "fallback" {
		t.Fatalf("mode = %s", h.Mode)
	}
	wantContents(t, h.Messages, seqStrings(7, 16)...)
	if st := f.mgr.Stats(); st.Fallbacks != 1 || st.FoldFailures != 1 || st.LazyFolds != 1 || st.Loads != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

// TestCooldownAfterFailure: a failed fold keeps the session from folding
// for the cool-down, then folds again. In a testing/synctest bubble.
func TestCooldownAfterFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := hierConfig()
		cfg.FailureCooldown, cfg.MaxFailureCooldown = time.Minute, 10*time.Minute
		f := newFixture(t, cfg)
		var fail atomic.Bool
		fail.Store(true)
		f.svc.set(func(_ context.Context, _ int64, req summary.Request) (summary.Result, error) {
			if fail.Load() {
				return summary.Result{}, errors.New("down")
			}
			return countingResult(req), nil
		})
		seed(t, f.store, "s", "alice", 16)
		ctx := context.Background()
		_, _ = f.mgr.LoadHistory(ctx, "s", "alice")
		h, _ := f.mgr.Load(ctx, "s", "alice")
		if c := f.svc.calls.Load(); c != 1 || h.Mode != "fallback" {
			t.Fatalf("during cool-down: calls %d (want 1), mode %s", c, h.Mode)
		}
		// A save during the cool-down starts no fold either.
		if err := f.mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
			t.Fatal(err)
		}
		if err := f.mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if c := f.svc.calls.Load(); c != 1 {
			t.Fatalf("calls after a save in the cool-down = %d, want 1", c)
		}
		fail.Store(false)
		time.Sleep(61 * time.Second) // the bubble's clock: the cool-down passes
		h, _ = f.mgr.Load(ctx, "s", "alice")
		if h.Mode != "hierarchical" || f.svc.calls.Load() != 2 {
			t.Fatalf("after cool-down: mode %s, calls %d", h.Mode, f.svc.calls.Load())
		}
	})
}

func TestFailedTurnSavesUserOnly(t *testing.T) {
	f := newFixture(t, memory.DefaultConfig())
	ctx := context.Background()
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "hello", ""); err != nil {
		t.Fatal(err)
	}
	got, _ := f.mgr.LoadHistory(ctx, "s", "alice")
	wantContents(t, got, "hello")
}

func TestNoSessionIDMeansNoMemory(t *testing.T) {
	f := newFixture(t, hierConfig())
	ctx := context.Background()
	if err := f.mgr.SaveTurn(ctx, "", "alice", "hello", "hi"); err != nil {
		t.Fatal(err)
	}
	got, err := f.mgr.LoadHistory(ctx, "", "alice")
	if err != nil || len(got) != 0 {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, total, _ := f.mgr.Sessions(ctx, "alice", 0, 0); total != 0 {
		t.Fatalf("a session without id was stored (%d sessions)", total)
	}
	_ = f.mgr.Flush(ctx)
	if f.svc.calls.Load() != 0 {
		t.Fatal("fold without a session")
	}
}

func TestAppendReportsTotalsAndMetadata(t *testing.T) {
	f := newFixture(t, memory.DefaultConfig())
	ctx := context.Background()
	res, err := f.mgr.Append(ctx, "s", "alice", true,
		store.Message{Role: store.RoleUser, Content: "deep question"},
		store.Message{Role: store.RoleAssistant, Content: "deep answer", Metadata: map[string]string{store.MetadataModelVariant: "deep-dive"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 2 || res.LastSeq == 0 || res.Epoch == 0 {
		t.Fatalf("append result = %+v", res)
	}
	msgs := mustMessages(t, f.mgr, "s", "alice", 0)
	if len(msgs) != 2 || msgs[1].Seq != res.LastSeq || msgs[1].Metadata[store.MetadataModelVariant] != "deep-dive" || msgs[1].UserID != "alice" {
		t.Fatalf("stored = %+v", msgs)
	}
	// Claim only: no messages, the session exists and is alice's.
	if res, err := f.mgr.Append(ctx, "claimed", "alice", true); err != nil || res.Total != 0 {
		t.Fatalf("claim = %+v, %v", res, err)
	}
	if _, err := f.mgr.Messages(ctx, "claimed", "bob", 0, 0); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("claimed session read by another user: %v", err)
	}
	// Without create, a missing session stays missing and nothing is stored;
	// an existing one of another user is refused the same way it is on reads.
	if _, err := f.mgr.Append(ctx, "typo", "alice", false, store.Message{Role: store.RoleUser, Content: "lost?"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("append without create to a missing session: %v", err)
	}
	if _, err := f.mgr.Messages(ctx, "typo", "alice", 0, 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("append without create made the session: %v", err)
	}
	if _, err := f.mgr.Append(ctx, "claimed", "bob", false, store.Message{Role: store.RoleUser, Content: "mine?"}); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("append without create to another user's session: %v", err)
	}
	if res, err := f.mgr.Append(ctx, "claimed", "alice", false, store.Message{Role: store.RoleUser, Content: "hello"}); err != nil || res.Total != 1 {
		t.Fatalf("append without create to an existing session = %+v, %v", res, err)
	}
	// Paging.
	seed(t, f.store, "p", "alice", 5)
	page := mustMessages(t, f.mgr, "p", "alice", 0)
	next, err := f.mgr.Messages(ctx, "p", "alice", page[3].Seq, 2)
	if err != nil || strings.Join(storedContents(next), ",") != "u3,a3" {
		t.Fatalf("page after seq %d = %q, %v", page[3].Seq, storedContents(next), err)
	}
}

func TestConcurrentSavesKeepPairsAdjacent(t *testing.T) {
	f := newFixture(t, hierConfig())
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := f.mgr.SaveTurn(ctx, "s", "alice", fmt.Sprintf("q%d", i), fmt.Sprintf("a%d", i)); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	msgs := mustMessages(t, f.mgr, "s", "alice", 0)
	if len(msgs) != 128 {
		t.Fatalf("stored %d messages, want 128", len(msgs))
	}
	for i := 0; i < len(msgs); i += 2 {
		if msgs[i].Role != store.RoleUser || msgs[i+1].Content != "a"+msgs[i].Content[1:] {
			t.Fatalf("pair %d not adjacent: %q, %q", i/2, msgs[i].Content, msgs[i+1].Content)
		}
	}
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// Saves return while the summarizer is blocked (causally: it is released
// only after the last save returned); the burst's last fold then covers
// everything before the verbatim window.
func TestSaveNeverWaitsForSummarizer(t *testing.T) {
	f := newFixture(t, hierConfig())
	g := f.blockWith(t, true)
	ctx := context.Background()
	for i := 0; i < 15; i++ { // every save above the trigger starts a fold that blocks
		if err := f.mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
			t.Fatal(err)
		}
	}
	await(t, g.entered, "a background fold to start")
	g.release()
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	msgs := mustMessages(t, f.mgr, "s", "alice", 0)
	s, _ := f.sums.Get(ctx, "s")
	if want := msgs[len(msgs)-11].Seq; s == nil || s.UpToSeq != want {
		t.Fatalf("summary after flush = %+v, want cursor %d (30 messages - 10 recent)", s, want)
	}
}

// A save that arrives while a fold runs does not cancel it (with a slow
// summarizer, cancelling would keep the summary from ever advancing): the
// fold finishes and stores its summary, then runs once more for the newer
// messages — never two at once.
func TestSaveDuringFoldRunsItAgain(t *testing.T) {
	cfg := hierConfig()
	cfg.SupersedeDelay = time.Nanosecond
	f := newFixture(t, cfg)
	firstStarted, releaseFirst := make(chan struct{}), make(chan struct{})
	f.svc.set(func(ctx context.Context, call int64, req summary.Request) (summary.Result, error) {
		if call == 1 {
			close(firstStarted)
			select {
			case <-releaseFirst:
			case <-ctx.Done():
				return summary.Result{}, ctx.Err()
			}
		}
		return countingResult(req), nil
	})
	ctx := context.Background()
	seed(t, f.store, "s", "alice", 10)
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
		t.Fatal(err)
	}
	await(t, firstStarted, "the first fold")
	for i := range 3 {
		if err := f.mgr.SaveTurn(ctx, "s", "alice", fmt.Sprintf("q%d", i), "a"); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.svc.calls.Load(); n != 1 {
		t.Fatalf("saves during a fold started %d summarizer calls, want the running one only", n)
	}
	close(releaseFirst)
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := f.svc.calls.Load(); n != 2 {
		t.Fatalf("%d summarizer calls, want 2: the first fold and one more for the saves during it", n)
	}
	if f.svc.peak.Load() != 1 {
		t.Fatalf("%d summarizer calls ran at once for one session", f.svc.peak.Load())
	}
	h, err := f.mgr.Load(ctx, "s", "alice")
	if err != nil || h.Mode != "hierarchical" {
		t.Fatalf("after both folds: mode %s, err %v; want hierarchical", h.Mode, err)
	}
}

// A burst of saves during a fold asks for one more fold, which first waits
// the settle delay: with a delay longer than the test, only the first fold
// reaches the summarizer.
func TestBurstOfSavesSettles(t *testing.T) {
	cfg := hierConfig()
	cfg.SupersedeDelay = time.Hour
	f := newFixture(t, cfg)
	g := f.blockWith(t, true)
	seed(t, f.store, "s", "alice", 10)
	ctx := context.Background()
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
		t.Fatal(err)
	}
	await(t, g.entered, "the first fold")
	for i := 0; i < 20; i++ {
		if err := f.mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
			t.Fatal(err)
		}
	}
	f.mgr.CancelSummarization("s")
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if calls := f.svc.calls.Load(); calls != 1 {
		t.Fatalf("21 saves called the summarizer %d times, want 1", calls)
	}
}

// Close cancels a fold that honours cancellation, returns without error,
// and saves nothing; saves and loads keep working after it, without folds.
func TestCloseCancelsAndSavesNothing(t *testing.T) {
	cfg := hierConfig()
	cfg.CloseTimeout = 100 * time.Millisecond // Close drains 80ms, then cancels
	f := newFixture(t, cfg)
	started := make(chan struct{})
	f.svc.set(func(ctx context.Context, _ int64, req summary.Request) (summary.Result, error) {
		close(started)
		<-ctx.Done()
		return countingResult(req), nil // a result that arrives after cancellation
	})
	ctx := context.Background()
	seed(t, f.store, "s", "alice", 10)
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
		t.Fatal(err)
	}
	await(t, started, "the fold")
	if err := f.mgr.Close(); err != nil {
		t.Fatal(err)
	}
	if s, _ := f.sums.Get(ctx, "s"); s != nil {
		t.Fatalf("summary saved after Close: %+v", s)
	}
	f.mgr.CancelSummarization("s")
	f.mgr.CancelSummarization("unknown")
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "after", "close"); err != nil {
		t.Fatal(err)
	}
	h, err := f.mgr.Load(ctx, "s", "alice")
	if err != nil || h.Mode != "fallback" {
		t.Fatalf("load after Close: mode %s, %v", h.Mode, err)
	}
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if f.svc.calls.Load() != 1 {
		t.Fatalf("calls = %d: a fold ran after Close", f.svc.calls.Load())
	}
	if err := f.mgr.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// failingStore fails reads on demand.
type failingStore struct {
	memory.MessageStore
	failTail atomic.Bool
}

func (s *failingStore) Tail(ctx context.Context, id, user string, n int) (store.Tail, error) {
	if s.failTail.Load() {
		return store.Tail{}, fmt.Errorf("%w: connection refused", store.ErrUnavailable)
	}
	return s.MessageStore.Tail(ctx, id, user, n)
}

// failingSummaries fails every read.
type failingSummaries struct{ summary.Store }

func (failingSummaries) Get(context.Context, string) (*summary.Summary, error) {
	return nil, errors.New("summary ms: connection refused")
}

func TestStoreFailures(t *testing.T) {
	ctx := context.Background()
	t.Run("message ms outage is returned", func(t *testing.T) {
		ms := &failingStore{MessageStore: memory.NewInMemoryStore()}
		mgr, err := memory.NewManager(ms, memory.DefaultConfig(), memory.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		defer mgr.Close()
		if err := mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
			t.Fatal(err)
		}
		ms.failTail.Store(true)
		h, err := mgr.Load(ctx, "s", "alice")
		if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, memory.ErrNotOwner) || len(h.Messages) != 0 {
			t.Fatalf("read failure: %+v, %v", h, err)
		}
		if _, err := mgr.Summary(ctx, "s", "alice"); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("Summary during an outage: %v", err)
		}
		if mgr.Stats().LoadErrors != 1 {
			t.Fatalf("stats = %+v", mgr.Stats())
		}
	})
	t.Run("summary ms outage degrades", func(t *testing.T) {
		ms := memory.NewInMemoryStore()
		svc := &fakeSummarizer{}
		mgr, err := memory.NewManager(ms, hierConfig(), memory.WithLogger(quiet),
			memory.WithSummaries(failingSummaries{summary.NewInMemoryStore(0)}, svc))
		if err != nil {
			t.Fatal(err)
		}
		defer mgr.Close()
		seed(t, ms, "s", "alice", 16)
		h, err := mgr.Load(ctx, "s", "alice")
		if err != nil || h.Mode != "fallback" || len(h.Messages) != 20 {
			t.Fatalf("mode %s, %d messages, %v", h.Mode, len(h.Messages), err)
		}
	})
}

type failingAppendStore struct{ memory.MessageStore }

func (failingAppendStore) Append(context.Context, string, string, ...store.Message) (store.AppendResult, error) {
	return store.AppendResult{}, errors.New("disk full")
}

func TestSaveFailureIsReturnedAndStartsNoFold(t *testing.T) {
	svc := &fakeSummarizer{}
	mgr, err := memory.NewManager(failingAppendStore{memory.NewInMemoryStore()}, hierConfig(),
		memory.WithSummaries(summary.NewInMemoryStore(0), svc), memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	err = mgr.SaveTurn(context.Background(), "s", "alice", "q", "a")
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v", err)
	}
	_ = mgr.Flush(context.Background())
	if svc.calls.Load() != 0 || mgr.Stats().SaveErrors != 1 {
		t.Fatalf("calls %d, stats %+v", svc.calls.Load(), mgr.Stats())
	}
}

func TestToolCallsRoundTripAndWindowAlignment(t *testing.T) {
	cfg := hierConfig()
	cfg.TriggerMessageCount, cfg.RecentMessageCount = 6, 3
	f := newFixture(t, cfg)
	ctx := context.Background()
	call := func(id string) llms.ToolCall {
		return llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: "lookup_order", Arguments: `{"id":"` + id + `"}`}}
	}
	turn := []llms.ChatMessage{
		llms.HumanChatMessage{Content: "where are orders A1 and B2?"},
		llms.AIChatMessage{ToolCalls: []llms.ToolCall{call("A1"), call("B2")}},
		llms.ToolChatMessage{ID: "A1", Content: `{"status":"shipped"}`},
		llms.ToolChatMessage{ID: "B2", Content: `{"status":"packed"}`},
		llms.AIChatMessage{Content: "A1 shipped, B2 packed"},
	}
	if err := f.mgr.SaveMessages(ctx, "s", "alice", turn...); err != nil {
		t.Fatal(err)
	}
	all, err := f.mgr.ChatHistory("s", "alice").Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(all, turn) {
		t.Fatalf("round trip lost data:\n%#v\n%#v", all, turn)
	}
	// 9 messages > trigger 6; the last 3 would start with a tool result: the
	// window extends back to the assistant message that made the calls.
	if err := f.mgr.SaveMessages(ctx, "s", "alice", turn[:4]...); err != nil {
		t.Fatal(err)
	}
	h, err := f.mgr.Load(ctx, "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if h.Recent[0].Role != store.RoleAssistant || len(h.Recent[0].ToolCalls) != 2 || len(h.Recent) != 3 {
		t.Fatalf("window = %+v", h.Recent)
	}
	for _, r := range f.svc.requests() {
		if last := r.Messages[len(r.Messages)-1]; last.GetType() == llms.ChatMessageTypeAI && len(last.(llms.AIChatMessage).ToolCalls) > 0 {
			t.Fatalf("a fold ended on a tool call without its results: %+v", r.Messages)
		}
	}
}

func TestInvalidMessagesAreRejected(t *testing.T) {
	cfg := memory.DefaultConfig()
	cfg.MaxMessageBytes = 10
	f := newFixture(t, cfg)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		msgs []llms.ChatMessage
		want error
	}{
		"too large": {[]llms.ChatMessage{llms.HumanChatMessage{Content: strings.Repeat("x", 11)}}, store.ErrMessageTooLarge},
		"nul byte":  {[]llms.ChatMessage{llms.HumanChatMessage{Content: "a\x00b"}}, store.ErrInvalidMessage},
		"bad utf8":  {[]llms.ChatMessage{llms.HumanChatMessage{Content: "\xff"}}, store.ErrInvalidMessage},
		"no id":     {[]llms.ChatMessage{llms.ToolChatMessage{Content: "x"}}, store.ErrInvalidMessage},
		"nil":       {[]llms.ChatMessage{nil}, store.ErrInvalidMessage},
		"2nd bad":   {[]llms.ChatMessage{llms.HumanChatMessage{Content: "ok"}, llms.AIChatMessage{Content: "\xff"}}, store.ErrInvalidMessage},
	} {
		if err := f.mgr.SaveMessages(ctx, "s", "alice", tc.msgs...); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
	}
	if _, err := f.mgr.Append(ctx, "s", "alice", true, store.Message{Role: "wizard", Content: "x"}); !errors.Is(err, store.ErrInvalidMessage) {
		t.Errorf("unknown role: err = %v", err)
	}
	// Rejected batches store nothing, not even the session.
	if got, err := f.mgr.Messages(ctx, "s", "alice", 0, 0); !errors.Is(err, store.ErrNotFound) || len(got) != 0 {
		t.Fatalf("rejected batches stored %d messages (%v)", len(got), err)
	}
}

// Rapid saves racing loads never move the stored cursor backwards, and
// once everything settles the summary covers all but the verbatim window.
func TestCursorNeverRegressesUnderRaces(t *testing.T) {
	cfg := hierConfig()
	cfg.SupersedeDelay = time.Nanosecond
	f := newFixture(t, cfg)
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var maxSeen int64
	for w := 0; w < 4; w++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if err := f.mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
					t.Error(err)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if _, err := f.mgr.LoadHistory(ctx, "s", "alice"); err != nil {
					t.Error(err)
				}
				// Read under mu so that reads are ordered with the maximum.
				mu.Lock()
				s, _ := f.sums.Get(ctx, "s")
				if s != nil {
					if s.UpToSeq < maxSeen {
						t.Errorf("cursor went down: %d < %d", s.UpToSeq, maxSeen)
					}
					maxSeen = max(maxSeen, s.UpToSeq)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	msgs := mustMessages(t, f.mgr, "s", "alice", 0)
	s, _ := f.sums.Get(ctx, "s")
	if want := msgs[len(msgs)-11].Seq; s == nil || s.UpToSeq != want {
		t.Fatalf("final summary = %+v, want cursor %d", s, want)
	}
}

// busyLocker is a FoldLocker whose lock is always held by another process.
type busyLocker struct{ memory.MessageStore }

func (busyLocker) TryLockFold(context.Context, string, time.Duration) (func(), bool, error) {
	return nil, false, nil
}

func TestLoadDoesNotWaitForeverForAnotherProcessFold(t *testing.T) {
	svc := &fakeSummarizer{}
	ms := busyLocker{memory.NewInMemoryStore()}
	mgr, err := memory.NewManager(ms, waits(hierConfig(), 0, 20*time.Millisecond),
		memory.WithSummaries(summary.NewInMemoryStore(0), svc), memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	seed(t, ms, "s", "alice", 16)
	h, err := mgr.Load(context.Background(), "s", "alice")
	if err != nil || h.Mode != "fallback" || len(h.Messages) != 20 {
		t.Fatalf("load while another process folds: mode %s, %d messages, %v", h.Mode, len(h.Messages), err)
	}
	if err := mgr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if svc.calls.Load() != 0 {
		t.Fatal("summarized without the lock")
	}
}

// lockingStore is a FoldLocker that grants its lock to one holder at a
// time and records that deletes leave it alone.
type lockingStore struct {
	memory.MessageStore
	mu     sync.Mutex
	held   map[string]bool
	grants atomic.Int64
}

func (s *lockingStore) TryLockFold(_ context.Context, id string, _ time.Duration) (func(), bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[id] {
		return nil, false, nil
	}
	s.held[id] = true
	s.grants.Add(1)
	return func() { s.mu.Lock(); delete(s.held, id); s.mu.Unlock() }, true, nil
}

func TestFoldTakesTheStoreLock(t *testing.T) {
	ms := &lockingStore{MessageStore: memory.NewInMemoryStore(), held: map[string]bool{}}
	svc := &fakeSummarizer{}
	mgr, err := memory.NewManager(ms, hierConfig(), memory.WithSummaries(summary.NewInMemoryStore(0), svc),
		memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	seed(t, ms, "s", "alice", 16)
	h, err := mgr.Load(context.Background(), "s", "alice")
	if err != nil || h.Mode != "hierarchical" {
		t.Fatalf("mode %s, %v", h.Mode, err)
	}
	if ms.grants.Load() != 1 || svc.calls.Load() != 1 {
		t.Fatalf("lock grants %d, calls %d", ms.grants.Load(), svc.calls.Load())
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if len(ms.held) != 0 {
		t.Fatal("fold lock not released")
	}
}

func TestStatsCount(t *testing.T) {
	f := newFixture(t, hierConfig())
	ctx := context.Background()
	seed(t, f.store, "s", "alice", 16)
	if _, err := f.mgr.Load(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
		t.Fatal(err)
	}
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st := f.mgr.Stats()
	if st.Loads != 1 || st.Saves != 1 || st.LazyFolds != 1 || st.BackgroundFolds != 1 || st.SummarizerCalls != 2 || st.Folds != 2 {
		t.Fatalf("stats = %+v", st)
	}
}
