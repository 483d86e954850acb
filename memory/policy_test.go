package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strconv"
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

func chunkedConfig(k, b int) memory.Config {
	cfg := hierConfig()
	cfg.Policy = memory.PolicyChunked
	cfg.RecentMessageCount, cfg.BufferMessageCount = k, b
	cfg.FoldTokenFraction, cfg.SafetyTurns, cfg.MaxFoldInputTokens = 0, 0, 0
	return cfg
}

func saveTurns(t *testing.T, mgr *memory.Manager, session string, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		if err := mgr.SaveTurn(context.Background(), session, "alice", fmt.Sprintf("u%d", i), fmt.Sprintf("a%d", i)); err != nil {
			t.Fatal(err)
		}
		if err := mgr.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestChunkedBufferedWindow(t *testing.T) {
	f := newFixture(t, chunkedConfig(4, 4))
	ctx := context.Background()
	for turn := 1; turn <= 12; turn++ {
		saveTurns(t, f.mgr, "s", turn, turn)
		h, err := f.mgr.Load(ctx, "s", "alice")
		if err != nil {
			t.Fatal(err)
		}
		if n := len(h.Recent); n > 8 || (2*turn >= 4 && n < 4) {
			t.Fatalf("turn %d: %d verbatim messages, want between K=4 and K+B=8", turn, n)
		}
	}
	// Unfolded tail: 2,4,6,8, then 10 > 8 folds down to 4, and again:
	// a fold every 3 turns after the first 4.
	if calls := f.svc.calls.Load(); calls != 3 {
		t.Fatalf("summarizer calls = %d, want 3 for 12 turns", calls)
	}
	reqs := f.svc.requests()
	if len(reqs[0].Messages) != 6 || reqs[0].Incremental || !reqs[1].Incremental || len(reqs[1].Messages) != 6 {
		t.Fatalf("fold requests: first %d msgs (incremental %v), second %d msgs (incremental %v)",
			len(reqs[0].Messages), reqs[0].Incremental, len(reqs[1].Messages), reqs[1].Incremental)
	}
	if reqs[1].Messages[0].GetContent() != "u4" || reqs[1].Existing == nil {
		t.Fatalf("incremental fold must start after the cursor and carry the summary: %+v", reqs[1])
	}
}

func TestChunkedZeroBufferFoldsEveryTurn(t *testing.T) { // B=0 reproduces arc-reactor's cadence
	f := newFixture(t, chunkedConfig(4, 0))
	saveTurns(t, f.mgr, "s", 1, 6)
	if calls := f.svc.calls.Load(); calls != 4 { // turns 3..6 each push the tail past K
		t.Fatalf("calls = %d, want 4", calls)
	}
}

func TestChunkedFullModeResummarizesFromOriginals(t *testing.T) {
	cfg := chunkedConfig(4, 2)
	cfg.FoldMode = "full"
	f := newFixture(t, cfg)
	saveTurns(t, f.mgr, "s", 1, 6)
	reqs := f.svc.requests()
	last := reqs[len(reqs)-1]
	if last.Incremental || last.Messages[0].GetContent() != "u1" || last.Existing == nil {
		t.Fatalf("full fold must start from the first message with the existing facts: %+v", last)
	}
}

// triggerLog records the trigger of every fold the manager logs.
type triggerLog struct {
	mu       sync.Mutex
	triggers []string
}

func (l *triggerLog) logger() *slog.Logger {
	return slog.New(recordHandler(func(r slog.Record) {
		if r.Message != "strata: fold" {
			return
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "trigger" {
				l.mu.Lock()
				l.triggers = append(l.triggers, a.Value.String())
				l.mu.Unlock()
			}
			return true
		})
	}))
}

func (l *triggerLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.triggers, ",")
}

