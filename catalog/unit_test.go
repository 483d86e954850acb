package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/catalog/catalogtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

func TestLexicalEmbedder(t *testing.T) {
	ctx := context.Background()
	e := catalog.NewLexicalEmbedder(0)
	if e.Dims() != catalog.DefaultLexicalDims || e.Model() != "strata-lexical-v1-1024" {
		t.Fatalf("dims %d model %q", e.Dims(), e.Model())
	}
	a, _ := e.EmbedQuery(ctx, "I painted the lake sunrise; painting relaxes me.")
	b, _ := e.EmbedQuery(ctx, "I painted the lake sunrise; painting relaxes me.")
	docs, _ := e.EmbedDocuments(ctx, []string{"I painted the lake sunrise; painting relaxes me.", ""})
	var norm float64
	for i := range a {
		if a[i] != b[i] || a[i] != docs[0][i] {
			t.Fatal("not deterministic")
		}
		norm += float64(a[i]) * float64(a[i])
	}
	if math.Abs(norm-1) > 1e-5 {
		t.Errorf("norm² = %v, want 1", norm)
	}
	for _, x := range docs[1] {
		if x != 0 {
			t.Fatal("the empty text has a non-zero vector")
		}
	}
	// Inflections meet; unrelated words do not.
	q, _ := e.EmbedQuery(ctx, "paintings of lakes")
	far, _ := e.EmbedQuery(ctx, "tax return deadline")
	if s := catalog.Cosine(q, a); s < 0.4 {
		t.Errorf("similar texts: cosine %.3f", s)
	}
	if s := catalog.Cosine(far, a); math.Abs(s) > 0.1 {
		t.Errorf("unrelated texts: cosine %.3f", s)
	}
	if _, err := e.EmbedDocuments(canceled(), []string{"x"}); err == nil {
		t.Error("no error on a cancelled context")
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestTerms(t *testing.T) {
	cases := map[string]string{
		"Hey! I'm so excited, we talked about the Paintings":  "excit paint",
		"The refunds were refunded; refunding takes 5 days.":  "refund refund refund day",
		"Caroline's stories, studies and studied parties":     "carolin story study study party",
		"Let's chat about the conversation summary and title": "",
		"Stopped, running, café crème":                        "stop run café crème",
	}
	for in, want := range cases {
		if got := strings.Join(catalog.Terms(in), " "); got != want {
			t.Errorf("Terms(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCosine(t *testing.T) {
	if c := catalog.Cosine([]float32{1, 2}, []float32{2, 4}); math.Abs(c-1) > 1e-9 {
		t.Errorf("parallel: %v", c)
	}
	if c := catalog.Cosine([]float32{1, 0}, []float32{0, 1}); c != 0 {
		t.Errorf("orthogonal: %v", c)
	}
	for _, c := range []float64{
		catalog.Cosine(nil, nil), catalog.Cosine([]float32{1}, []float32{1, 0}), catalog.Cosine([]float32{0, 0}, []float32{1, 0}),
	} {
		if c != 0 {
			t.Errorf("degenerate: %v", c)
		}
	}
}

func TestRanking(t *testing.T) {
	now := time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC)
	r := catalog.Ranking{Weight: 0.8, HalfLife: 30 * 24 * time.Hour, Now: now}
	if got := r.Recency(now); got != 1 {
		t.Errorf("now: %v", got)
	}
	if got := r.Recency(now.Add(time.Hour)); got != 1 {
		t.Errorf("future: %v", got)
	}
	if got := r.Recency(now.Add(-30 * 24 * time.Hour)); math.Abs(got-0.5) > 1e-12 {
		t.Errorf("one half-life: %v", got)
	}
	if got := r.Recency(time.Time{}); got != 0 {
		t.Errorf("unknown: %v", got)
	}
	score, rec := r.Score(0.5, now.Add(-60*24*time.Hour))
	if math.Abs(rec-0.25) > 1e-12 || math.Abs(score-(0.8*0.5+0.2*0.25)) > 1e-12 {
		t.Errorf("score %v recency %v", score, rec)
	}
	if got := (catalog.Ranking{Weight: 1, Now: now}).Recency(now); got != 0 {
		t.Errorf("no half-life: %v", got)
	}
}

func TestDecide(t *testing.T) {
	m := func(id string, s float64) catalog.Match { return catalog.Match{SessionID: id, Score: s} }
	if w, amb := catalog.Decide(nil, 0.05); w != nil || amb {
		t.Errorf("none: %v %v", w, amb)
	}
	if w, amb := catalog.Decide([]catalog.Match{m("a", 0.1)}, 0.05); w == nil || w.SessionID != "a" || amb {
		t.Errorf("one: %v %v", w, amb)
	}
	if w, amb := catalog.Decide([]catalog.Match{m("a", 0.6), m("b", 0.5)}, 0.05); w == nil || w.SessionID != "a" || amb {
		t.Errorf("clear: %v %v", w, amb)
	}
	ms := []catalog.Match{m("a", 0.6), m("b", 0.58), m("c", 0.56), m("d", 0.3)}
	if w, amb := catalog.Decide(ms, 0.05); w != nil || !amb {
		t.Errorf("close: %v %v", w, amb)
	}
	if got := catalog.Contenders(ms, 0.05); len(got) != 3 {
		t.Errorf("contenders: %v", got)
	}
	if got := catalog.Contenders(nil, 0.05); got != nil {
		t.Errorf("contenders of nothing: %v", got)
	}
}

func TestCleanTitle(t *testing.T) {
	cases := map[string]string{
		`"Refund for a broken blender."`:                        "Refund for a broken blender",
		"Title: **Tokyo trip planning**\n\nextra":               "Tokyo trip planning",
		"  \n one two three four five six seven eight nine ten": "one two three four five six seven eight",
		"": "",
	}
	for in, want := range cases {
		if got := catalog.CleanTitle(in); got != want {
			t.Errorf("CleanTitle(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFingerprintAndJaccard(t *testing.T) {
	fp := catalog.Fingerprint("The blender refund: refund the blender, order #4417.")
	if fp != "4417 blender order refund" {
		t.Errorf("Fingerprint = %q", fp)
	}
	if n := len(strings.Fields(catalog.Fingerprint(strings.Repeat("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau ", 2)))); n != catalog.FingerprintSize {
		t.Errorf("fingerprint of %d terms", n)
	}
	if j := catalog.Jaccard("a b c", "b c d"); j != 0.5 {
		t.Errorf("Jaccard = %v", j)
	}
	if j := catalog.Jaccard("", ""); j != 1 {
		t.Errorf("Jaccard of empties = %v", j)
	}
	if j := catalog.Jaccard("a", ""); j != 0 {
		t.Errorf("Jaccard with an empty = %v", j)
	}
}

func TestKeywords(t *testing.T) {
	got := catalog.Keywords([]string{"We adopted a puppy. The puppy loves walks.", "Puppies need walks and a vet."}, 3)
	if got != "puppy, walks, adopted" {
		t.Errorf("Keywords = %q", got)
	}
}

func TestSupersedes(t *testing.T) {
	sum := func(seq int64) catalog.Doc { return catalog.Doc{Source: catalog.SourceSummary, SourceSeq: seq} }
	turns := func(seq int64) catalog.Doc { return catalog.Doc{Source: catalog.SourceTurns, SourceSeq: seq} }
	for _, c := range []struct {
		d, old catalog.Doc
		want   bool
	}{
		{sum(5), sum(4), true}, {sum(5), sum(5), true}, {sum(4), sum(5), false},
		{sum(1), turns(9), true}, {turns(9), sum(1), false}, {turns(3), turns(2), true},
	} {
		if got := c.d.Supersedes(c.old); got != c.want {
			t.Errorf("%+v supersedes %+v = %v", c.d, c.old, got)
		}
	}
}

func TestDefaultTitle(t *testing.T) {
	ctx := context.Background()
	got, _ := catalog.DefaultTitle(ctx, summary.Summary{}, []string{"Hi!", "Hello, I need to change my flight to Boston next week."})
	if got != "I need to change my flight to Boston next week" {
		t.Errorf("from turns: %q", got)
	}
	s := summary.Summary{Narrative: "Assistant: Tokyo is lovely in April. User: Which hotel in Shinjuku is close to the station? Assistant: The Keio Plaza."}
	if got, _ := catalog.DefaultTitle(ctx, s, []string{"My blender is broken."}); got != "Which hotel in Shinjuku is close to the station" {
		t.Errorf("from an outline narrative: %q", got)
	}
	s = summary.Summary{Narrative: "The user asked for a refund of a broken blender. It was approved."}
	if got, _ := catalog.DefaultTitle(ctx, s, nil); got != "The user asked for a refund of a broken blender" {
		t.Errorf("from a prose narrative: %q", got)
	}
	s = summary.Summary{Facts: []summary.Fact{{Key: "order_id", Value: "#4417"}}}
	if got, _ := catalog.DefaultTitle(ctx, s, nil); got != "Order id: #4417" {
		t.Errorf("from facts: %q", got)
	}
}

// recLLM is a scripted llms.Model that records its calls.
type recLLM struct {
	mu    sync.Mutex
	calls [][]llms.MessageContent
	reply string
	err   error
}

func (m *recLLM) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, msgs)
	if m.err != nil {
		return nil, m.err
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: m.reply}}}, nil
}

func (m *recLLM) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

func (m *recLLM) setErr(err error) {
	m.mu.Lock()
	m.err = err
	m.mu.Unlock()
}

func (m *recLLM) numCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.calls)
}

func TestLLMTitle(t *testing.T) {
	ctx := context.Background()
	m := &recLLM{reply: "Title: \"Refund for the broken blender from order 4417 and more words\"."}
	fn := catalog.LLMTitle(m)
	s := summary.Summary{Narrative: "User asked for a refund.", Facts: []summary.Fact{{Key: "order_id", Value: "#4417"}}}
	got, err := fn(ctx, s, []string{"first message"})
	if err != nil || got != "Refund for the broken blender from order 4417" {
		t.Fatalf("title %q, %v", got, err)
	}
	msgs := m.calls[0]
	if len(msgs) != 2 || msgs[0].Role != llms.ChatMessageTypeSystem || msgs[1].Role != llms.ChatMessageTypeHuman {
		t.Fatalf("messages %+v", msgs)
	}
	sys := msgs[0].Parts[0].(llms.TextContent).Text
	human := msgs[1].Parts[0].(llms.TextContent).Text
	if !strings.Contains(sys, "at most 8 words") || !strings.Contains(human, "- order_id: #4417") ||
		!strings.Contains(human, "User asked for a refund.") || strings.Contains(human, "first message") {
		t.Errorf("system %q\nhuman %q", sys, human)
	}
	// Without a summary the first user messages are sent.
	if _, err := fn(ctx, summary.Summary{}, []string{"Where is my parcel?"}); err != nil {
		t.Fatal(err)
	}
	if human := m.calls[1][1].Parts[0].(llms.TextContent).Text; human != "User: Where is my parcel?" {
		t.Errorf("turns input %q", human)
	}
	m.reply = "  "
	if _, err := fn(ctx, s, nil); err == nil {
		t.Error("an empty reply is not an error")
	}
	if _, err := fn(ctx, summary.Summary{}, nil); err == nil {
		t.Error("nothing to title is not an error")
	}
}

// An LLM title replaces the offline one; when the model fails the offline
// title is used and the model is tried again at the next refresh.
func TestCatalogWithLLMTitle(t *testing.T) {
	ctx := context.Background()
	m := &recLLM{reply: "Blender refund", err: errors.New("model down")}
	store, sums, idx := memory.NewInMemoryStore(), summary.NewInMemoryStore(0), catalog.NewMemoryIndex()
	cat := catalog.New(store, sums, idx, catalog.WithTitleFunc(catalog.LLMTitle(m)), catalog.WithLogger(quietLogger()))
	defer cat.Close()
	mgr := catalogtest.NewManager(t, catalogtest.Env{Store: store, Summaries: sums, Index: idx}, cat, memory.DefaultConfig())
	save(t, mgr, "s", "u", "My blender arrived broken, can I get a refund?", "Yes.")
	if err := cat.Refresh(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Get(ctx, "s")
	if d == nil || d.Title != "My blender arrived broken, can I get a refund" {
		t.Fatalf("offline fallback: %+v", d)
	}
	m.setErr(nil)
	if err := cat.Refresh(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if d, _ = idx.Get(ctx, "s"); d.Title != "Blender refund" {
		t.Fatalf("after the model recovered: %q", d.Title)
	}
	n := m.numCalls()
	if err := cat.Refresh(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if m.numCalls() != n {
		t.Error("the model was asked again although nothing changed")
	}
}

// blockingEmbedder blocks document embeddings until released.
type blockingEmbedder struct {
	release chan struct{}
	entered chan struct{}
	once    sync.Once
	lex     *catalog.LexicalEmbedder
}

func (e *blockingEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	e.once.Do(func() { close(e.entered) })
	select {
	case <-e.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return e.lex.EmbedDocuments(ctx, texts)
}

func (e *blockingEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	return e.lex.EmbedQuery(ctx, text)
}

// Titles and embeddings are made in the background: a stuck embedder never
// delays a save or a load.
func TestObserverIsOffTheReplyPath(t *testing.T) {
	ctx := context.Background()
	emb := &blockingEmbedder{release: make(chan struct{}), entered: make(chan struct{}), lex: catalog.NewLexicalEmbedder(0)}
	store, sums, idx := memory.NewInMemoryStore(), summary.NewInMemoryStore(0), catalog.NewMemoryIndex()
	cat := catalog.New(store, sums, idx, catalog.WithEmbedder(emb, "blocking"))
	defer cat.Close()
	cfg := memory.DefaultConfig()
	cfg.Enabled, cfg.TriggerMessageCount, cfg.RecentMessageCount = true, 4, 2
	mgr := catalogtest.NewManager(t, catalogtest.Env{Store: store, Summaries: sums, Index: idx}, cat, cfg)
	for i := range 3 {
		save(t, mgr, "s", "u", fmt.Sprintf("Question %d about my blender refund.", i), "Answer.")
	}
	select {
	case <-emb.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the observer never ran")
	}
	// The observer is stuck in the embedder; the conversation goes on.
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
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("saves and loads wait for the embedder")
	}
	close(emb.release)
	if err := mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if d, _ := idx.Get(ctx, "s"); d == nil || len(d.Embedding) == 0 {
		t.Errorf("not indexed after the embedder was released: %+v", d)
	}
}

// A store that cannot list sessions, with an index that cannot either.
type plainStore struct{ memory.MessageStore }

func TestListingUnsupported(t *testing.T) {
	cat := catalog.New(plainStore{memory.NewInMemoryStore()}, nil, catalog.NewMemoryIndex())
	defer cat.Close()
	if _, err := cat.List(context.Background(), "u", 10, 0); !errors.Is(err, catalog.ErrListingUnsupported) {
		t.Errorf("List = %v", err)
	}
}

// Vectors of another embedder are never compared with the query's; List
// re-embeds them in the background and Reindex at once.
func TestEmbedderChange(t *testing.T) {
	ctx := context.Background()
	store, sums, idx := memory.NewInMemoryStore(), summary.NewInMemoryStore(0), catalog.NewMemoryIndex()
	old := catalog.New(store, sums, idx)
	defer old.Close()
	mgr, err := memory.NewManager(store, memory.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	save(t, mgr, "a", "u", "Planning a trip to Tokyo in April.", "Nice.")
	save(t, mgr, "b", "u", "My blender arrived broken.", "Sorry.")
	for _, id := range []string{"a", "b"} {
		if err := old.Refresh(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	lex := catalog.NewLexicalEmbedder(256)
	cur := catalog.New(store, sums, idx, catalog.WithEmbedder(lex, lex.Model()))
	defer cur.Close()
	if ms, err := cur.Search(ctx, "u", "Tokyo trip", 5); err != nil || len(ms) != 0 {
		t.Fatalf("vectors of another model were compared: %+v, %v", ms, err)
	}
	if _, err := cur.List(ctx, "u", 10, 0); err != nil {
		t.Fatal(err)
	}
	if err := cur.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if ms, _ := cur.Search(ctx, "u", "Tokyo trip", 5); len(ms) != 1 || ms[0].SessionID != "a" {
		t.Fatalf("after the lazy re-embedding: %+v", ms)
	}
	if n, err := cur.Reindex(ctx, "u"); err != nil || n != 0 {
		t.Errorf("Reindex after List = %d, %v; want nothing left", n, err)
	}
	if n, err := old.Reindex(ctx, "u"); err != nil || n != 2 {
		t.Errorf("Reindex back to the first model = %d, %v", n, err)
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
				_ = idx.Upsert(ctx, catalog.Doc{SessionID: fmt.Sprintf("s%d", i%10), UserID: "u", Source: catalog.SourceTurns,
					SourceSeq: int64(i), Text: text, Embedding: v, Model: lex.Model()})
				if _, err := idx.Search(ctx, catalog.Query{UserID: "u", Vector: v, Model: lex.Model(), Limit: 3}); err != nil {
					t.Error(err)
				}
				_, _ = idx.Get(ctx, "s1")
				if i%17 == 0 {
					_ = idx.Delete(ctx, "s2")
				}
			}
		}()
	}
	wg.Wait()
	if idx.Len() > 10 {
		t.Errorf("%d documents", idx.Len())
	}
}
