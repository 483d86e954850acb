package memory_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"go.uber.org/goleak"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// TestMain fails the run when any test leaves a goroutine behind: every
// manager is closed and every blocked summarizer released by its test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.DiscardHandler)

// patience bounds every wait of these tests for something that must
// happen. Reaching it means a hang — a load that waited for a blocked fold,
// a Close that never returned — never mere slowness: no test asserts how
// long anything took.
const patience = 30 * time.Second

// await waits for ch to be closed or to deliver a value, at most patience.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(patience):
		t.Fatalf("gave up waiting for %s", what)
		panic("unreachable")
	}
}

// within runs fn on its own goroutine and returns its result, failing the
// test if fn has not returned after patience (fn is then left running).
func within[T any](t *testing.T, what string, fn func() T) T {
	t.Helper()
	ch := make(chan T, 1)
	go func() { ch <- fn() }()
	return await(t, ch, what)
}

// loaded is a Load's result, for within.
type loaded struct {
	h   memory.History
	err error
}

func loadAsync(t *testing.T, mgr *memory.Manager, ctx context.Context, sessionID, userID string) loaded {
	t.Helper()
	return within(t, "Load to return", func() loaded {
		h, err := mgr.Load(ctx, sessionID, userID)
		return loaded{h, err}
	})
}

// fakeSummarizer records its requests, counts calls and how many run at
// once, and answers through fn (default countingResult).
type fakeSummarizer struct {
	calls   atomic.Int64
	running atomic.Int64
	peak    atomic.Int64 // most calls running at the same time
	mu      sync.Mutex
	reqs    []summary.Request
	fn      func(ctx context.Context, call int64, req summary.Request) (summary.Result, error)
}

// set replaces the answering function; safe while folds run.
func (f *fakeSummarizer) set(fn func(ctx context.Context, call int64, req summary.Request) (summary.Result, error)) {
	f.mu.Lock()
	f.fn = fn
	f.mu.Unlock()
}

func (f *fakeSummarizer) Summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	n := f.calls.Add(1)
	r := f.running.Add(1)
	defer f.running.Add(-1)
	for p := f.peak.Load(); r > p && !f.peak.CompareAndSwap(p, r); p = f.peak.Load() {
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	fn := f.fn
	f.mu.Unlock()
	if fn != nil {
		return fn(ctx, n, req)
	}
	return countingResult(req), nil
}

func (f *fakeSummarizer) requests() []summary.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]summary.Request(nil), f.reqs...)
}

// countingResult is a fact with the number of messages folded and a
// narrative naming the first and the last one.
func countingResult(req summary.Request) summary.Result {
	first, last := req.Messages[0].GetContent(), req.Messages[len(req.Messages)-1].GetContent()
	return summary.Result{
		Narrative: "folded " + first + " to " + last,
		Facts:     []summary.Fact{{Key: "folded", Value: fmt.Sprint(len(req.Messages)), Category: summary.Numeric}},
	}
}

// gate holds summarizer calls until it is opened. Every call announces
// itself on entered first.
type gate struct {
	entered chan int64
	open    chan struct{}
	once    sync.Once
}

func newGate() *gate { return &gate{entered: make(chan int64, 1024), open: make(chan struct{})} }

// release opens the gate; idempotent.
func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// summarizer answers countingResult once the gate opens. honourCtx false
// makes it ignore cancellation, like a client without a timeout.
func (g *gate) summarizer(honourCtx bool) func(context.Context, int64, summary.Request) (summary.Result, error) {
	return func(ctx context.Context, call int64, req summary.Request) (summary.Result, error) {
		g.entered <- call
		if honourCtx {
			select {
			case <-g.open:
			case <-ctx.Done():
				return summary.Result{}, ctx.Err()
			}
		} else {
			<-g.open
		}
		return countingResult(req), nil
	}
}

// hierConfig is arc-reactor's configuration with summaries on, no
// cool-down after failures, and loads that wait for a stale summary's
// regeneration as long as it takes (a LoadGrace of a minute), so that tests
// with a fast summarizer see arc-reactor's behaviour deterministically.
// Tests of slow folds set a short LoadGrace or FoldWait themselves.
func hierConfig() memory.Config {
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	cfg.FailureCooldown, cfg.MaxFailureCooldown = 0, 0
	cfg.LoadGrace = time.Minute
	return cfg
}

// waits returns cfg with the given LoadGrace and FoldWait (0: unchanged).
func waits(cfg memory.Config, loadGrace, foldWait time.Duration) memory.Config {
	if loadGrace > 0 {
		cfg.LoadGrace = loadGrace
	}
	if foldWait > 0 {
		cfg.FoldWait = foldWait
	}
	return cfg
}

type fixture struct {
	mgr   *memory.Manager
	store memory.MessageStore
	sums  summary.Store
	svc   *fakeSummarizer
}

// newFixture builds a manager over fresh in-memory stores and the fake
// summarizer; opts come after the fixture's own.
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

// blockWith makes the fixture's summarizer wait on a new gate, released
// when the test ends (before the manager is closed).
func (f *fixture) blockWith(t *testing.T, honourCtx bool) *gate {
	g := newGate()
	f.svc.set(g.summarizer(honourCtx))
	t.Cleanup(func() {
		g.release()
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		_ = f.mgr.Flush(ctx)
	})
	return g
}

// seed stores turns user/assistant pairs "u1"/"a1", "u2"/"a2", ... directly
// in the store (no background folds).
func seed(t *testing.T, ms memory.MessageStore, session, user string, turns int) {
	t.Helper()
	seedTurns(t, ms, session, user, "", 1, turns)
}

// seedTurns stores the pairs prefix+"u<i>"/prefix+"a<i>" for i in
// [from, to] directly in the store, creating the session for user first
// when it does not exist (store appends never create one).
func seedTurns(t *testing.T, ms memory.MessageStore, session, user, prefix string, from, to int) {
	t.Helper()
	if err := ms.Create(context.Background(), session, user); err != nil && !errors.Is(err, store.ErrSessionExists) {
		t.Fatal(err)
	}
	for i := from; i <= to; i++ {
		_, err := ms.Append(context.Background(), session, user,
			store.Message{Role: store.RoleUser, Content: fmt.Sprintf("%su%d", prefix, i)},
			store.Message{Role: store.RoleAssistant, Content: fmt.Sprintf("%sa%d", prefix, i)})
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

func storedContents(msgs []store.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Content
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

func seqStrings(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("u%d", i), fmt.Sprintf("a%d", i))
	}
	return out
}

// mustMessages returns every stored message of the session after afterSeq.
func mustMessages(t *testing.T, mgr *memory.Manager, session, user string, afterSeq int64) []store.Message {
	t.Helper()
	msgs, err := mgr.Messages(context.Background(), session, user, afterSeq, 0)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}