func TestChunkedTriggersAndPriority(t *testing.T) {
	t.Run("safety", func(t *testing.T) {
		var log triggerLog
		cfg := chunkedConfig(2, 100)
		cfg.SafetyTurns = 3
		f := newFixture(t, cfg, memory.WithLogger(log.logger()))
		saveTurns(t, f.mgr, "s", 1, 3)
		if f.svc.calls.Load() != 1 || log.String() != "safety" {
			t.Fatalf("calls %d, triggers %v", f.svc.calls.Load(), log.String())
		}
	})
	t.Run("token beats overflow", func(t *testing.T) {
		var log triggerLog
		cfg := chunkedConfig(2, 2)
		cfg.FoldTokenThreshold = 100 // 5 messages × 21 tokens > 100 exactly when overflow fires too
		f := newFixture(t, cfg, memory.WithLogger(log.logger()))
		saveTurns(t, f.mgr, "s", 1, 3)
		if f.svc.calls.Load() != 1 || log.String() != "token" {
			t.Fatalf("calls %d, triggers %v", f.svc.calls.Load(), log.String())
		}
	})
	t.Run("fraction of the window", func(t *testing.T) {
		var log triggerLog
		cfg := chunkedConfig(2, 100)
		// threshold 0.5 × 130 = 65 tokens ≈ 3 messages
		cfg.FoldTokenFraction, cfg.ContextWindowTokens, cfg.OutputReserveTokens = 0.5, 130, 10
		f := newFixture(t, cfg, memory.WithLogger(log.logger()))
		saveTurns(t, f.mgr, "s", 1, 2)
		if f.svc.calls.Load() != 1 || log.String() != "token" {
			t.Fatalf("calls %d, triggers %v", f.svc.calls.Load(), log.String())
		}
	})
}

type recordHandler func(slog.Record)

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	h(r)
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }

