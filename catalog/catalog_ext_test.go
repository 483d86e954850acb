package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"go.uber.org/goleak"

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/catalog/catalogtest"
	"github.com/strata-go/strata/internal/testutil"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

func memEnv() catalogtest.Env {
	return catalogtest.Env{Store: memory.NewInMemoryStore(), Summaries: summary.NewInMemoryStore(0), Index: catalog.NewMemoryIndex()}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func save(t *testing.T, mgr *memory.Manager, sid, uid, u, a string) {
	t.Helper()
	if err := mgr.SaveTurn(context.Background(), sid, uid, u, a); err != nil {
		t.Fatal(err)
	}
}

func TestNewRequiresManagerAndIndex(t *testing.T) {
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), memory.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	if _, err := catalog.New(nil, catalog.NewMemoryIndex()); err == nil {
		t.Error("New without manager succeeded")
	}
	if _, err := catalog.New(mgr, nil); err == nil {
		t.Error("New without index succeeded")
	}
}

// A catalogue built over a manager (New subscribes it) hears nothing of
// what the manager did before, and everything after; the deprecated
// Observers adds no second subscription.
func TestObserversBindLate(t *testing.T) {
	ctx := context.Background()
	cfg := catalogtest.FoldConfig()
	env := memEnv()
	// The deprecated wiring still builds, and adds nothing.
	mgr, err := memory.NewManager(env.Store, cfg, append(catalog.Observers(nil),
		memory.WithSummaries(env.Summaries, summary.NewExtractiveService()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	for i := range 4 { // folds with no catalogue bound yet: nothing happens
		save(t, mgr, "early", "u", fmt.Sprintf("Question %d about my blender refund.", i), "Answer.")
	}
	if err := mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mgr.DeleteSession(ctx, "early", "u"); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New(mgr, env.Index)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	for i := range 4 {
		save(t, mgr, "late", "u", fmt.Sprintf("Question %d about my Tokyo trip.", i), "Answer.")
	}
	catalogtest.Flush(t, ctx, mgr, cat)
	if d, _ := env.Index.Get(ctx, "late", "u"); d == nil || d.Source != catalog.SourceSummary {
		t.Errorf("fold after binding not indexed: %+v", d)
	}
	if err := mgr.DeleteSession(ctx, "late", "u"); err != nil {
		t.Fatal(err)
	}
	if d, _ := env.Index.Get(ctx, "late", "u"); d != nil {
		t.Errorf("delete after binding not forwarded: %+v", d)
	}
	// A nil catalogue's observers do nothing.
	var none *catalog.Catalog
	none.Folded(ctx, memory.FoldEvent{SessionID: "x", UserID: "u"})
	none.Deleted(ctx, "x")
}

// A model-written title replaces the offline one; when the model fails the
// offline title is used and the model is asked again at the next refresh,
// and not again once nothing changed.
func TestWithTitleModel(t *testing.T) {
	ctx := context.Background()
	m := &scriptedLLM{reply: "Blender refund", err: errors.New("model down")}
	env := memEnv()
	mgr, cat := catalogtest.Open(t, env, memory.DefaultConfig(), catalog.WithTitleModel(m), catalog.WithLogger(quietLogger()))
	save(t, mgr, "s", "u", "My blender arrived broken, can I get a refund?", "Yes.")
	if _, err := cat.Reindex(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	d, _ := env.Index.Get(ctx, "s", "u")
	if d == nil || d.Title != "My blender arrived broken, can I get a refund" {
		t.Fatalf("offline fallback: %+v", d)
	}
	m.set("Blender refund", nil)
	save(t, mgr, "s", "u", "It is the blue one.", "Noted.")
	save(t, mgr, "s", "u", "The blender, I mean.", "Noted.") // grew from 2 to 6 messages: stale
	if n, err := cat.Reindex(ctx, "u"); err != nil || n != 1 {
		t.Fatalf("Reindex = %d, %v", n, err)
	}
	if d, _ = env.Index.Get(ctx, "s", "u"); d.Title != "Blender refund" {
		t.Fatalf("after the model recovered: %q", d.Title)
	}
	n := m.numCalls()
	for range 2 {
		save(t, mgr, "s", "u", "Any news about the blender refund?", "Not yet.")
	}
	if _, err := cat.Reindex(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if d, _ = env.Index.Get(ctx, "s", "u"); d.MessageCount != 10 || d.Title != "Blender refund" {
		t.Errorf("after more messages: %d messages, title %q", d.MessageCount, d.Title)
	}
	if m.numCalls() != n {
		t.Error("the model was asked again although the focus did not change")
	}
}

// scriptedLLM is an llms.Model that returns reply (or err) and counts
// calls.
type scriptedLLM struct {
	mu    sync.Mutex
	calls int
	reply string
	err   error
}

func (m *scriptedLLM) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.err != nil {
		return nil, m.err
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: m.reply}}}, nil
}

func (m *scriptedLLM) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

func (m *scriptedLLM) set(reply string, err error) {
	m.mu.Lock()
	m.reply, m.err = reply, err
	m.mu.Unlock()
}

func (m *scriptedLLM) numCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// blockingEmbedder blocks document embeddings until released; with
// ignoreCtx it does not even stop when its context ends.
type blockingEmbedder struct {
	catalog.Embedder
	release   chan struct{}
	entered   chan struct{}
	once      sync.Once
	ignoreCtx bool
}

func newBlocking(ignoreCtx bool) *blockingEmbedder {
	return &blockingEmbedder{Embedder: catalog.NewLexicalEmbedder(0), release: make(chan struct{}),
		entered: make(chan struct{}), ignoreCtx: ignoreCtx}
}

func (e *blockingEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	e.once.Do(func() { close(e.entered) })
	if e.ignoreCtx {
		<-e.release
	} else {
		select {
		case <-e.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return e.Embedder.EmbedDocuments(ctx, texts)
}

func (e *blockingEmbedder) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-e.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no refresh reached the embedder")
	}
}

// Titles and embeddings are made in the background: a stuck embedder never
// delays a save or a load.
func TestRefreshIsOffTheReplyPath(t *testing.T) {
	ctx := context.Background()
	emb := newBlocking(false)
	env := memEnv()
	cfg := memory.DefaultConfig()
	cfg.Enabled, cfg.TriggerMessageCount, cfg.RecentMessageCount = true, 4, 2
	mgr, cat := catalogtest.Open(t, env, cfg, catalog.WithEmbedder(emb, "blocking"))
	for i := range 3 {
		save(t, mgr, "s", "u", fmt.Sprintf("Question %d about my blender refund.", i), "Answer.")
	}
	emb.waitEntered(t)
	// The refresh is stuck in the embedder; the conversation goes on.
	done := make(chan error, 1)
	go func() {
		for i := 3; i < 6; i++ {
			if err := mgr.SaveTurn(ctx, "s", "u", fmt.Sprintf("Question %d.", i), "Answer."); err != nil {
				done <- err
				return
			}
			if _, err := mgr.LoadHistory(ctx, "s", "u"); err != nil {
				done <- err
				return
			}
		}
		done <- mgr.Flush(ctx)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("saves, loads or the manager's flush wait for the embedder")
	}
	close(emb.release)
	catalogtest.Flush(t, ctx, mgr, cat)
	d, _ := env.Index.Get(ctx, "s", "u")
	sum, _ := mgr.Summary(ctx, "s", "u")
	if d == nil || len(d.Embedding) == 0 || sum == nil || d.SourceSeq != sum.UpToSeq {
		t.Errorf("not indexed up to the newest summary after the embedder was released: %+v (summary %+v)", d, sum)
	}
}

// Close returns within its deadline even when a refresh ignores
// cancellation, says so, and the abandoned refresh writes nothing when it
// finally returns. Reads keep working after Close.
func TestCloseDeadline(t *testing.T) {
	ctx := context.Background()
	emb := newBlocking(true)
	env := memEnv()
	mgr, err := memory.NewManager(env.Store, memory.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	cat, err := catalog.New(mgr, env.Index, catalog.WithEmbedder(emb, "stuck"),
		catalog.WithTimeouts(time.Minute, 100*time.Millisecond), catalog.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	save(t, mgr, "s", "u", "My blender arrived broken.", "Sorry.")
	if _, err := cat.List(ctx, "u", 0, 0); err != nil { // schedules the refresh
		t.Fatal(err)
	}
	emb.waitEntered(t)
	// Close returns while the refresh is still stuck in the embedder
	// (released only afterwards), and says so.
	closed := make(chan error, 1)
	go func() { closed <- cat.Close() }()
	select {
	case err = <-closed:
	case <-time.After(time.Minute): // a hang guard, far above the 100ms deadline
		t.Fatal("Close waits for a refresh that ignores cancellation")
	}
	if err == nil {
		t.Error("Close reported no abandoned refresh")
	}
	close(emb.release)
	// Flush returns once the abandoned refresh has returned, whatever it
	// wrote on its way out.
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := cat.Flush(fctx); err != nil {
		t.Fatalf("the abandoned refresh never returned: %v", err)
	}
	if d, _ := env.Index.Get(ctx, "s", "u"); d != nil {
		t.Errorf("an abandoned refresh wrote after Close: %+v", d)
	}
	if err := cat.Close(); err != nil && !strings.Contains(err.Error(), "still running") {
		t.Errorf("second Close: %v", err)
	}
	if pg, err := cat.List(ctx, "u", 0, 0); err != nil || pg.Total != 1 {
		t.Errorf("List after Close: %+v, %v", pg, err)
	}
}

// After the catalogue and the manager are closed, no goroutine is left.
// The gRPC connection of TestGoogleAIEmbedderRequests' client is not
// theirs: langchaingo's googleai.Close leaves it retrying in the
// background, spawning goroutines after this test began (under go test
// -count=N, in its next runs), so gRPC's goroutines are not counted.
func TestNoGoroutineLeak(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc.(*addrConn).connect"))
	ctx := context.Background()
	env := memEnv()
	mgr, err := memory.NewManager(env.Store, catalogtest.FoldConfig(),
		memory.WithSummaries(env.Summaries, summary.NewExtractiveService()))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New(mgr, env.Index)
	if err != nil {
		t.Fatal(err)
	}
	for s := range 5 {
		for i := range 5 {
			save(t, mgr, fmt.Sprintf("s%d", s), "u", fmt.Sprintf("Question %d about topic %d.", i, s), "Answer.")
		}
	}
	if _, err := cat.List(ctx, "u", 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.Search(ctx, "u", "topic", 3); err != nil {
		t.Fatal(err)
	}
	// Closed while folds and refreshes may still be running.
	if err := cat.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Close(); err != nil {
		t.Fatal(err)
	}
}

// An index that does not see sessions keeps what it was told: when it
// misses a delete (the session deleted in the store, behind the manager's
// back), Search and Title still answer from the manager, and Search does
// not delete anything.
func TestUnwiredIndexIsRechecked(t *testing.T) {
	ctx := context.Background()
	env := memEnv()
	mgr, err := memory.NewManager(env.Store, memory.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	cat, err := catalog.New(mgr, env.Index)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	save(t, mgr, "gone", "u", "My blender arrived broken, I want a refund.", "Sorry.")
	save(t, mgr, "kept", "u", "My toaster arrived broken, I want a refund.", "Sorry.")
	if n, err := cat.Reindex(ctx, "u"); err != nil || n != 2 {
		t.Fatalf("Reindex = %d, %v", n, err)
	}
	if err := env.Store.Delete(ctx, "gone", "u"); err != nil { // no delete event
		t.Fatal(err)
	}
	res, err := cat.Search(ctx, "u", "broken blender refund", 5)
	if err != nil || len(res.Matches) != 1 || res.Matches[0].SessionID != "kept" {
		t.Errorf("Search = %+v, %v", res, err)
	}
	if _, err := cat.Title(ctx, "gone", "u"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Title of the deleted session = %v, want ErrNotFound", err)
	}
	if d, _ := env.Index.Get(ctx, "gone", "u"); d == nil {
		t.Error("Search acted on what it read: the stale document was deleted")
	}
}

// Vectors of another embedder are never compared with the query's; List
// re-embeds them in the background and Reindex at once.
func TestEmbedderChange(t *testing.T) {
	ctx := context.Background()
	env := memEnv()
	mgr, old := catalogtest.Open(t, env, memory.DefaultConfig())
	save(t, mgr, "a", "u", "Planning a trip to Tokyo in April.", "Nice.")
	save(t, mgr, "b", "u", "My blender arrived broken.", "Sorry.")
	if n, err := old.Reindex(ctx, "u"); err != nil || n != 2 {
		t.Fatalf("Reindex = %d, %v", n, err)
	}
	cur, err := catalog.New(mgr, env.Index, catalog.WithEmbedder(catalog.NewLexicalEmbedder(256), ""))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	if res, err := cur.Search(ctx, "u", "Tokyo trip", 5); err != nil || len(res.Matches) != 0 {
		t.Fatalf("vectors of another model were compared: %+v, %v", res, err)
	}
	if _, err := cur.List(ctx, "u", 10, 0); err != nil {
		t.Fatal(err)
	}
	if err := cur.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if res, _ := cur.Search(ctx, "u", "Tokyo trip", 5); res.Best == nil || res.Best.SessionID != "a" {
		t.Fatalf("after the background re-embedding: %+v", res)
	}
	if d, _ := env.Index.Get(ctx, "a", "u"); d == nil || d.Model != "strata-lexical-v1-256" || len(d.Embedding) != 256 {
		t.Errorf("re-embedded document: %+v", d)
	}
	if n, err := cur.Reindex(ctx, "u"); err != nil || n != 0 {
		t.Errorf("Reindex after List = %d, %v; want nothing left", n, err)
	}
	if n, err := old.Reindex(ctx, "u"); err != nil || n != 2 {
		t.Errorf("Reindex back to the first model = %d, %v", n, err)
	}
	// Without an embedder, titles are kept and search finds nothing.
	none, err := catalog.New(mgr, catalog.NewMemoryIndex(), catalog.WithEmbedder(nil, "ignored"))
	if err != nil {
		t.Fatal(err)
	}
	defer none.Close()
	if n, err := none.Reindex(ctx, "u"); err != nil || n != 2 {
		t.Errorf("Reindex without embedder = %d, %v", n, err)
	}
	if title, err := none.Title(ctx, "a", "u"); err != nil || title != "Planning a trip to Tokyo in April" {
		t.Errorf("Title without embedder = %q, %v", title, err)
	}
	if res, err := none.Search(ctx, "u", "Tokyo", 5); err != nil || len(res.Matches) != 0 {
		t.Errorf("Search without embedder = %+v, %v", res, err)
	}
}

// Refreshes of one session coalesce: a fold during a refresh runs it once
// more, so the newest summary is always indexed.
func TestRefreshesCoalesce(t *testing.T) {
	ctx := context.Background()
	emb := newBlocking(false)
	env := memEnv()
	cfg := memory.DefaultConfig()
	cfg.Enabled, cfg.TriggerMessageCount, cfg.RecentMessageCount = true, 4, 2
	mgr, cat := catalogtest.Open(t, env, cfg, catalog.WithEmbedder(emb, "blocking"))
	for i := range 3 {
		save(t, mgr, "s", "u", fmt.Sprintf("Question %d about my blender refund.", i), "Answer.")
	}
	emb.waitEntered(t)
	for i := 3; i < 12; i++ { // more folds while the first refresh is stuck
		save(t, mgr, "s", "u", fmt.Sprintf("Question %d about the Tokyo trip.", i), "Answer.")
		if _, err := mgr.LoadHistory(ctx, "s", "u"); err != nil {
			t.Fatal(err)
		}
	}
	if err := mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	close(emb.release)
	if err := cat.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	d, _ := env.Index.Get(ctx, "s", "u")
	sum, _ := mgr.Summary(ctx, "s", "u")
	if d == nil || sum == nil || d.SourceSeq != sum.UpToSeq || !strings.Contains(d.Text, "Tokyo") {
		t.Errorf("document %+v is not the newest summary's (%+v)", d, sum)
	}
}

func TestMemoryIndexConcurrency(t *testing.T) {
	ctx := context.Background()
	idx := catalog.NewMemoryIndex()
	lex := catalog.NewLexicalEmbedder(0)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				text := fmt.Sprintf("worker %d topic %d", w, i%5)
				v, _ := lex.EmbedQuery(ctx, text)
				sid := fmt.Sprintf("s%d", i%10)
				_ = idx.Upsert(ctx, catalog.Doc{SessionID: sid, UserID: "u", Source: catalog.SourceTurns,
					SourceSeq: int64(i), Text: text, Embedding: v, Model: "m"})
				if _, err := idx.Search(ctx, catalog.Query{UserID: "u", Vector: v, Model: "m", Limit: 3}); err != nil {
					t.Error(err)
				}
				if i%7 == 0 {
					_ = idx.SetTitle(ctx, sid, "u", "Pinned")
				}
				_, _ = idx.Get(ctx, "s1", "u")
				if i%17 == 0 {
					_ = idx.Delete(ctx, "s2")
				}
			}
		}()
	}
	wg.Wait()
	ms, err := idx.Search(ctx, catalog.Query{UserID: "u", Vector: []float32{1}, Model: "none"})
	if err != nil || len(ms) != 0 {
		t.Errorf("search of an unknown model: %+v, %v", ms, err)
	}
}

// The package keeps a lean API: at most 35 exported identifiers (funcs,
// types, consts, vars and methods of exported types), every one of them
// documented.
func TestExportedAPI(t *testing.T) {
	testutil.CheckExports(t, ".", 35)
}

// The keywords of a long session come from its first messages and from the
// newest ones, which its summary does not cover yet.
func TestLongSessionKeywords(t *testing.T) {
	ctx := context.Background()
	env := memEnv()
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	mgr, cat := catalogtest.Open(t, env, cfg)
	for i := range 210 {
		save(t, mgr, "long", "u", fmt.Sprintf("Blender question %d.", i), "Blender answer.")
	}
	save(t, mgr, "long", "u", "Finally, what about the zeppelin museum?", "The zeppelin museum is in Friedrichshafen.")
	catalogtest.Flush(t, ctx, mgr, cat)
	if _, err := cat.Reindex(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	d, _ := env.Index.Get(ctx, "long", "u")
	if d == nil || d.Source != catalog.SourceSummary {
		t.Fatalf("document: %+v", d)
	}
	_, kw, ok := strings.Cut(d.Text, "\nKeywords: ")
	if !ok || !strings.Contains(kw, "zeppelin") || !strings.Contains(kw, "blender") {
		t.Errorf("keywords %q miss the newest or the first messages", kw)
	}
}

// plainStore hides the optional capabilities (participants among them) of
// the store it wraps.
type plainStore struct{ memory.MessageStore }

// Over a message store that records no participants, shared sessions are
// listed and found for the configured viewers only, never for every user.
func TestSharedSessionsWithoutParticipants(t *testing.T) {
	ctx := context.Background()
	env := memEnv()
	env.Store = plainStore{env.Store}
	cfg := memory.DefaultConfig()
	cfg.SharedSessionPrefixes = []string{"slack-"}
	cfg.SharedSessionViewers = []string{"admin"}
	mgr, cat := catalogtest.Open(t, env, cfg)
	save(t, mgr, "slack-T1", "alice", "When is the rocket launch rehearsal?", "Thursday.")
	for user, want := range map[string]int{"alice": 0, "bob": 0, "admin": 1} {
		pg, err := cat.List(ctx, user, 0, 0)
		if err != nil || pg.Total != want || len(pg.Sessions) != want {
			t.Errorf("%s lists %+v, %v; want %d sessions", user, pg, err, want)
		}
		if _, err := cat.Reindex(ctx, user); err != nil {
			t.Fatal(err)
		}
		res, err := cat.Search(ctx, user, "rocket launch rehearsal", 5)
		if err != nil || len(res.Matches) != want {
			t.Errorf("%s finds %+v, %v; want %d matches", user, res.Matches, err, want)
		}
	}
}
