// Package catalogtest is a conformance suite for the conversation catalogue:
// Run checks a catalog.Index together with the message and summary stores
// it serves (listing, pagination, user isolation, search filters and
// ranking, titles after folds, deleted sessions, failing embedders), so
// that the in-memory and the PostgreSQL implementations are held to the
// same tests.
package catalogtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// Env is what one test runs on: fresh, empty stores and index that belong
// together (the index lists and searches the sessions of Store).
type Env struct {
	Store     memory.MessageStore
	Summaries summary.Store
	Index     catalog.Index
}

// Run runs the suite; newEnv is called once per subtest.
func Run(t *testing.T, newEnv func(t *testing.T) Env) {
	t.Run("ListPaginationAndIsolation", func(t *testing.T) { testList(t, newEnv(t)) })
	t.Run("IndexContract", func(t *testing.T) { testIndexContract(t, newEnv(t)) })
	t.Run("SearchFiltersAndRanking", func(t *testing.T) { testSearch(t, newEnv(t)) })
	t.Run("TitlesFollowFolds", func(t *testing.T) { testTitles(t, newEnv(t)) })
	t.Run("DeletedSessionsDisappear", func(t *testing.T) { testDeleted(t, newEnv(t)) })
	t.Run("FailingEmbedderNeverBreaksConversation", func(t *testing.T) { testFailingEmbedder(t, newEnv(t)) })
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// foldConfig folds early: above 6 messages, keeping the last 2 verbatim.
func foldConfig() memory.Config {
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	cfg.TriggerMessageCount, cfg.RecentMessageCount = 6, 2
	return cfg
}

// NewManager returns a manager over env's stores with the extractive
// summarizer and cat's observer, closed when the test ends.
func NewManager(t *testing.T, env Env, cat *catalog.Catalog, cfg memory.Config) *memory.Manager {
	t.Helper()
	mgr, err := memory.NewManager(env.Store, cfg,
		memory.WithSummaries(env.Summaries, summary.NewExtractiveService()),
		memory.WithFoldObserver(cat.Observer()), memory.WithDeleteObserver(cat.DeleteObserver()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	return mgr
}

func newCatalog(t *testing.T, env Env, opts ...catalog.Option) *catalog.Catalog {
	t.Helper()
	opts = append([]catalog.Option{catalog.WithLogger(slog.New(slog.NewTextHandler(testWriter{t}, nil)))}, opts...)
	cat := catalog.New(env.Store, env.Summaries, env.Index, opts...)
	t.Cleanup(func() { _ = cat.Close() })
	return cat
}

// testWriter sends the catalog's log lines to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func flush(t *testing.T, ctx context.Context, mgr *memory.Manager, cat *catalog.Catalog) {
	t.Helper()
	if mgr != nil {
		if err := mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := cat.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func save(t *testing.T, ctx context.Context, mgr *memory.Manager, sid, uid, u, a string) {
	t.Helper()
	if err := mgr.SaveTurn(ctx, sid, uid, u, a); err != nil {
		t.Fatalf("SaveTurn(%s, %s): %v", sid, uid, err)
	}
}

func testList(t *testing.T, env Env) {
	ctx := ctxFor(t)
	cat := newCatalog(t, env)
	cfg := memory.DefaultConfig() // no folds: titles come from the first turns
	mgr, err := memory.NewManager(env.Store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })

	long := "Please help me get a refund for the blender I ordered last week, it arrived broken"
	for i := range 7 {
		save(t, ctx, mgr, fmt.Sprintf("alice-%d", i), "alice", fmt.Sprintf("Question number %d about my garden.", i), "Sure.")
		time.Sleep(2 * time.Millisecond) // distinct last activity
	}
	save(t, ctx, mgr, "alice-long", "alice", long, "")
	time.Sleep(2 * time.Millisecond)
	// A session without any user message.
	if _, err := env.Store.Append(ctx, "alice-silent", "alice", memory.Message{Role: memory.RoleAssistant, Content: "Welcome back!"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		save(t, ctx, mgr, fmt.Sprintf("bob-%d", i), "bob", "Bob's secret plans for the weekend.", "Noted.")
	}

	all, err := cat.List(ctx, "alice", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if all.Total != 9 || len(all.Sessions) != 9 {
		t.Fatalf("alice: total %d, %d sessions; want 9, 9", all.Total, len(all.Sessions))
	}
	wantOrder := []string{"alice-silent", "alice-long", "alice-6", "alice-5", "alice-4", "alice-3", "alice-2", "alice-1", "alice-0"}
	for i, e := range all.Sessions {
		if e.SessionID != wantOrder[i] {
			t.Fatalf("order: got %v, want %v", ids(all.Sessions), wantOrder)
		}
		if strings.HasPrefix(e.SessionID, "bob") {
			t.Fatalf("alice sees %s", e.SessionID)
		}
		if i > 0 && e.LastActivity.After(all.Sessions[i-1].LastActivity) {
			t.Errorf("%s is more recent than %s but listed after it", e.SessionID, all.Sessions[i-1].SessionID)
		}
	}
	byID := map[string]catalog.Entry{}
	for _, e := range all.Sessions {
		byID[e.SessionID] = e
	}
	if e := byID["alice-long"]; e.Preview != long[:50]+"..." || e.MessageCount != 1 {
		t.Errorf("alice-long: preview %q, %d messages", e.Preview, e.MessageCount)
	}
	if e := byID["alice-silent"]; e.Preview != "Empty conversation" || e.MessageCount != 1 || e.Title != "" {
		t.Errorf("alice-silent: preview %q, title %q, %d messages", e.Preview, e.Title, e.MessageCount)
	}
	if e := byID["alice-3"]; e.Preview != "Question number 3 about my garden." || e.MessageCount != 2 ||
		e.Title != "Question number 3 about my garden" || e.CreatedAt.IsZero() || e.LastActivity.IsZero() {
		t.Errorf("alice-3: %+v", e)
	}

	pages := []struct{ limit, offset, n int }{{3, 0, 3}, {3, 3, 3}, {3, 6, 3}, {3, 8, 1}, {3, 9, 0}, {3, 100, 0}, {4, -5, 4}, {0, 2, 7}}
	for _, p := range pages {
		pg, err := cat.List(ctx, "alice", p.limit, p.offset)
		if err != nil {
			t.Fatal(err)
		}
		if pg.Total != 9 || len(pg.Sessions) != p.n {
			t.Errorf("List(limit %d, offset %d): total %d, %d sessions; want 9, %d", p.limit, p.offset, pg.Total, len(pg.Sessions), p.n)
			continue
		}
		off := max(p.offset, 0)
		for i, e := range pg.Sessions {
			if e.SessionID != wantOrder[off+i] {
				t.Errorf("List(limit %d, offset %d)[%d] = %s, want %s", p.limit, p.offset, i, e.SessionID, wantOrder[off+i])
			}
		}
	}

	bob, err := cat.List(ctx, "bob", 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if bob.Total != 3 || len(bob.Sessions) != 3 {
		t.Fatalf("bob: total %d, %d sessions", bob.Total, len(bob.Sessions))
	}
	for _, e := range bob.Sessions {
		if !strings.HasPrefix(e.SessionID, "bob-") {
			t.Errorf("bob sees %s", e.SessionID)
		}
	}
	if nobody, err := cat.List(ctx, "carol", 10, 0); err != nil || nobody.Total != 0 || len(nobody.Sessions) != 0 {
		t.Errorf("carol: %+v, %v", nobody, err)
	}

	// The listing indexed the sessions in the background: titles now come
	// from the index, and the sessions can be searched.
	flush(t, ctx, nil, cat)
	again, err := cat.List(ctx, "alice", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range again.Sessions {
		if !e.Indexed {
			t.Errorf("%s not indexed after the lazy refresh", e.SessionID)
		}
	}
	ms, err := cat.Search(ctx, "alice", "refund for the broken blender", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].SessionID != "alice-long" {
		t.Errorf("search after lazy indexing: %+v", ms)
	}
	if ms, _ := cat.Search(ctx, "bob", "refund for the broken blender", 3); len(ms) != 0 {
		t.Errorf("bob finds alice's session: %+v", ms)
	}
}

func ids(es []catalog.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.SessionID
	}
	return out
}

func appendUser(t *testing.T, ctx context.Context, st memory.MessageStore, sid, uid, text string) {
	t.Helper()
	if _, err := st.Append(ctx, sid, uid, memory.Message{Role: memory.RoleUser, Content: text}); err != nil {
		t.Fatal(err)
	}
}

func vec(xs ...float32) []float32 { return xs }

func testIndexContract(t *testing.T, env Env) {
	ctx := ctxFor(t)
	idx := env.Index
	appendUser(t, ctx, env.Store, "s1", "alice", "hello")
	appendUser(t, ctx, env.Store, "s2", "bob", "hello")

	if d, err := idx.Get(ctx, "s1"); err != nil || d != nil {
		t.Fatalf("Get before Upsert = %+v, %v", d, err)
	}
	doc := catalog.Doc{SessionID: "s1", UserID: "alice", Title: "Refund", Fingerprint: "blender refund",
		Source: catalog.SourceSummary, SourceSeq: 10, MessageCount: 12,
		Text: "Title: Refund\nblender refund", Embedding: vec(1, 0, 0), Model: "m"}
	if err := idx.Upsert(ctx, doc); err != nil {
		t.Fatal(err)
	}
	got, err := idx.Get(ctx, "s1")
	if err != nil || got == nil {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if got.Title != "Refund" || got.Fingerprint != "blender refund" || got.Source != catalog.SourceSummary ||
		got.SourceSeq != 10 || got.MessageCount != 12 || got.Text != doc.Text || got.Model != "m" ||
		len(got.Embedding) != 3 || got.Embedding[0] != 1 || got.UserID != "alice" {
		t.Errorf("Get = %+v", got)
	}

	// Older and turns-based versions never replace it.
	older := doc
	older.Title, older.SourceSeq = "Older", 9
	turns := doc
	turns.Title, turns.Source, turns.SourceSeq = "Turns", catalog.SourceTurns, 99
	for _, d := range []catalog.Doc{older, turns} {
		if err := idx.Upsert(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := idx.Get(ctx, "s1"); got == nil || got.Title != "Refund" {
		t.Errorf("a superseded document replaced the stored one: %+v", got)
	}
	// A newer one does, and a document without embedding drops text and model.
	newer := doc
	newer.Title, newer.SourceSeq, newer.Text, newer.Embedding, newer.Model = "Newer", 11, "", nil, ""
	if err := idx.Upsert(ctx, newer); err != nil {
		t.Fatal(err)
	}
	if got, _ := idx.Get(ctx, "s1"); got == nil || got.Title != "Newer" || got.Text != "" || got.Model != "" || len(got.Embedding) != 0 {
		t.Errorf("after a newer upsert: %+v", got)
	}
	// An unknown session is not an error.
	if err := idx.Upsert(ctx, catalog.Doc{SessionID: "nope", UserID: "alice", Source: catalog.SourceTurns}); err != nil {
		t.Errorf("Upsert of an unknown session: %v", err)
	}
	if err := idx.Delete(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if got, err := idx.Get(ctx, "s1"); err != nil || got != nil {
		t.Errorf("Get after Delete = %+v, %v", got, err)
	}
	if err := idx.Delete(ctx, "never-there"); err != nil {
		t.Errorf("Delete of an unknown session: %v", err)
	}
}

func testSearch(t *testing.T, env Env) {
	ctx := ctxFor(t)
	idx := env.Index
	now := time.Now()
	type sess struct {
		id, user, model string
		v               []float32
	}
	sessions := []sess{
		{"old", "alice", "m", vec(1, 0, 0)},
		{"near", "alice", "m", vec(0.9, 0.1, 0)},
		{"far", "alice", "m", vec(0, 1, 0)},
		{"new", "alice", "m", vec(1, 0, 0)},
		{"other-model", "alice", "m2", vec(1, 0, 0)},
		{"other-dims", "alice", "m", vec(1, 0, 0, 0)},
		{"bobs", "bob", "m", vec(1, 0, 0)},
	}
	for _, s := range sessions {
		appendUser(t, ctx, env.Store, s.id, s.user, "text of "+s.id)
		tail, err := env.Store.Tail(ctx, s.id, 1)
		if err != nil {
			t.Fatal(err)
		}
		d := catalog.Doc{SessionID: s.id, UserID: s.user, Title: s.id, Source: catalog.SourceSummary,
			SourceSeq: 1, Text: "text of " + s.id, Embedding: s.v, Model: s.model,
			LastActivity: tail.Messages[0].CreatedAt}
		if err := idx.Upsert(ctx, d); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // "new" is clearly more recent than "old"
	}
	q := catalog.Query{UserID: "alice", Vector: vec(1, 0, 0), Model: "m", MinSimilarity: -1,
		Ranking: catalog.Ranking{Weight: 1, HalfLife: time.Hour, Now: now}}
	res, err := idx.Search(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	got := scoredIDs(res)
	// Similarity only: old and new tie at 1 (ties by session id), then near, then far.
	if strings.Join(got, ",") != "new,old,near,far" {
		t.Errorf("weight 1: %v", got)
	}
	for _, r := range res {
		if r.Doc.SessionID == "near" && (r.Similarity < 0.99 || r.Similarity > 0.995) {
			t.Errorf("near: similarity %.4f, want cos = 0.9939", r.Similarity)
		}
		if r.Doc.Text != "text of "+r.Doc.SessionID || r.Doc.Title != r.Doc.SessionID {
			t.Errorf("%s: text %q title %q", r.Doc.SessionID, r.Doc.Text, r.Doc.Title)
		}
	}
	// Recency decides between equal similarities: new before old.
	q.Ranking = catalog.Ranking{Weight: 0.5, HalfLife: 100 * time.Millisecond, Now: time.Now()}
	res, err = idx.Search(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if got := scoredIDs(res); len(got) < 2 || got[0] != "new" {
		t.Errorf("weight 0.5: %v", got)
	}
	for _, r := range res {
		want := 0.5*r.Similarity + 0.5*r.Recency
		if d := r.Score - want; d > 1e-6 || d < -1e-6 || r.Recency <= 0 || r.Recency > 1 {
			t.Errorf("%s: score %.6f recency %.6f, want score %.6f", r.Doc.SessionID, r.Score, r.Recency, want)
		}
	}
	// Floor and limit.
	q.Ranking, q.MinSimilarity, q.Limit = catalog.Ranking{Weight: 1, Now: now}, 0.5, 2
	res, err = idx.Search(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if got := scoredIDs(res); strings.Join(got, ",") != "new,old" {
		t.Errorf("floor 0.5, limit 2: %v", got)
	}
	q.Limit = 0
	res, _ = idx.Search(ctx, q)
	if got := scoredIDs(res); strings.Join(got, ",") != "new,old,near" {
		t.Errorf("floor 0.5: %v", got)
	}
	// Other models and dimensions are invisible; so are other users.
	res, _ = idx.Search(ctx, catalog.Query{UserID: "alice", Vector: vec(1, 0, 0), Model: "m2", Ranking: catalog.Ranking{Weight: 1}})
	if got := scoredIDs(res); strings.Join(got, ",") != "other-model" {
		t.Errorf("model m2: %v", got)
	}
	res, _ = idx.Search(ctx, catalog.Query{UserID: "alice", Vector: vec(1, 0, 0, 0), Model: "m", Ranking: catalog.Ranking{Weight: 1}})
	if got := scoredIDs(res); strings.Join(got, ",") != "other-dims" {
		t.Errorf("4 dims: %v", got)
	}
	res, _ = idx.Search(ctx, catalog.Query{UserID: "bob", Vector: vec(1, 0, 0), Model: "m", Ranking: catalog.Ranking{Weight: 1}})
	if got := scoredIDs(res); strings.Join(got, ",") != "bobs" {
		t.Errorf("bob: %v", got)
	}
	if res, _ := idx.Search(ctx, catalog.Query{UserID: "carol", Vector: vec(1, 0, 0), Model: "m"}); len(res) != 0 {
		t.Errorf("carol: %v", scoredIDs(res))
	}
}

func scoredIDs(res []catalog.Scored) []string {
	out := make([]string, len(res))
	for i, r := range res {
		out[i] = r.Doc.SessionID
	}
	return out
}

// Refund and travel turns for the title tests.
var (
	refundTurns = [][2]string{
		{"My blender from order #4417 arrived broken and I want a refund.", "Sorry about the broken blender, I can refund order #4417."},
		{"The blender refund should be $89.99, the full price of the blender.", "Yes, the refund for the blender is $89.99."},
		{"Do I need to send the broken blender back for the refund?", "No need to return the blender, the refund goes through without it."},
		{"How long does the blender refund take to reach my card?", "The refund for the blender reaches your card in five days."},
	}
	refundMore  = [2]string{"Will I get an email when the blender refund is done?", "Yes, you get an email once the blender refund is processed."}
	travelTurns = [][2]string{
		{"Now I am planning a trip to Tokyo in April with my sister.", "Tokyo in April is lovely, cherry blossoms everywhere."},
		{"Which neighbourhood in Tokyo should we stay in for the trip?", "For a first Tokyo trip, stay in Shinjuku or Shibuya."},
		{"Can you find flights to Tokyo from Chicago for the trip?", "There are direct flights to Tokyo Haneda from Chicago."},
		{"What should we see in Tokyo besides the cherry blossoms?", "Visit the Tokyo temples in Asakusa and the Tsukiji market."},
		{"Is a rail pass worth it for a Tokyo trip with day trips to Kyoto?", "A rail pass pays off for Tokyo to Kyoto day trips."},
		{"How much cash should we bring to Tokyo for the trip?", "Bring some yen cash for Tokyo, many small shops take only cash."},
	}
)

func testTitles(t *testing.T, env Env) {
	ctx := ctxFor(t)
	cat := newCatalog(t, env)
	mgr := NewManager(t, env, cat, foldConfig())
	const sid, uid = "chat", "alice"
	for _, tr := range refundTurns {
		save(t, ctx, mgr, sid, uid, tr[0], tr[1])
	}
	flush(t, ctx, mgr, cat)
	d, err := env.Index.Get(ctx, sid)
	if err != nil || d == nil {
		t.Fatalf("no document after the first folds: %+v, %v", d, err)
	}
	if d.Source != catalog.SourceSummary || d.Title == "" || d.Model != cat.Model() || len(d.Embedding) == 0 ||
		!strings.Contains(d.Text, "Title: "+d.Title) || !strings.Contains(d.Text, "Conversation Summary:") {
		t.Fatalf("document after folds: %+v", d)
	}
	first := d.Title
	if !strings.Contains(strings.ToLower(first), "blender") && !strings.Contains(strings.ToLower(first), "refund") {
		t.Errorf("title %q does not name the topic", first)
	}
	if s, _ := env.Summaries.Get(ctx, sid); s == nil || s.Title != first {
		t.Errorf("summary title = %+v, want %q", s, first)
	}

	// A small update on the same topic keeps the title.
	save(t, ctx, mgr, sid, uid, refundMore[0], refundMore[1])
	flush(t, ctx, mgr, cat)
	d2, _ := env.Index.Get(ctx, sid)
	if d2 == nil || d2.SourceSeq <= d.SourceSeq {
		t.Fatalf("no newer document after another fold: %+v", d2)
	}
	if d2.Title != first {
		t.Errorf("title changed on a small update: %q -> %q (fingerprints %q vs %q)", first, d2.Title, d.Fingerprint, d2.Fingerprint)
	}

	// A topic switch changes it.
	for _, tr := range travelTurns {
		save(t, ctx, mgr, sid, uid, tr[0], tr[1])
	}
	flush(t, ctx, mgr, cat)
	d3, _ := env.Index.Get(ctx, sid)
	if d3 == nil || d3.Title == first {
		t.Fatalf("title kept after a topic switch: %+v", d3)
	}
	t.Logf("title %q (fingerprint %q) -> small update: kept -> topic switch: %q (fingerprint %q, Jaccard %.2f)",
		first, d.Fingerprint, d3.Title, d3.Fingerprint, catalog.Jaccard(d.Fingerprint, d3.Fingerprint))
	if !strings.Contains(strings.ToLower(d3.Title+" "+d3.Fingerprint), "tokyo") {
		t.Errorf("new title %q (fingerprint %q) does not follow the new topic", d3.Title, d3.Fingerprint)
	}
	if s, _ := env.Summaries.Get(ctx, sid); s == nil || s.Title != d3.Title {
		t.Errorf("summary title = %+v, want %q", s, d3.Title)
	}
	// And the conversation is found by both topics, by its owner only.
	for _, query := range []string{"the chat about the Tokyo trip", "blender refund"} {
		ms, err := cat.Search(ctx, uid, query, 5)
		if err != nil {
			t.Fatal(err)
		}
		if w, _ := cat.Decide(ms); w == nil || w.SessionID != sid || w.Title != d3.Title || w.Text == "" {
			t.Errorf("Search(%q) = %+v", query, ms)
		}
		if ms, _ := cat.Search(ctx, "mallory", query, 5); len(ms) != 0 {
			t.Errorf("another user finds the session: %+v", ms)
		}
	}
}

func testDeleted(t *testing.T, env Env) {
	ctx := ctxFor(t)
	cat := newCatalog(t, env)
	mgr := NewManager(t, env, cat, foldConfig())
	for _, tr := range refundTurns {
		save(t, ctx, mgr, "gone", "alice", tr[0], tr[1])
		save(t, ctx, mgr, "kept", "alice", strings.ReplaceAll(tr[0], "blender", "toaster"), strings.ReplaceAll(tr[1], "blender", "toaster"))
	}
	flush(t, ctx, mgr, cat)
	if ms, _ := cat.Search(ctx, "alice", "blender refund", 5); len(ms) == 0 || ms[0].SessionID != "gone" {
		t.Fatalf("before delete: %+v", ms)
	}
	if err := mgr.DeleteSession(ctx, "gone", "alice"); err != nil {
		t.Fatal(err)
	}
	ms, err := cat.Search(ctx, "alice", "blender refund", 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.SessionID == "gone" {
			t.Errorf("a deleted session is still found: %+v", ms)
		}
	}
	// The manager's delete hook dropped the document (no cat.Delete needed).
	if d, err := env.Index.Get(ctx, "gone"); err != nil || d != nil {
		t.Errorf("document of a deleted session: %+v, %v", d, err)
	}
	pg, err := cat.List(ctx, "alice", 0, 0)
	if err != nil || pg.Total != 1 || pg.Sessions[0].SessionID != "kept" {
		t.Errorf("listing after delete: %+v, %v", pg, err)
	}
	// Re-created by another user: the old document never surfaces for either.
	save(t, ctx, mgr, "gone", "bob", "A new chat about gardening tomatoes.", "Happy to help with tomatoes.")
	if err := cat.Refresh(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if ms, _ := cat.Search(ctx, "alice", "blender refund", 5); len(ms) != 1 || ms[0].SessionID != "kept" {
		t.Errorf("alice after re-creation: %+v", ms)
	}
	if ms, _ := cat.Search(ctx, "bob", "gardening tomatoes", 5); len(ms) != 1 || ms[0].SessionID != "gone" {
		t.Errorf("bob after re-creation: %+v", ms)
	}
}

// FlakyEmbedder fails (or panics) while Fail is set, and embeds lexically
// otherwise; it counts calls.
type FlakyEmbedder struct {
	Fail, Panic atomic.Bool
	Calls       atomic.Int64
	lex         *catalog.LexicalEmbedder
}

// NewFlakyEmbedder returns a FlakyEmbedder that fails from the start.
func NewFlakyEmbedder() *FlakyEmbedder {
	e := &FlakyEmbedder{lex: catalog.NewLexicalEmbedder(0)}
	e.Fail.Store(true)
	return e
}

// EmbedDocuments implements catalog.Embedder.
func (e *FlakyEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	e.Calls.Add(1)
	if e.Panic.Load() {
		panic("embedder exploded")
	}
	if e.Fail.Load() {
		return nil, errors.New("embedding service unavailable")
	}
	return e.lex.EmbedDocuments(ctx, texts)
}

// EmbedQuery implements catalog.Embedder.
func (e *FlakyEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	e.Calls.Add(1)
	if e.Panic.Load() {
		panic("embedder exploded")
	}
	if e.Fail.Load() {
		return nil, errors.New("embedding service unavailable")
	}
	return e.lex.EmbedQuery(ctx, text)
}

func testFailingEmbedder(t *testing.T, env Env) {
	ctx := ctxFor(t)
	emb := NewFlakyEmbedder()
	emb.Panic.Store(true)
	cat := newCatalog(t, env, catalog.WithEmbedder(emb, "flaky-v1"))
	mgr := NewManager(t, env, cat, foldConfig())
	const sid, uid = "chat", "alice"
	turns := append(append([][2]string{}, refundTurns...), refundMore)
	for i, tr := range turns {
		if i == len(turns)-1 {
			flush(t, ctx, mgr, cat)
			if emb.Calls.Load() == 0 {
				t.Fatal("the embedder was never called: no fold observed")
			}
			emb.Panic.Store(false) // from now on it returns errors
		}
		save(t, ctx, mgr, sid, uid, tr[0], tr[1])
		if _, err := mgr.LoadHistory(ctx, sid, uid); err != nil {
			t.Fatalf("LoadHistory with a failing embedder: %v", err)
		}
	}
	flush(t, ctx, mgr, cat)
	h, err := mgr.Load(ctx, sid, uid)
	if err != nil || h.Mode != memory.ModeHierarchical || h.Total != 2*len(turns) {
		t.Fatalf("conversation after embedder failures: mode %s, %d messages, %v", h.Mode, h.Total, err)
	}
	d, _ := env.Index.Get(ctx, sid)
	if d == nil || d.Title == "" || d.Text != "" || len(d.Embedding) != 0 {
		t.Fatalf("document with a failing embedder: %+v (want a title, no text, no embedding)", d)
	}
	if _, err := cat.Search(ctx, uid, "blender", 5); err == nil {
		t.Error("Search with a failing embedder returned no error")
	}
	pg, err := cat.List(ctx, uid, 10, 0)
	if err != nil || len(pg.Sessions) != 1 || pg.Sessions[0].Title != d.Title {
		t.Errorf("List with a failing embedder: %+v, %v", pg, err)
	}

	// Once the embedder recovers, Reindex embeds what was missed.
	emb.Fail.Store(false)
	n, err := cat.Reindex(ctx, uid)
	if err != nil || n != 1 {
		t.Fatalf("Reindex = %d, %v", n, err)
	}
	if ms, err := cat.Search(ctx, uid, "blender refund", 5); err != nil || len(ms) != 1 || ms[0].SessionID != sid {
		t.Errorf("Search after recovery: %+v, %v", ms, err)
	}
}