func TestChunkedInputCapFoldsInChunksAndKeepsProgress(t *testing.T) {
	cfg := chunkedConfig(2, 8)
	cfg.MaxFoldInputTokens = 50 // two messages of ~21 tokens per call
	f := newFixture(t, cfg)
	f.svc.set(func(_ context.Context, call int64, req summary.Request) (summary.Result, error) {
		if call == 3 {
			return summary.Result{}, errors.New("rate limited")
		}
		return countingResult(req), nil
	})
	seed(t, f.store, "s", "alice", 6) // +1 turn = 14 messages > K+B: fold 12 in chunks of 2
	if err := f.mgr.SaveTurn(context.Background(), "s", "alice", "u7", "a7"); err != nil {
		t.Fatal(err)
	}
	_ = f.mgr.Flush(context.Background())
	for _, r := range f.svc.requests() {
		if len(r.Messages) != 2 {
			t.Fatalf("chunk of %d messages exceeds the input cap", len(r.Messages))
		}
	}
	// Calls 1 and 2 succeeded before the failure: their progress is stored.
	msgs := mustMessages(t, f.mgr, "s", "alice", 0)
	s, _ := f.sums.Get(context.Background(), "s")
	if s == nil || s.UpToSeq != msgs[3].Seq {
		t.Fatalf("progress after a failed chunk = %+v, want cursor at the 4th message", s)
	}
	// The view still shows every unfolded message.
	h, err := f.mgr.Load(context.Background(), "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	assertNoDropWithoutFold(t, f.mgr, "s", "alice", h)
}

func TestPromptMemoryBudgetFoldsBeforeDropping(t *testing.T) {
	cfg := chunkedConfig(6, 10)
	cfg.PromptMemoryBudget, cfg.MinTailMessages = 120, 2
	f := newFixture(t, cfg)
	f.svc.set(func(_ context.Context, _ int64, req summary.Request) (summary.Result, error) {
		return summary.Result{Narrative: strings.Repeat("long story. ", 60), Facts: []summary.Fact{{Key: "k", Value: "v"}}}, nil
	})
	seed(t, f.store, "s", "alice", 5) // 10 messages, below K+B: no save would fold yet
	// Each load folds what the budget cannot hold, never dropping a message
	// unfolded; as the summary grows, the next load folds further, down to
	// MinTailMessages verbatim.
	var h memory.History
	for i := 0; i < 5 && h.Mode != "hierarchical"; i++ {
		var err error
		if h, err = f.mgr.Load(context.Background(), "s", "alice"); err != nil {
			t.Fatal(err)
		}
		assertNoDropWithoutFold(t, f.mgr, "s", "alice", h)
	}
	if h.Mode != "hierarchical" || len(h.Recent) != 2 {
		t.Fatalf("mode %s with %d verbatim messages, want hierarchical with MinTailMessages=2", h.Mode, len(h.Recent))
	}
	narr := h.Messages[1].GetContent()
	if !strings.HasPrefix(narr, summary.NarrativeHeader+"\n…") || len(narr) > 400 {
		t.Fatalf("narrative not truncated to the budget: %d bytes", len(narr))
	}
	if h.Messages[0].GetContent() != summary.FactsHeader+"\n- k: v" {
		t.Fatalf("facts must never be cut: %q", h.Messages[0].GetContent())
	}
	stored, _ := f.sums.Get(context.Background(), "s")
	if !strings.HasPrefix(stored.Narrative, "long story.") {
		t.Fatal("the stored narrative must stay whole")
	}
}

func TestModelVariantMetadataIsStoredNotUsed(t *testing.T) {
	f := newFixture(t, chunkedConfig(2, 2))
	ctx := context.Background()
	_, err := f.mgr.Append(ctx, "s", "alice", true,
		store.Message{Role: store.RoleUser, Content: "deep question"},
		store.Message{Role: store.RoleAssistant, Content: "deep answer", Metadata: map[string]string{store.MetadataModelVariant: "deep-dive"}})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := f.mgr.Load(ctx, "s", "alice")
	if h.Recent[1].Metadata[store.MetadataModelVariant] != "deep-dive" {
		t.Fatalf("metadata lost: %+v", h.Recent[1])
	}
	if _, ok := h.Messages[1].(llms.AIChatMessage); !ok {
		t.Fatalf("assistant message type = %T", h.Messages[1])
	}
}

// assertNoDropWithoutFold checks the invariant: every stored message is
// either covered by the summary the view shows or shown verbatim.
func assertNoDropWithoutFold(t *testing.T, mgr *memory.Manager, session, user string, h memory.History) {
	t.Helper()
	all, err := mgr.Messages(context.Background(), session, user, 0, 0)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	var cursor int64
	if h.Summary != nil {
		cursor = h.Summary.UpToSeq
	}
	shown := map[int64]bool{}
	for _, m := range h.Recent {
		shown[m.Seq] = true
	}
	for _, m := range all {
		if m.Seq > cursor && !shown[m.Seq] {
			t.Fatalf("message seq %d (%q) left the view without being folded (cursor %d, mode %s)", m.Seq, m.Content, cursor, h.Mode)
		}
	}
	blocks := len(h.Messages) - len(h.Recent)
	if blocks < 0 || blocks > 2 || (blocks > 0 && h.Summary == nil) {
		t.Fatalf("messages (%d) are not summary blocks + recent (%d)", len(h.Messages), len(h.Recent))
	}
	for i, m := range h.Recent {
		if h.Messages[blocks+i].GetContent() != m.Content {
			t.Fatalf("message %d is not the verbatim recent message %q", blocks+i, m.Content)
		}
	}
}

// propertySeedFlag (-strata.seed) or STRATA_PROPERTY_SEED replays a
// property test's schedules; by default each run draws a fresh seed.
var propertySeedFlag = flag.Uint64("strata.seed", 0, "seed of TestNoDropWithoutFoldProperty (0: STRATA_PROPERTY_SEED, else random)")

// propertySeed returns the seed to run with, and logs it with how to replay
// it.
func propertySeed(t *testing.T) uint64 {
	s := *propertySeedFlag
	if v := os.Getenv("STRATA_PROPERTY_SEED"); s == 0 && v != "" {
		var err error
		if s, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("STRATA_PROPERTY_SEED: %v", err)
		}
	}
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -strata.seed=%d or STRATA_PROPERTY_SEED=%d)", s, s, s)
	return s
}

