package memory_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"go.uber.org/goleak"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fakeSummarizer records requests and answers through fn (default: a fact
// with the number of messages folded and a narrative naming the last one).
type fakeSummarizer struct {
	calls atomic.Int64
	mu    sync.Mutex
	reqs  []summary.Request
	fn    func(ctx context.Context, call int64, req summary.Request) (summary.Result, error)
}

func (f *fakeSummarizer) Summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	n := f.calls.Add(1)
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	if f.fn != nil {
		return f.fn(ctx, n, req)
	}
	return countingResult(req), nil
}

func (f *fakeSummarizer) requests() []summary.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]summary.Request(nil), f.reqs...)
}

func countingResult(req summary.Request) summary.Result {
	last := req.Messages[len(req.Messages)-1].GetContent()
	return summary.Result{
		Narrative: "folded up to " + last,
		Facts:     []summary.Fact{{Key: "folded", Value: fmt.Sprint(len(req.Messages)), Category: summary.Numeric}},
	}
}

func hierConfig() memory.Config {
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	cfg.FailureCooldown, cfg.MaxFailureCooldown = 0, 0
	return cfg
}

type fixture struct {
	mgr   *memory.Manager
	store memory.MessageStore
	sums  summary.Store
	svc   *fakeSummarizer
}