// TestNoDropWithoutFoldProperty runs random schedules of saves, loads,
// summarizer failures, slow and hung summarizers, cancellations and
// restarts, each in a testing/synctest bubble (its waits take no real
// time), and checks after every step that no message
// left the view without being folded into the summary shown.
func TestNoDropWithoutFoldProperty(t *testing.T) {
	schedules := 500
	if testing.Short() {
		schedules = 200
	}
	seed := propertySeed(t)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := 0; i < schedules; i++ {
		synctest.Test(t, func(t *testing.T) { runSchedule(t, rng, i) })
		if t.Failed() {
			t.Fatalf("schedule %d failed (seed %d)", i, seed)
		}
	}
}

// runSchedule drives one random schedule of saves, loads, summarizer
// failures, slow summarizers, cancellations and restarts, checking the
// invariant after every step.
func runSchedule(t *testing.T, rng *rand.Rand, n int) {
	cfg := chunkedConfig(1+rng.IntN(6), rng.IntN(6))
	cfg.SafetyTurns = rng.IntN(4)
	cfg.MaxFoldInputTokens = []int{0, 30, 80}[rng.IntN(3)]
	cfg.FoldMode = []string{"incremental", "full"}[rng.IntN(2)]
	if rng.IntN(3) == 0 {
		cfg.FoldTokenThreshold = 60 + rng.IntN(200)
	}
	if rng.IntN(4) == 0 {
		cfg.PromptMemoryBudget, cfg.MinTailMessages = 80+rng.IntN(200), rng.IntN(4)
	}
	store, sums := memory.NewInMemoryStore(), summary.NewInMemoryStore(0)
	// The summarizer's behaviour changes during a schedule: it answers at
	// once, fails, is slow (yields while saves, loads and cancellations
	// interleave), or blocks until cancelled or until it leaves that mode.
	const (
		answer = iota
		fail
		slow
		block
	)
	var mu sync.Mutex
	mode, hold := answer, make(chan struct{})
	setMode := func(m int) {
		mu.Lock()
		defer mu.Unlock()
		if mode == block && m != block {
			close(hold)
			hold = make(chan struct{})
		}
		mode = m
	}
	svc := summary.ServiceFunc(func(ctx context.Context, req summary.Request) (summary.Result, error) {
		mu.Lock()
		m, h := mode, hold
		mu.Unlock()
		switch m {
		case slow:
			for i := 0; i < 20 && ctx.Err() == nil; i++ {
				runtime.Gosched()
			}
		case block:
			select {
			case <-h:
			case <-ctx.Done():
			}
		case fail:
			return summary.Result{}, errors.New("summarizer down")
		}
		if err := ctx.Err(); err != nil {
			return summary.Result{}, err
		}
		return countingResult(req), nil
	})
	// Short waits: loads rarely wait for folds and show stale summaries or
	// degrade; only then may the summarizer block (a load would otherwise
	// wait Config.FoldWait for it).
	short := rng.IntN(2) == 0
	modes := []int{answer, fail, slow}
	if short {
		modes = append(modes, block)
		cfg = waits(cfg, time.Millisecond, time.Millisecond)
	}
	open := func() *memory.Manager {
		mgr, err := memory.NewManager(store, cfg, memory.WithSummaries(sums, svc), memory.WithLogger(quiet))
		if err != nil {
			t.Fatalf("schedule %d: %v (cfg %+v)", n, err, cfg)
		}
		return mgr
	}
	mgr := open()
	defer func() {
		setMode(answer)
		_ = mgr.Close()
	}()
	ctx := context.Background()
	for step := 0; step < 25; step++ {
		switch op := rng.IntN(10); {
		case op < 4:
			msgs := []llms.ChatMessage{llms.HumanChatMessage{Content: fmt.Sprintf("q%d %s", step, strings.Repeat("w ", rng.IntN(40)))}}
			if rng.IntN(3) == 0 {
				id := fmt.Sprintf("c%d", step)
				msgs = append(msgs, llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: "{}"}}}},
					llms.ToolChatMessage{ID: id, Content: "result"})
			}
			msgs = append(msgs, llms.AIChatMessage{Content: fmt.Sprintf("a%d", step)})
			var err error
			err = mgr.SaveMessages(ctx, "s", "alice", msgs...)
			if err != nil {
				t.Fatalf("schedule %d step %d: save: %v", n, step, err)
			}
		case op < 7:
		case op == 7:
			setMode(modes[rng.IntN(len(modes))])
		case op == 8:
			mgr.CancelSummarization("s")
		default:
			_ = mgr.Close()
			mgr = open()
		}
		mu.Lock()
		blocked := mode == block
		mu.Unlock()
		if !blocked && rng.IntN(2) == 0 {
			_ = mgr.Flush(ctx)
		}
		var h memory.History
		var err error
		h, err = mgr.Load(ctx, "s", "alice")
		if err != nil {
			t.Fatalf("schedule %d step %d: load: %v", n, step, err)
		}
		assertNoDropWithoutFold(t, mgr, "s", "alice", h)
		if h.Total >= cfg.RecentMessageCount && len(h.Recent) < min(cfg.RecentMessageCount, max(cfg.MinTailMessages, 1)) && cfg.PromptMemoryBudget == 0 {
			t.Fatalf("schedule %d step %d: only %d verbatim messages, want >= K=%d", n, step, len(h.Recent), cfg.RecentMessageCount)
		}
		if t.Failed() {
			return
		}
	}
}