func newFixture(t *testing.T, cfg memory.Config, opts ...memory.Option) *fixture {
	t.Helper()
	f := &fixture{store: memory.NewInMemoryStore(), sums: summary.NewInMemoryStore(0), svc: &fakeSummarizer{}}
	opts = append([]memory.Option{memory.WithSummaries(f.sums, f.svc), memory.WithLogger(quiet)}, opts...)
	mgr, err := memory.NewManager(f.store, cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	f.mgr = mgr
	t.Cleanup(func() { _ = mgr.Close() })
	return f
}

// seed stores turns user/assistant pairs "u1"/"a1", "u2"/"a2", ... directly
// in the store (no background folds).
func seed(t *testing.T, store memory.MessageStore, session, user string, turns int) {
	t.Helper()
	for i := 1; i <= turns; i++ {
		_, err := store.Append(context.Background(), session, user,
			memory.Message{Role: memory.RoleUser, Content: fmt.Sprintf("u%d", i)},
			memory.Message{Role: memory.RoleAssistant, Content: fmt.Sprintf("a%d", i)})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func contents(msgs []llms.ChatMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.GetContent()
	}
	return out
}

func wantContents(t *testing.T, got []llms.ChatMessage, want ...string) {
	t.Helper()
	g := contents(got)
	if strings.Join(g, "|") != strings.Join(want, "|") {
		t.Fatalf("history = %q\nwant      %q", g, want)
	}
}

func seqStrings(prefixFrom, to int) []string {
	var out []string
	for i := prefixFrom; i <= to; i++ {
		out = append(out, fmt.Sprintf("u%d", i), fmt.Sprintf("a%d", i))
	}
	return out
}

func TestTakeLastWhenSummariesOff(t *testing.T) { // E5, E3
	f := newFixture(t, memory.DefaultConfig())
	seed(t, f.store, "s", "alice", 15)
	got, err := f.mgr.LoadHistory(context.Background(), "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	wantContents(t, got, seqStrings(6, 15)...)
	if f.svc.calls.Load() != 0 {
		t.Fatal("summarizer called with summaries off")
	}
}

func TestFlagOffIgnoresWiredSummaries(t *testing.T) { // E5: flag re-checked
	cfg := memory.DefaultConfig()
	f := newFixture(t, cfg)
	for i := 0; i < 20; i++ {
		if err := f.mgr.SaveTurn(context.Background(), "s", "u", "q", "a"); err != nil {
			t.Fatal(err)
		}
	}
	_ = f.mgr.Flush(context.Background())
	if f.svc.calls.Load() != 0 {
		t.Fatal("background fold ran with Enabled=false")
	}
}

func TestThresholdIsStrict(t *testing.T) { // E4
	f := newFixture(t, hierConfig())
	seed(t, f.store, "s", "alice", 10) // 20 messages == trigger
	got, err := f.mgr.LoadHistory(context.Background(), "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	wantContents(t, got, seqStrings(1, 10)...)
	if f.svc.calls.Load() != 0 {
		t.Fatal("summarizer called at N == trigger")
	}
}

func TestHierarchicalLayout(t *testing.T) { // E6, E7, E43, E44
	f := newFixture(t, hierConfig())
	seed(t, f.store, "s", "alice", 16) // 32 messages
	h, err := f.mgr.Load(context.Background(), "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != memory.ModeHierarchical {
		t.Fatalf("mode = %s", h.Mode)
	}
	got := h.Messages
	if len(got) != 12 {
		t.Fatalf("len = %d, want 2 system + 10 recent", len(got))
	}
	if got[0].GetType() != llms.ChatMessageTypeSystem || got[0].GetContent() != "Conversation Facts:\n- folded: 22" {
		t.Fatalf("facts message = %#v", got[0])
	}
	if got[1].GetType() != llms.ChatMessageTypeSystem || got[1].GetContent() != "Conversation Summary:\nfolded up to a11" {
		t.Fatalf("narrative message = %#v", got[1])
	}
	wantContents(t, got[2:], seqStrings(12, 16)...)
	reqs := f.svc.requests()
	if len(reqs) != 1 || len(reqs[0].Messages) != 22 || reqs[0].Existing != nil {
		t.Fatalf("summarizer requests = %+v", reqs)
	}
	s, _ := f.sums.Get(context.Background(), "s")
	if s == nil || s.UpToSeq != h.Recent[0].Seq-1 {
		t.Fatalf("stored summary cursor = %+v, want seq before window %d", s, h.Recent[0].Seq)
	}
}

func TestOnlyOneBlockWhenOtherEmpty(t *testing.T) { // E8
	for _, tc := range []struct {
		name string
		res  summary.Result
		want string
	}{
		{"facts only", summary.Result{Facts: []summary.Fact{{Key: "k", Value: "v"}}, Narrative: "  \n"}, "Conversation Facts:\n- k: v"},
		{"narrative only", summary.Result{Narrative: "talked"}, "Conversation Summary:\ntalked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, hierConfig())
			f.svc.fn = func(context.Context, int64, summary.Request) (summary.Result, error) { return tc.res, nil }
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

func TestEmptySummaryFallsBackAndIsNotStored(t *testing.T) { // E9, differs #2
	f := newFixture(t, hierConfig())
	f.svc.fn = func(context.Context, int64, summary.Request) (summary.Result, error) {
		return summary.Result{Narrative: " "}, nil
	}
	seed(t, f.store, "s", "alice", 16)
	h, err := f.mgr.Load(context.Background(), "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if h.Mode != memory.ModeFallback {
		t.Fatalf("mode = %s", h.Mode)
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

func TestFreshSummaryIsReused(t *testing.T) { // E10
	f := newFixture(t, hierConfig())
	seed(t, f.store, "s", "alice", 16)
	first, _ := f.mgr.LoadHistory(context.Background(), "s", "alice")
	second, _ := f.mgr.LoadHistory(context.Background(), "s", "alice")
	if f.svc.calls.Load() != 1 {
		t.Fatalf("calls = %d, want 1", f.svc.calls.Load())
	}
	wantContents(t, second, contents(first)...)
}

func TestGrownConversationRegeneratesWithPreviousFacts(t *testing.T) { // E11, differs #3
	f := newFixture(t, hierConfig())
	f.svc.fn = func(_ context.Context, call int64, req summary.Request) (summary.Result, error) {
		if call == 1 {
			return summary.Result{Narrative: "n1", Facts: []summary.Fact{{Key: "order_id", Value: "#1"}, {Key: "city", Value: "Paris"}}}, nil
		}
		return summary.Result{Narrative: "n2", Facts: []summary.Fact{{Key: "order_id", Value: "#2"}}}, nil
	}
	seed(t, f.store, "s", "alice", 16)
	if _, err := f.mgr.LoadHistory(context.Background(), "s", "alice"); err != nil {
		t.Fatal(err)
	}
	seed(t, f.store, "s", "alice", 2)
	got, err := f.mgr.LoadHistory(context.Background(), "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.svc.requests()
	if len(reqs) != 2 || reqs[1].Existing == nil || len(reqs[1].Existing.Facts) != 2 {
		t.Fatalf("second request lacks previous facts: %+v", reqs)
	}
	// The ledger keeps the omitted fact and replaces the changed one.
	if got[0].GetContent() != "Conversation Facts:\n- order_id: #2\n- city: Paris" {
		t.Fatalf("facts = %q", got[0].GetContent())
	}
}

func TestSummarizerErrorFallsBackToTakeLast(t *testing.T) { // E12
	f := newFixture(t, hierConfig())
	f.svc.fn = func(context.Context, int64, summary.Request) (summary.Result, error) {
		return summary.Result{}, errors.New("boom: out of memory")
	}
	seed(t, f.store, "s", "alice", 16)
	got, err := f.mgr.LoadHistory(context.Background(), "s", "alice")
	if err != nil {
		t.Fatalf("summarizer error leaked to caller: %v", err)
	}
	wantContents(t, got, seqStrings(7, 16)...)
	if st := f.mgr.Stats(); st.Fallbacks != 1 || st.FoldFailures != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestCooldownAfterFailure(t *testing.T) {
	cfg := hierConfig()
	cfg.FailureCooldown, cfg.MaxFailureCooldown = time.Minute, 10*time.Minute
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	f := newFixture(t, cfg, memory.WithClock(clock))
	fail := true
	f.svc.fn = func(_ context.Context, _ int64, req summary.Request) (summary.Result, error) {
		if fail {
			return summary.Result{}, errors.New("down")
		}
		return countingResult(req), nil
	}
	seed(t, f.store, "s", "alice", 16)
	ctx := context.Background()
	_, _ = f.mgr.LoadHistory(ctx, "s", "alice")
	_, _ = f.mgr.LoadHistory(ctx, "s", "alice")
	if c := f.svc.calls.Load(); c != 1 {
		t.Fatalf("calls during cool-down = %d, want 1", c)
	}
	fail = false
	now.Add(int64(61 * time.Second))
	h, _ := f.mgr.Load(ctx, "s", "alice")
	if h.Mode != memory.ModeHierarchical || f.svc.calls.Load() != 2 {
		t.Fatalf("after cool-down: mode %s, calls %d", h.Mode, f.svc.calls.Load())
	}
}

func TestFailedTurnSavesUserOnly(t *testing.T) { // E14
	f := newFixture(t, memory.DefaultConfig())
	ctx := context.Background()
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "hello", ""); err != nil {
		t.Fatal(err)
	}
	got, _ := f.mgr.LoadHistory(ctx, "s", "alice")
	wantContents(t, got, "hello")
}

func TestNoSessionIDMeansNoMemory(t *testing.T) { // E2, E18
	f := newFixture(t, hierConfig())
	ctx := context.Background()
	if err := f.mgr.SaveTurn(ctx, "", "alice", "hello", "hi"); err != nil {
		t.Fatal(err)
	}
	got, err := f.mgr.LoadHistory(ctx, "", "alice")
	if err != nil || len(got) != 0 {
		t.Fatalf("got %v, %v", got, err)
	}
	_ = f.mgr.Flush(ctx)
	if f.svc.calls.Load() != 0 {
		t.Fatal("fold without a session")
	}
}

func TestConcurrentSavesKeepPairsAdjacent(t *testing.T) { // E16
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
	msgs, err := f.mgr.Messages(ctx, "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 128 {
		t.Fatalf("stored %d messages, want 128", len(msgs))
	}
	for i := 0; i < len(msgs); i += 2 {
		if msgs[i].Role != memory.RoleUser || msgs[i+1].Content != "a"+msgs[i].Content[1:] {
			t.Fatalf("pair %d not adjacent: %q, %q", i/2, msgs[i].Content, msgs[i+1].Content)
		}
	}
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSaveNeverWaitsForSummarizer(t *testing.T) { // E48
	f := newFixture(t, hierConfig())
	release := make(chan struct{})
	f.svc.fn = func(ctx context.Context, _ int64, req summary.Request) (summary.Result, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return summary.Result{}, ctx.Err()
		}
		return countingResult(req), nil
	}
	ctx := context.Background()
	for i := 0; i < 15; i++ { // every save above the trigger starts a fold that blocks
		if err := f.mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	s, _ := f.sums.Get(ctx, "s")
	if s == nil || s.UpToSeq != 20 {
		t.Fatalf("summary after flush = %+v, want cursor 20 (30 messages - 10 recent)", s)
	}
}

func TestNewerJobSupersedesOlder(t *testing.T) { // E17 + compare-and-delete (5.1 237b3f7c)
	f := newFixture(t, hierConfig())
	firstStarted, firstCancelled := make(chan struct{}), make(chan struct{})
	releaseFirst := make(chan struct{})
	secondStarted := make(chan struct{})
	f.svc.fn = func(ctx context.Context, call int64, req summary.Request) (summary.Result, error) {
		switch call {
		case 1: // notices cancellation but finishes late, after the newer job is registered
			close(firstStarted)
			<-ctx.Done()
			close(firstCancelled)
			<-releaseFirst
			return summary.Result{}, ctx.Err()
		case 2: // blocks until cancelled: only CancelSummarization can end it
			close(secondStarted)
			<-ctx.Done()
			return summary.Result{}, ctx.Err()
		}
		return countingResult(req), nil
	}
	ctx := context.Background()
	seed(t, f.store, "s", "alice", 10)
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
		t.Fatal(err)
	}
	<-firstStarted
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "q2", "a2"); err != nil {
		t.Fatal(err)
	}
	<-firstCancelled // the older job was cancelled by the newer save
	close(releaseFirst)
	<-secondStarted // the newer job ran only after the older one stopped
	// The old job's completion must not have evicted the new one's entry:
	// cancelling the session still reaches the running second job.
	f.mgr.CancelSummarization("s")
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if s, _ := f.sums.Get(ctx, "s"); s != nil {
		t.Fatalf("cancelled jobs stored a summary: %+v", s)
	}
}

func TestCloseCancelsAndSavesNothing(t *testing.T) { // E19, E22
	f := newFixture(t, hierConfig())
	started := make(chan struct{})
	f.svc.fn = func(ctx context.Context, _ int64, req summary.Request) (summary.Result, error) {
		close(started)
		<-ctx.Done()
		return countingResult(req), nil // a result that arrives after cancellation
	}
	ctx := context.Background()
	seed(t, f.store, "s", "alice", 10)
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := f.mgr.Close(); err != nil {
		t.Fatal(err)
	}
	if s, _ := f.sums.Get(ctx, "s"); s != nil {
		t.Fatalf("summary saved after Close: %+v", s)
	}
	f.mgr.CancelSummarization("s")
	f.mgr.CancelSummarization("unknown")
	// Saves keep working after Close but start no background work.
	f.svc.fn = nil
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "after", "close"); err != nil {
		t.Fatal(err)
	}
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if f.svc.calls.Load() != 1 {
		t.Fatalf("calls = %d: a job ran after Close", f.svc.calls.Load())
	}
}

func TestDeleteDuringFoldWritesNothing(t *testing.T) { // differs #6, 5.2 item 7
	f := newFixture(t, hierConfig())
	started, release := make(chan struct{}), make(chan struct{})
	f.svc.fn = func(_ context.Context, _ int64, req summary.Request) (summary.Result, error) {
		close(started)
		<-release // ignores cancellation on purpose: a late result
		return countingResult(req), nil
	}
	ctx := context.Background()
	seed(t, f.store, "s", "alice", 10)
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := f.mgr.DeleteSession(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if s, _ := f.sums.Get(ctx, "s"); s != nil {
		t.Fatalf("late fold wrote a summary for a deleted session: %+v", s)
	}
	if got, _ := f.mgr.LoadHistory(ctx, "s", "alice"); len(got) != 0 {
		t.Fatalf("messages survived delete: %q", contents(got))
	}
	// Deleting again (unknown session) is fine.
	if err := f.mgr.DeleteSession(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
}

func TestOwnership(t *testing.T) { // E20, differs #7
	f := newFixture(t, hierConfig())
	ctx := context.Background()
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "my order is #1", "noted"); err != nil {
		t.Fatal(err)
	}
	got, err := f.mgr.LoadHistory(ctx, "s", "mallory")
	if !errors.Is(err, memory.ErrNotOwner) || len(got) != 0 {
		t.Fatalf("foreign load = %v, %v", got, err)
	}
	if err := f.mgr.SaveTurn(ctx, "s", "mallory", "injected", "x"); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("foreign save err = %v", err)
	}
	if err := f.mgr.DeleteSession(ctx, "s", "mallory"); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("foreign delete err = %v", err)
	}
	got, err = f.mgr.LoadHistory(ctx, "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	wantContents(t, got, "my order is #1", "noted")
	// A missing user id is "anonymous", which does not own alice's session.
	if _, err := f.mgr.LoadHistory(ctx, "s", ""); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("anonymous load err = %v", err)
	}
	if err := f.mgr.SaveTurn(ctx, "anon", "", "hi", "hello"); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.mgr.LoadHistory(ctx, "anon", memory.AnonymousUser); len(got) != 2 {
		t.Fatalf("anonymous session = %q", contents(got))
	}
	if f.mgr.Stats().OwnerDenied != 2 {
		t.Fatalf("stats = %+v", f.mgr.Stats())
	}
}

// failingStore fails reads on demand.
type failingStore struct {
	memory.MessageStore
	failTail, failOwner bool
}

func (s *failingStore) Tail(ctx context.Context, id string, n int) (memory.Tail, error) {
	if s.failTail {
		return memory.Tail{}, errors.New("connection refused")
	}
	return s.MessageStore.Tail(ctx, id, n)
}

func (s *failingStore) Owner(ctx context.Context, id string) (string, error) {
	if s.failOwner {
		return "", errors.New("connection refused")
	}
	return s.MessageStore.Owner(ctx, id)
}

func TestStoreFailuresAreReturned(t *testing.T) { // E23, E20 lookup failure fails closed
	store := &failingStore{MessageStore: memory.NewInMemoryStore()}
	mgr, err := memory.NewManager(store, hierConfig(), memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	ctx := context.Background()
	if err := mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
		t.Fatal(err)
	}
	store.failTail = true
	if got, err := mgr.LoadHistory(ctx, "s", "alice"); err == nil || len(got) != 0 {
		t.Fatalf("read failure: %v, %v", got, err)
	}
	store.failTail, store.failOwner = false, true
	if got, err := mgr.LoadHistory(ctx, "s", "alice"); err == nil || len(got) != 0 || errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("owner lookup failure: %v, %v", got, err)
	}
}

func TestToolCallsRoundTripAndWindowAlignment(t *testing.T) { // differs #8
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
	// Two more plain turns: 9 messages > trigger 6; the last 3 are
	// [a(tool results answer)...]; a window must never start with a tool result.
	if err := f.mgr.SaveMessages(ctx, "s", "alice", turn[:4]...); err != nil {
		t.Fatal(err)
	}
	h, err := f.mgr.Load(ctx, "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if h.Recent[0].Role == memory.RoleTool {
		t.Fatalf("window starts with a tool result: %+v", h.Recent[0])
	}
	if h.Recent[0].Role != memory.RoleAssistant || len(h.Recent[0].ToolCalls) != 2 || len(h.Recent) != 3 {
		t.Fatalf("window = %+v", h.Recent)
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
		"too large": {[]llms.ChatMessage{llms.HumanChatMessage{Content: strings.Repeat("x", 11)}}, memory.ErrMessageTooLarge},
		"nul byte":  {[]llms.ChatMessage{llms.HumanChatMessage{Content: "a\x00b"}}, memory.ErrInvalidMessage},
		"bad utf8":  {[]llms.ChatMessage{llms.HumanChatMessage{Content: "\xff"}}, memory.ErrInvalidMessage},
		"no id":     {[]llms.ChatMessage{llms.ToolChatMessage{Content: "x"}}, memory.ErrInvalidMessage},
		"nil":       {[]llms.ChatMessage{nil}, memory.ErrInvalidMessage},
		"2nd bad":   {[]llms.ChatMessage{llms.HumanChatMessage{Content: "ok"}, llms.AIChatMessage{Content: "\xff"}}, memory.ErrInvalidMessage},
	} {
		if err := f.mgr.SaveMessages(ctx, "s", "alice", tc.msgs...); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
	}
	if got, _ := f.mgr.Messages(ctx, "s", "alice"); len(got) != 0 {
		t.Fatalf("rejected batches stored %d messages", len(got))
	}
}

func TestConfigValidation(t *testing.T) { // differs #9, 5.2 item 11
	for name, mutate := range map[string]func(*memory.Config){
		"RecentMessageCount":   func(c *memory.Config) { c.RecentMessageCount = 0 },
		"TriggerMessageCount":  func(c *memory.Config) { c.TriggerMessageCount = 5 },
		"MaxConversationTurns": func(c *memory.Config) { c.MaxConversationTurns = -1 },
		"MaxMessageBytes":      func(c *memory.Config) { c.MaxMessageBytes = -1 },
	} {
		cfg := memory.DefaultConfig()
		mutate(&cfg)
		err := cfg.Validate()
		if !errors.Is(err, memory.ErrInvalidConfig) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v", name, err)
		}
		if _, err := memory.NewManager(memory.NewInMemoryStore(), cfg); err == nil {
			t.Errorf("%s: NewManager accepted an invalid config", name)
		}
	}
	if err := memory.DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestCursorNeverRegressesUnderRaces(t *testing.T) { // E31, E32, differs #5
	f := newFixture(t, hierConfig())
	f.svc.fn = func(ctx context.Context, _ int64, req summary.Request) (summary.Result, error) {
		time.Sleep(time.Millisecond)
		return countingResult(req), nil
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	var maxSeen atomic.Int64
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
				if s, _ := f.sums.Get(ctx, "s"); s != nil {
					if prev := maxSeen.Load(); s.UpToSeq < prev {
						t.Errorf("cursor went down: %d < %d", s.UpToSeq, prev)
					} else {
						maxSeen.CompareAndSwap(prev, s.UpToSeq)
					}
				}
			}
		}()
	}
	wg.Wait()
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	s, _ := f.sums.Get(ctx, "s")
	if s == nil || s.UpToSeq != 160-10 {
		t.Fatalf("final summary = %+v, want cursor 150", s)
	}
}

func TestFoldObserverRunsInBackground(t *testing.T) {
	got := make(chan summary.Summary, 4)
	block := make(chan struct{})
	f := newFixture(t, hierConfig(), memory.WithFoldObserver(func(ctx context.Context, s summary.Summary) {
		<-block // a slow observer must not hold up the load that folded
		got <- s
	}), memory.WithFoldObserver(func(context.Context, summary.Summary) { panic("observer bug") }))
	seed(t, f.store, "s", "alice", 16)
	if _, err := f.mgr.LoadHistory(context.Background(), "s", "alice"); err != nil {
		t.Fatal(err)
	}
	close(block)
	if s := <-got; s.SessionID != "s" || s.UpToSeq != 22 {
		t.Fatalf("observer got %+v", s)
	}
}

type failingAppendStore struct{ memory.MessageStore }

func (failingAppendStore) Append(context.Context, string, string, ...memory.Message) (memory.AppendResult, error) {
	return memory.AppendResult{}, errors.New("disk full")
}

func TestSaveFailureIsReturnedAndStartsNoFold(t *testing.T) { // E15 (differs: Go returns the error)
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

// busyLocker is a FoldLocker whose lock is always held by "another process".
type busyLocker struct{ memory.MessageStore }

func (busyLocker) TryLockFold(context.Context, string, time.Duration) (func(), bool, error) {
	return nil, false, nil
}

func TestLoadDoesNotWaitForeverForAnotherProcessFold(t *testing.T) {
	svc := &fakeSummarizer{}
	store := busyLocker{memory.NewInMemoryStore()}
	mgr, err := memory.NewManager(store, hierConfig(), memory.WithSummaries(summary.NewInMemoryStore(0), svc),
		memory.WithLogger(quiet), memory.WithFoldWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	seed(t, store, "s", "alice", 16)
	h, err := mgr.Load(context.Background(), "s", "alice")
	if err != nil || h.Mode != memory.ModeFallback || len(h.Messages) != 20 {
		t.Fatalf("load while another process folds: mode %s, %d messages, %v", h.Mode, len(h.Messages), err)
	}
	if svc.calls.Load() != 0 {
		t.Fatal("summarized without the lock")
	}
}

func TestDeleteObserver(t *testing.T) {
	var deleted []string
	f := newFixture(t, hierConfig(),
		memory.WithDeleteObserver(func(_ context.Context, id string) { deleted = append(deleted, id) }),
		memory.WithDeleteObserver(func(context.Context, string) { panic("observer bug") }))
	ctx := context.Background()
	_ = f.mgr.SaveTurn(ctx, "s", "alice", "q", "a")
	if err := f.mgr.DeleteSession(ctx, "s", "mallory"); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatal(err)
	}
	if err := f.mgr.DeleteSession(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(deleted, ",") != "s" {
		t.Fatalf("observer saw %v", deleted)
	}
}

// A burst of saves, each superseding a running fold, settles into few
// summarizer calls instead of one started (and cancelled) per save.
func TestBurstOfSavesSettles(t *testing.T) {
	f := newFixture(t, hierConfig())
	f.svc.fn = func(ctx context.Context, _ int64, req summary.Request) (summary.Result, error) {
		<-ctx.Done() // a slow summarizer: every call ends by supersession
		return summary.Result{}, ctx.Err()
	}
	seed(t, f.store, "s", "alice", 10)
	for i := 0; i < 20; i++ {
		if err := f.mgr.SaveTurn(context.Background(), "s", "alice", "q", "a"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // pacing, as a burst of client requests
	}
	f.mgr.CancelSummarization("s")
	_ = f.mgr.Flush(context.Background())
	if calls := f.svc.calls.Load(); calls > 6 { // without the settle delay: about 20
		t.Fatalf("20 rapid saves started %d summarizer calls", calls)
	}
}

// A literal with only the contract's four fields is a valid configuration.
func TestLiteralConfigWithContractFieldsOnly(t *testing.T) {
	cfg := memory.Config{Enabled: true, TriggerMessageCount: 20, RecentMessageCount: 10, MaxConversationTurns: 10}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg,
		memory.WithSummaries(summary.NewInMemoryStore(0), &fakeSummarizer{}), memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	seed(t, mgr.Store(), "s", "alice", 16)
	h, err := mgr.Load(context.Background(), "s", "alice")
	if err != nil || h.Mode != memory.ModeHierarchical || len(h.Messages) != 12 {
		t.Fatalf("mode %s, %d messages, %v", h.Mode, len(h.Messages), err)
	}
}