// locomoTurns reads the first LoCoMo conversation from ../shared/data (read
// in place, never copied into the repository) as alternating messages.
func locomoTurns(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../../shared/data/locomo/locomo10.json")
	if err != nil {
		t.Skipf("LoCoMo data not available (%v): needs ../shared/data beside the repository", err)
	}
	var samples []struct {
		Conversation map[string]json.RawMessage `json:"conversation"`
	}
	if err := json.Unmarshal(raw, &samples); err != nil {
		t.Fatal(err)
	}
	conv := samples[0].Conversation
	var keys []string
	for k := range conv {
		if strings.HasPrefix(k, "session_") && !strings.HasSuffix(k, "date_time") {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, _ := strconv.Atoi(strings.TrimPrefix(keys[i], "session_"))
		b, _ := strconv.Atoi(strings.TrimPrefix(keys[j], "session_"))
		return a < b
	})
	var texts []string
	for _, k := range keys {
		var turns []struct{ Text string }
		if err := json.Unmarshal(conv[k], &turns); err != nil {
			continue
		}
		for _, tr := range turns {
			texts = append(texts, tr.Text)
		}
	}
	return texts
}

// TestChunkedCallsVersusParityOnLoCoMo checks what the chunked policy is
// for, on a real dialogue: with B>0 and the token trigger on, at least 5×
// fewer summarizer calls than parity while the model always sees >= K
// verbatim messages.
func TestChunkedCallsVersusParityOnLoCoMo(t *testing.T) {
	texts := locomoTurns(t)
	run := func(cfg memory.Config) (calls int64, minRecent int) {
		f := newFixture(t, cfg)
		minRecent = math.MaxInt
		ctx := context.Background()
		for i := 0; i+1 < len(texts); i += 2 {
			h, err := f.mgr.Load(ctx, "s", "alice")
			if err != nil {
				t.Fatal(err)
			}
			if h.Total >= cfg.RecentMessageCount {
				minRecent = min(minRecent, len(h.Recent))
			}
			if err := f.mgr.SaveTurn(ctx, "s", "alice", texts[i], texts[i+1]); err != nil {
				t.Fatal(err)
			}
			if err := f.mgr.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return f.svc.calls.Load(), minRecent
	}
	parityCalls, _ := run(hierConfig())
	cfg := memory.DefaultConfig()
	cfg.Enabled, cfg.Policy = true, memory.PolicyChunked // defaults: B=20, token trigger 0.7 × window
	cfg.FailureCooldown, cfg.MaxFailureCooldown = 0, 0
	cfg.LoadGrace = hierConfig().LoadGrace
	chunkedCalls, minRecent := run(cfg)
	t.Logf("LoCoMo conv 0, %d messages: parity %d calls, chunked %d calls (%.1f× fewer), min verbatim %d",
		len(texts), parityCalls, chunkedCalls, float64(parityCalls)/float64(chunkedCalls), minRecent)
	if chunkedCalls*5 > parityCalls {
		t.Fatalf("chunked made %d calls vs parity %d: less than 5× fewer", chunkedCalls, parityCalls)
	}
	if minRecent < cfg.RecentMessageCount {
		t.Fatalf("model saw only %d verbatim messages, want >= K=%d", minRecent, cfg.RecentMessageCount)
	}
}

// Saves that race a chunked fold finishing are never lost: each either
// makes the running fold check again or starts a new one, so once
// everything settles the unfolded tail is back within K+B.
func TestChunkedSavesRacingAFoldAreNotLost(t *testing.T) {
	cfg := chunkedConfig(2, 0)
	for round := 0; round < 20; round++ {
		f := newFixture(t, cfg)
		ctx := context.Background()
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 25; i++ {
					if err := f.mgr.SaveTurn(ctx, "s", "alice", "q", "a"); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		if err := f.mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		s, _ := f.sums.Get(ctx, "s")
		if s == nil {
			t.Fatal("nothing folded")
		}
		if n := len(mustMessages(t, f.mgr, "s", "alice", s.UpToSeq)); n > cfg.RecentMessageCount+cfg.BufferMessageCount {
			t.Fatalf("round %d: %d messages left unfolded after the last save's fold, want <= K+B = %d", round, n, cfg.RecentMessageCount+cfg.BufferMessageCount)
		}
		_ = f.mgr.Close()
	}
}

// tailCounter counts the store's Tail reads.
type tailCounter struct {
	memory.MessageStore
	tails atomic.Int64
}

func (c *tailCounter) Tail(ctx context.Context, sessionID, userID string, n int) (store.Tail, error) {
	c.tails.Add(1)
	return c.MessageStore.Tail(ctx, sessionID, userID, n)
}

// A chunked session tracks its backlog between folds: saves that fire no
// trigger start no fold and read nothing, so the session is read about
// once per fold rather than once per save — and it still folds exactly when
// its buffer overflows, with nothing unfolded ever left out of the view.
func TestChunkedSavesReadOnlyWhenAFoldIsDue(t *testing.T) {
	store := &tailCounter{MessageStore: memory.NewInMemoryStore()}
	svc := &fakeSummarizer{}
	mgr, err := memory.NewManager(store, chunkedConfig(4, 4), memory.WithSummaries(summary.NewInMemoryStore(0), svc), memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	ctx := context.Background()
	const turns = 40
	for i := 1; i <= turns; i++ {
		if err := mgr.SaveTurn(ctx, "s", "alice", fmt.Sprintf("u%d", i), fmt.Sprintf("a%d", i)); err != nil {
			t.Fatal(err)
		}
		if err := mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	folds := mgr.Stats().Folds
	// 80 messages, folded down to K = 4 whenever more than K+B = 8 are
	// unfolded: a fold every third turn.
	if folds < 10 || folds > 16 {
		t.Fatalf("%d folds for %d turns", folds, turns)
	}
	// Each fold reads the session once, plus one plan after each fold
	// (the backlog it tracked predates the fold); without tracking every
	// save past K would read it.
	reads := store.tails.Load()
	t.Logf("%d saves, %d folds, %d session reads", turns, folds, reads)
	if reads > 2*folds+2 || reads >= turns-2 {
		t.Fatalf("%d session reads for %d saves and %d folds", reads, turns, folds)
	}
	h, err := mgr.Load(ctx, "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(h.Recent); n < 4 || n > 8 {
		t.Fatalf("%d unfolded messages shown, want between K and K+B", n)
	}
	if last := h.Recent[len(h.Recent)-1].Content; last != fmt.Sprintf("a%d", turns) {
		t.Fatalf("newest shown %q", last)
	}
}
