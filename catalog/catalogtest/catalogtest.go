// Package catalogtest is a conformance suite for the conversation catalogue:
// Run checks a catalog.Index together with the message and summary stores
// whose sessions it serves — listing, pagination, user isolation, the index
// contract, search filters and ranking, titles after folds, pinned titles,
// deleted and re-created sessions, refreshes racing a delete, failing
// embedders — through a memory.Manager and a catalog.Catalog, so that the
// in-memory and the PostgreSQL implementations are held to the same tests.
// RunErasure, RunErasureRandom, RunToolErasure and RunToolCallErasure run
// the erasure scenarios of a Manager with its catalogue over the same
// stores: nothing of a forgotten message is shown again, by any read path.
package catalogtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// Env is what one test runs on: fresh, empty stores and the index that
// belongs with them (a PostgreSQL index over the same database as the
// stores).
type Env struct {
	Store     memory.MessageStore
	Summaries summary.Store
	Index     catalog.Index
}

// Run runs the suite; newEnv is called once per subtest.
func Run(t *testing.T, newEnv func(t *testing.T) Env) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, env Env)
	}{
		{"ListPaginationAndIsolation", testList},
		{"IndexContract", testIndexContract},
		{"SearchFiltersAndRanking", testSearch},
		{"TitlesFollowFolds", testTitles},
		{"PinnedTitles", testPinned},
		{"SharedSessions", testShared},
		{"SharedThreadsShownToParticipants", testSharedParticipants},
		{"DeletedSessionsDisappear", testDeleted},
		{"RefreshRacingDeleteWritesNothing", testRefreshRacingDelete},
		{"FailingEmbedderNeverBreaksConversation", testFailingEmbedder},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newEnv(t)) })
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// FoldConfig folds early: above 6 messages, keeping the last 2 verbatim.
func FoldConfig() memory.Config {
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	cfg.TriggerMessageCount, cfg.RecentMessageCount = 6, 2
	return cfg
}

// Open returns a manager over env's stores, with the extractive summarizer,
// and a catalogue reading through it and keeping its documents in
// env.Index, subscribed to the manager's folds and deletes. Both are
// closed when the test ends, the catalogue first; its log goes to the
// test's log.
func Open(t *testing.T, env Env, cfg memory.Config, opts ...catalog.Option) (*memory.Manager, *catalog.Catalog) {
	t.Helper()
	mgr, err := memory.NewManager(env.Store, cfg, memory.WithSummaries(env.Summaries, summary.NewExtractiveService()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	opts = append([]catalog.Option{catalog.WithLogger(slog.New(slog.NewTextHandler(testWriter{t}, nil)))}, opts...)
	cat, err := catalog.New(mgr, env.Index, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cat.Close(); err != nil {
			t.Errorf("catalogue Close: %v", err)
		}
	})
	return mgr, cat
}

// testWriter sends log lines to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// Flush waits for the manager's folds and observers, then for the
// catalogue's refreshes.
func Flush(t *testing.T, ctx context.Context, mgr *memory.Manager, cat *catalog.Catalog) {
	t.Helper()
	if err := mgr.Flush(ctx); err != nil {
		t.Fatal(err)
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
	mgr, cat := Open(t, env, memory.DefaultConfig()) // no folds: titles come from the first turns

	long := "Please help me get a refund for the blender I ordered last week, it arrived broken"
	for i := range 7 {
		save(t, ctx, mgr, fmt.Sprintf("alice-%d", i), "alice", fmt.Sprintf("Question number %d about my garden.", i), "Sure.")
		time.Sleep(2 * time.Millisecond) // distinct last activity
	}
	save(t, ctx, mgr, "alice-long", "alice", long, "")
	time.Sleep(2 * time.Millisecond)
	// A session without any user message.
	if _, err := mgr.Append(ctx, "alice-silent", "alice", true, store.Message{Role: store.RoleAssistant, Content: "Welcome back!"}); err != nil {
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
	Flush(t, ctx, mgr, cat)
	again, err := cat.List(ctx, "alice", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range again.Sessions {
		if !e.Indexed {
			t.Errorf("%s not indexed after the background refresh", e.SessionID)
		}
		if e.SessionID == "alice-3" && e.Title != "Question number 3 about my garden" {
			t.Errorf("alice-3 indexed title %q", e.Title)
		}
	}
	res, err := cat.Search(ctx, "alice", "refund for the broken blender", 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.Best == nil || res.Best.SessionID != "alice-long" {
		t.Errorf("search after background indexing: %+v", res)
	}
	if res, _ := cat.Search(ctx, "bob", "refund for the broken blender", 3); len(res.Matches) != 0 {
		t.Errorf("bob finds alice's session: %+v", res)
	}
}

func ids(es []catalog.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.SessionID
	}
	return out
}

// appendUser appends one user message through mgr and returns the append's
// result (sequence number and epoch).
func appendUser(t *testing.T, ctx context.Context, mgr *memory.Manager, sid, uid, text string) store.AppendResult {
	t.Helper()
	r, err := mgr.Append(ctx, sid, uid, true, store.Message{Role: store.RoleUser, Content: text})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func vec(xs ...float32) []float32 { return xs }

func testIndexContract(t *testing.T, env Env) {
	ctx := ctxFor(t)
	mgr, _ := Open(t, env, memory.DefaultConfig())
	idx := env.Index
	r1 := appendUser(t, ctx, mgr, "s1", "alice", "hello")
	r2 := appendUser(t, ctx, mgr, "s1", "alice", "my blender is broken")
	r3 := appendUser(t, ctx, mgr, "s1", "alice", "I want a refund")
	appendUser(t, ctx, mgr, "s2", "bob", "hello")

	if d, err := idx.Get(ctx, "s1", "alice"); err != nil || d != nil {
		t.Fatalf("Get before Upsert = %s, %v", show(d), err)
	}
	doc := catalog.Doc{SessionID: "s1", UserID: "alice", Epoch: r1.Epoch, Title: "Refund", Fingerprint: "blender refund",
		Source: catalog.SourceSummary, SourceSeq: r2.LastSeq, MessageCount: 12,
		Text: "Title: Refund\nblender refund", Embedding: vec(1, 0, 0), Model: "m"}
	if err := idx.Upsert(ctx, doc); err != nil {
		t.Fatal(err)
	}
	got, err := idx.Get(ctx, "s1", "alice")
	if err != nil || got == nil {
		t.Fatalf("Get = %s, %v", show(got), err)
	}
	if got.Title != "Refund" || got.Pinned || got.Fingerprint != "blender refund" || got.Source != catalog.SourceSummary ||
		got.SourceSeq != r2.LastSeq || got.MessageCount != 12 || got.Text != doc.Text || got.Model != "m" ||
		len(got.Embedding) != 3 || got.Embedding[0] != 1 || got.UserID != "alice" || got.Epoch != r1.Epoch {
		t.Errorf("Get = %s", show(got))
	}
	// Reads are filtered by user.
	if d, err := idx.Get(ctx, "s1", "bob"); err != nil || d != nil {
		t.Errorf("bob gets alice's document: %s, %v", show(d), err)
	}

	// Older and turns-based versions never replace it.
	older := doc
	older.Title, older.SourceSeq = "Older", r1.LastSeq
	turns := doc
	turns.Title, turns.Source, turns.SourceSeq, turns.Epoch = "Turns", catalog.SourceTurns, r3.LastSeq, 0
	for _, d := range []catalog.Doc{older, turns} {
		if err := idx.Upsert(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := idx.Get(ctx, "s1", "alice"); got == nil || got.Title != "Refund" {
		t.Errorf("a superseded document replaced the stored one: %s", show(got))
	}
	// A newer one does, and a document without embedding drops text and model.
	newer := doc
	newer.Title, newer.SourceSeq, newer.Text, newer.Embedding, newer.Model = "Newer", r3.LastSeq, "", nil, ""
	if err := idx.Upsert(ctx, newer); err != nil {
		t.Fatal(err)
	}
	if got, _ := idx.Get(ctx, "s1", "alice"); got == nil || got.Title != "Newer" || got.Text != "" || got.Model != "" || len(got.Embedding) != 0 {
		t.Errorf("after a newer upsert: %s", show(got))
	}

	// A pinned title survives upserts; unpinned, upserts set it again.
	if err := idx.SetTitle(ctx, "s1", "alice", "My blender"); err != nil {
		t.Fatal(err)
	}
	newer.Title, newer.Text, newer.Embedding, newer.Model = "Generated", "Title: Generated\nblender", vec(0, 1, 0), "m"
	if err := idx.Upsert(ctx, newer); err != nil {
		t.Fatal(err)
	}
	if got, _ := idx.Get(ctx, "s1", "alice"); got == nil || got.Title != "My blender" || !got.Pinned || got.Text != newer.Text {
		t.Errorf("after an upsert over a pinned title: %s", show(got))
	}
	ms, err := idx.Search(ctx, catalog.Query{UserID: "alice", Vector: vec(0, 1, 0), Model: "m", Weight: 1})
	if err != nil || len(ms) != 1 || ms[0].Title != "My blender" || ms[0].Text != newer.Text {
		t.Errorf("search shows the pinned title: %+v, %v", ms, err)
	}
	if err := idx.SetTitle(ctx, "s1", "alice", ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := idx.Get(ctx, "s1", "alice"); got == nil || got.Pinned {
		t.Errorf("after unpinning: %s", show(got))
	}
	if err := idx.Upsert(ctx, newer); err != nil {
		t.Fatal(err)
	}
	if got, _ := idx.Get(ctx, "s1", "alice"); got == nil || got.Title != "Generated" || got.Pinned {
		t.Errorf("upsert after unpinning: %s", show(got))
	}
	// Pinning a session without document creates one without text.
	if err := idx.SetTitle(ctx, "s2", "bob", "Bob's plans"); err != nil {
		t.Fatal(err)
	}
	if got, _ := idx.Get(ctx, "s2", "bob"); got == nil || got.Title != "Bob's plans" || !got.Pinned || got.Text != "" || len(got.Embedding) != 0 {
		t.Errorf("pinned without document: %s", show(got))
	}
	if err := idx.SetTitle(ctx, "s2", "alice", "Mine now"); !errors.Is(err, memory.ErrNotOwner) {
		t.Errorf("SetTitle on another user's document = %v, want ErrNotOwner", err)
	}

	// Unknown sessions are not errors.
	if err := idx.Upsert(ctx, catalog.Doc{SessionID: "nope", UserID: "alice", Source: catalog.SourceTurns}); err != nil {
		t.Errorf("Upsert of an unknown session: %v", err)
	}
	if err := idx.Delete(ctx, "never-there"); err != nil {
		t.Errorf("Delete of an unknown session: %v", err)
	}
	// Deleting the session through the manager (whose observer calls
	// Delete) removes the document.
	if err := mgr.DeleteSession(ctx, "s1", "alice"); err != nil {
		t.Fatal(err)
	}
	if got, err := idx.Get(ctx, "s1", "alice"); err != nil || got != nil {
		t.Errorf("Get after the session was deleted = %s, %v", show(got), err)
	}
}

func testSearch(t *testing.T, env Env) {
	ctx := ctxFor(t)
	mgr, _ := Open(t, env, memory.DefaultConfig())
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
		r := appendUser(t, ctx, mgr, s.id, s.user, "text of "+s.id)
		msgs, err := mgr.Messages(ctx, s.id, s.user, 0, 1)
		if err != nil || len(msgs) != 1 {
			t.Fatal(msgs, err)
		}
		d := catalog.Doc{SessionID: s.id, UserID: s.user, Epoch: r.Epoch, Title: s.id, Source: catalog.SourceSummary,
			SourceSeq: r.LastSeq, Text: "text of " + s.id, Embedding: s.v, Model: s.model,
			LastActivity: msgs[0].CreatedAt}
		if err := idx.Upsert(ctx, d); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // "new" is clearly more recent than "old"
	}
	q := catalog.Query{UserID: "alice", Vector: vec(1, 0, 0), Model: "m", MinSimilarity: -1, Weight: 1, HalfLife: time.Hour, Now: now}
	res, err := idx.Search(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	// Similarity only: old and new tie at 1 (ties by session id), then near, then far.
	if got := matchIDs(res); strings.Join(got, ",") != "new,old,near,far" {
		t.Errorf("weight 1: %v", got)
	}
	for _, r := range res {
		if r.SessionID == "near" && (r.Similarity < 0.99 || r.Similarity > 0.995) {
			t.Errorf("near: similarity %.4f, want cos = 0.9939", r.Similarity)
		}
		if r.Text != "text of "+r.SessionID || r.Title != r.SessionID || r.LastActivity.IsZero() {
			t.Errorf("%s: text %q title %q last activity %v", r.SessionID, r.Text, r.Title, r.LastActivity)
		}
	}
	// Recency decides between equal similarities: new before old.
	q.Weight, q.HalfLife, q.Now = 0.5, 100*time.Millisecond, time.Now()
	res, err = idx.Search(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if got := matchIDs(res); len(got) < 2 || got[0] != "new" {
		t.Errorf("weight 0.5: %v", got)
	}
	for _, r := range res {
		want := 0.5*r.Similarity + 0.5*r.Recency
		if d := r.Score - want; d > 1e-6 || d < -1e-6 || r.Recency <= 0 || r.Recency > 1 {
			t.Errorf("%s: score %.6f recency %.6f, want score %.6f", r.SessionID, r.Score, r.Recency, want)
		}
	}
	// Floor and limit.
	q.Weight, q.HalfLife, q.Now, q.MinSimilarity, q.Limit = 1, 0, now, 0.5, 2
	res, err = idx.Search(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if got := matchIDs(res); strings.Join(got, ",") != "new,old" {
		t.Errorf("floor 0.5, limit 2: %v", got)
	}
	q.Limit = 0
	res, _ = idx.Search(ctx, q)
	if got := matchIDs(res); strings.Join(got, ",") != "new,old,near" {
		t.Errorf("floor 0.5: %v", got)
	}
	// Other models and dimensions are invisible; so are other users.
	res, _ = idx.Search(ctx, catalog.Query{UserID: "alice", Vector: vec(1, 0, 0), Model: "m2", Weight: 1})
	if got := matchIDs(res); strings.Join(got, ",") != "other-model" {
		t.Errorf("model m2: %v", got)
	}
	res, _ = idx.Search(ctx, catalog.Query{UserID: "alice", Vector: vec(1, 0, 0, 0), Model: "m", Weight: 1})
	if got := matchIDs(res); strings.Join(got, ",") != "other-dims" {
		t.Errorf("4 dims: %v", got)
	}
	res, _ = idx.Search(ctx, catalog.Query{UserID: "bob", Vector: vec(1, 0, 0), Model: "m", Weight: 1})
	if got := matchIDs(res); strings.Join(got, ",") != "bobs" {
		t.Errorf("bob: %v", got)
	}
	if res, _ := idx.Search(ctx, catalog.Query{UserID: "carol", Vector: vec(1, 0, 0), Model: "m"}); len(res) != 0 {
		t.Errorf("carol: %v", matchIDs(res))
	}
}

func matchIDs(res []catalog.Match) []string {
	out := make([]string, len(res))
	for i, r := range res {
		out[i] = r.SessionID
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

// show prints a document without its vector.
func show(d *catalog.Doc) string {
	if d == nil {
		return "<nil>"
	}
	return fmt.Sprintf("{%s user=%s epoch=%d title=%q pinned=%v source=%s/%d messages=%d model=%q dims=%d text=%q}",
		d.SessionID, d.UserID, d.Epoch, d.Title, d.Pinned, d.Source, d.SourceSeq, d.MessageCount, d.Model, len(d.Embedding), d.Text)
}

func getDoc(t *testing.T, ctx context.Context, idx catalog.Index, sid, uid string) *catalog.Doc {
	t.Helper()
	d, err := idx.Get(ctx, sid, uid)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func testTitles(t *testing.T, env Env) {
	ctx := ctxFor(t)
	mgr, cat := Open(t, env, FoldConfig())
	const sid, uid = "chat", "alice"
	for _, tr := range refundTurns {
		save(t, ctx, mgr, sid, uid, tr[0], tr[1])
	}
	Flush(t, ctx, mgr, cat)
	d := getDoc(t, ctx, env.Index, sid, uid)
	if d == nil {
		t.Fatal("no document after the first folds")
	}
	sum, err := mgr.Summary(ctx, sid, uid)
	if err != nil || sum == nil {
		t.Fatalf("no summary after the first folds: %v", err)
	}
	if d.Source != catalog.SourceSummary || d.SourceSeq != sum.UpToSeq || d.Title == "" || d.Pinned || len(d.Embedding) == 0 ||
		!strings.Contains(d.Text, "Title: "+d.Title) || !strings.Contains(d.Text, summary.NarrativeHeader) {
		t.Fatalf("document after folds: %s", show(d))
	}
	first := d.Title
	if !strings.Contains(strings.ToLower(first), "blender") && !strings.Contains(strings.ToLower(first), "refund") {
		t.Errorf("title %q does not name the topic", first)
	}
	if got, err := cat.Title(ctx, sid, uid); err != nil || got != first {
		t.Errorf("Title = %q, %v; want %q", got, err, first)
	}

	// A small update on the same topic keeps the title.
	save(t, ctx, mgr, sid, uid, refundMore[0], refundMore[1])
	Flush(t, ctx, mgr, cat)
	d2 := getDoc(t, ctx, env.Index, sid, uid)
	if d2 == nil || d2.SourceSeq <= d.SourceSeq {
		t.Fatalf("no newer document after another fold: %s", show(d2))
	}
	if d2.Title != first {
		t.Errorf("title changed on a small update: %q -> %q (fingerprints %q vs %q)", first, d2.Title, d.Fingerprint, d2.Fingerprint)
	}

	// A topic switch changes it.
	for _, tr := range travelTurns {
		save(t, ctx, mgr, sid, uid, tr[0], tr[1])
	}
	Flush(t, ctx, mgr, cat)
	d3 := getDoc(t, ctx, env.Index, sid, uid)
	if d3 == nil || d3.Title == first {
		t.Fatalf("title kept after a topic switch: %s", show(d3))
	}
	t.Logf("title %q (fingerprint %q) -> small update: kept -> topic switch: %q (fingerprint %q)",
		first, d.Fingerprint, d3.Title, d3.Fingerprint)
	if !strings.Contains(strings.ToLower(d3.Title+" "+d3.Fingerprint), "tokyo") {
		t.Errorf("new title %q (fingerprint %q) does not follow the new topic", d3.Title, d3.Fingerprint)
	}
	// And the conversation is found by both topics, by its owner only.
	for _, query := range []string{"the chat about the Tokyo trip", "blender refund"} {
		res, err := cat.Search(ctx, uid, query, 5)
		if err != nil {
			t.Fatal(err)
		}
		if w := res.Best; w == nil || w.SessionID != sid || w.Title != d3.Title || w.Text == "" {
			t.Errorf("Search(%q) = %+v", query, res)
		}
		if res, _ := cat.Search(ctx, "mallory", query, 5); len(res.Matches) != 0 {
			t.Errorf("another user finds the session: %+v", res)
		}
	}
}

func testPinned(t *testing.T, env Env) {
	ctx := ctxFor(t)
	mgr, cat := Open(t, env, FoldConfig())
	const sid, uid = "pinned", "alice"
	if err := mgr.Create(ctx, sid, uid); err != nil {
		t.Fatal(err)
	}
	if err := cat.SetTitle(ctx, sid, uid, "  Kitchen appliances  "); err != nil {
		t.Fatal(err)
	}
	if err := cat.SetTitle(ctx, sid, "mallory", "Mine"); !errors.Is(err, memory.ErrNotOwner) {
		t.Errorf("SetTitle by another user = %v, want ErrNotOwner", err)
	}
	if err := cat.SetTitle(ctx, "missing", uid, "Nothing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetTitle of a missing session = %v, want ErrNotFound", err)
	}
	if got, err := cat.Title(ctx, sid, uid); err != nil || got != "Kitchen appliances" {
		t.Errorf("Title = %q, %v", got, err)
	}
	if _, err := cat.Title(ctx, sid, "mallory"); !errors.Is(err, memory.ErrNotOwner) {
		t.Errorf("Title for another user = %v, want ErrNotOwner", err)
	}
	if _, err := cat.Title(ctx, "missing", uid); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Title of a missing session = %v, want ErrNotFound", err)
	}

	// Folds and refreshes keep the pinned title, and index it.
	for _, tr := range append(append([][2]string{}, refundTurns...), refundMore) {
		save(t, ctx, mgr, sid, uid, tr[0], tr[1])
	}
	Flush(t, ctx, mgr, cat)
	if n, err := cat.Reindex(ctx, uid); err != nil {
		t.Fatalf("Reindex = %d, %v", n, err)
	}
	d := getDoc(t, ctx, env.Index, sid, uid)
	if d == nil || d.Title != "Kitchen appliances" || !d.Pinned || d.Source != catalog.SourceSummary ||
		!strings.HasPrefix(d.Text, "Title: Kitchen appliances\n") {
		t.Fatalf("document of a pinned session after folds: %s", show(d))
	}
	pg, err := cat.List(ctx, uid, 0, 0)
	if err != nil || len(pg.Sessions) != 1 || pg.Sessions[0].Title != "Kitchen appliances" || !pg.Sessions[0].Indexed {
		t.Errorf("List = %+v, %v", pg, err)
	}
	res, err := cat.Search(ctx, uid, "blender refund", 5)
	if err != nil || res.Best == nil || res.Best.Title != "Kitchen appliances" {
		t.Errorf("Search = %+v, %v", res, err)
	}

	// Unpinned, a title is generated again.
	if err := cat.SetTitle(ctx, sid, uid, ""); err != nil {
		t.Fatal(err)
	}
	Flush(t, ctx, mgr, cat)
	if d := getDoc(t, ctx, env.Index, sid, uid); d == nil || d.Pinned || d.Title == "" || d.Title == "Kitchen appliances" {
		t.Errorf("after unpinning: %s", show(d))
	}

	// The pin goes with the session: a new session of the same id starts
	// without it.
	if err := cat.SetTitle(ctx, sid, uid, "Kitchen appliances"); err != nil {
		t.Fatal(err)
	}
	if err := mgr.DeleteSession(ctx, sid, uid); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.Title(ctx, sid, uid); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Title of a deleted session = %v, want ErrNotFound", err)
	}
	save(t, ctx, mgr, sid, uid, "Which tomato varieties grow well on a balcony?", "Cherry tomatoes do.")
	if got, err := cat.Title(ctx, sid, uid); err != nil || got != "Which tomato varieties grow well on a balcony" {
		t.Errorf("Title of the new session = %q, %v", got, err)
	}
	Flush(t, ctx, mgr, cat)
	if _, err := cat.Reindex(ctx, uid); err != nil {
		t.Fatal(err)
	}
	if d := getDoc(t, ctx, env.Index, sid, uid); d == nil || d.Pinned || d.Title != "Which tomato varieties grow well on a balcony" {
		t.Errorf("document of the new session: %s", show(d))
	}
}

// testShared: a shared session (memory.Config.SharedSessionPrefixes) has
// the owner the manager gives it, whoever asks: one title for all its
// participants, which any of them may set, and a place in every user's
// listing and search; private sessions stay their owner's.
func testShared(t *testing.T, env Env) {
	ctx := ctxFor(t)
	cfg := memory.DefaultConfig()
	cfg.SharedSessionPrefixes = []string{"slack-"}
	mgr, cat := Open(t, env, cfg)
	const sid = "slack-C1-1700000000.1"
	save(t, ctx, mgr, "alice-own", "alice", "Which tomato varieties grow well on a balcony?", "Cherry tomatoes do.")
	time.Sleep(2 * time.Millisecond) // distinct last activity
	save(t, ctx, mgr, "bob-own", "bob", "How do I descale my espresso machine?", "Use citric acid.")
	time.Sleep(2 * time.Millisecond)
	save(t, ctx, mgr, sid, "alice", "When is the rocket launch rehearsal scheduled?", "Thursday at noon.")
	save(t, ctx, mgr, sid, "bob", "Who runs the rocket launch checklist?", "Carol does.")

	// Before any title is pinned, both participants see the same one.
	ta, errA := cat.Title(ctx, sid, "alice")
	tb, errB := cat.Title(ctx, sid, "bob")
	if errA != nil || errB != nil || ta == "" || ta != tb {
		t.Fatalf("generated titles: alice %q (%v), bob %q (%v); want one title", ta, errA, tb, errB)
	}
	// One participant pins it: every participant sees it.
	if err := cat.SetTitle(ctx, sid, "alice", "Launch rehearsal"); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob", ""} {
		if got, err := cat.Title(ctx, sid, u); err != nil || got != "Launch rehearsal" {
			t.Errorf("%q sees the title %q, %v; want the pinned one", u, got, err)
		}
	}
	// Another participant renames it: the one title changes for everyone.
	if err := cat.SetTitle(ctx, sid, "bob", "Launch checklist"); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob"} {
		if got, err := cat.Title(ctx, sid, u); err != nil || got != "Launch checklist" {
			t.Errorf("%q sees the title %q, %v; want the one bob pinned", u, got, err)
		}
	}
	// Private sessions stay private.
	if _, err := cat.Title(ctx, "alice-own", "bob"); !errors.Is(err, memory.ErrNotOwner) {
		t.Errorf("bob reads the title of alice's session: %v", err)
	}
	if err := cat.SetTitle(ctx, "alice-own", "bob", "Mine"); !errors.Is(err, memory.ErrNotOwner) {
		t.Errorf("bob titles alice's session: %v", err)
	}

	// Both participants list the shared session, with its one title,
	// next to their own sessions (newest first), and never each other's.
	for _, tc := range []struct{ user, own string }{{"alice", "alice-own"}, {"bob", "bob-own"}} {
		pg, err := cat.List(ctx, tc.user, 0, 0)
		if err != nil || pg.Total != 2 || !slices.Equal(ids(pg.Sessions), []string{sid, tc.own}) {
			t.Fatalf("%s lists %v (total %d), %v; want [%s %s]", tc.user, ids(pg.Sessions), pg.Total, err, sid, tc.own)
		}
		if pg.Sessions[0].Title != "Launch checklist" {
			t.Errorf("%s lists the shared session as %q", tc.user, pg.Sessions[0].Title)
		}
		var paged []string
		for off := range 3 {
			p, err := cat.List(ctx, tc.user, 1, off)
			if err != nil || p.Total != 2 {
				t.Fatalf("%s page %d: %+v, %v", tc.user, off, p, err)
			}
			paged = append(paged, ids(p.Sessions)...)
		}
		if !slices.Equal(paged, []string{sid, tc.own}) {
			t.Errorf("%s pages through %v", tc.user, paged)
		}
	}

	// Both find it by what it was about; neither finds the other's.
	Flush(t, ctx, mgr, cat)
	for _, u := range []string{"alice", "bob"} {
		if _, err := cat.Reindex(ctx, u); err != nil {
			t.Fatal(err)
		}
		res, err := cat.Search(ctx, u, "rocket launch", 5)
		if err != nil || res.Best == nil || res.Best.SessionID != sid || res.Best.Title != "Launch checklist" {
			t.Errorf("%s searches the shared session: %+v, %v", u, res, err)
		}
	}
	if res, err := cat.Search(ctx, "bob", "tomato balcony", 5); err != nil || len(res.Matches) != 0 {
		t.Errorf("bob finds alice's session: %+v, %v", res, err)
	}

	// Any participant may delete it: it leaves every listing.
	if err := mgr.DeleteSession(ctx, sid, "bob"); err != nil {
		t.Fatal(err)
	}
	if pg, err := cat.List(ctx, "alice", 0, 0); err != nil || pg.Total != 1 || !slices.Equal(ids(pg.Sessions), []string{"alice-own"}) {
		t.Errorf("alice lists %v (total %d) after the delete, %v", ids(pg.Sessions), pg.Total, err)
	}
}

// testSharedParticipants: three users and two shared threads — alice and
// bob write in the first, bob and carol in the second. Listings, totals,
// pages and search show each thread to the users who wrote in it and to
// the configured viewer (dana), never to the others (alice does not see
// the second, erin sees neither); reading a thread by its id stays open
// to every user, as configured. A user who writes in a thread sees it
// from then on; a thread deleted and re-created under its id is shown to
// its new participants only.
func testSharedParticipants(t *testing.T, env Env) {
	ctx := ctxFor(t)
	cfg := memory.DefaultConfig()
	cfg.SharedSessionPrefixes = []string{"slack-"}
	cfg.SharedSessionViewers = []string{"dana"}
	mgr, cat := Open(t, env, cfg)
	const t1, t2 = "slack-C1-1700000000.1", "slack-C2-1700000000.2"
	step := func() { time.Sleep(2 * time.Millisecond) } // distinct last activity
	save(t, ctx, mgr, "alice-own", "alice", "Which tomato varieties grow well on a balcony?", "Cherry tomatoes do.")
	step()
	save(t, ctx, mgr, t1, "alice", "When is the rocket launch rehearsal scheduled?", "Thursday at noon.")
	step()
	save(t, ctx, mgr, "bob-own", "bob", "How do I bake sourdough bread?", "Feed the starter first.")
	step()
	save(t, ctx, mgr, t2, "carol", "How do I descale the office espresso machine?", "Use citric acid.")
	step()
	save(t, ctx, mgr, t1, "bob", "Who runs the rocket launch checklist?", "Carol does.")
	step()
	save(t, ctx, mgr, t2, "bob", "Which espresso beans should the office order?", "A medium roast.")
	step()
	save(t, ctx, mgr, "carol-own", "carol", "Where can I hike near the lake?", "The north trail.")

	wantList := func(user string, want ...string) {
		t.Helper()
		pg, err := cat.List(ctx, user, 0, 0)
		if err != nil || pg.Total != len(want) || !slices.Equal(ids(pg.Sessions), want) {
			t.Fatalf("%s lists %v (total %d), %v; want %v", user, ids(pg.Sessions), pg.Total, err, want)
		}
		var paged []string
		for off := range len(want) + 1 {
			p, err := cat.List(ctx, user, 1, off)
			if err != nil || p.Total != len(want) {
				t.Fatalf("%s page %d: %v (total %d), %v; want total %d", user, off, ids(p.Sessions), p.Total, err, len(want))
			}
			paged = append(paged, ids(p.Sessions)...)
		}
		if !slices.Equal(paged, want) {
			t.Fatalf("%s pages through %v, want %v", user, paged, want)
		}
	}
	wantList("alice", t1, "alice-own")
	wantList("bob", t2, t1, "bob-own")
	wantList("carol", "carol-own", t2)
	wantList("dana", t2, t1) // the viewer, who wrote in neither
	wantList("erin")         // wrote in neither, no viewer
	wantList("")             // the anonymous user neither

	// Search shows what the listing shows.
	Flush(t, ctx, mgr, cat)
	found := func(user, query string) []string {
		t.Helper()
		if _, err := cat.Reindex(ctx, user); err != nil {
			t.Fatal(err)
		}
		res, err := cat.Search(ctx, user, query, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range res.Matches {
			out = append(out, m.SessionID)
		}
		return out
	}
	for _, tc := range []struct {
		user, query string
		want        []string
	}{
		{"alice", "rocket launch checklist", []string{t1}},
		{"alice", "office espresso machine", nil},
		{"bob", "office espresso machine", []string{t2}},
		{"carol", "rocket launch checklist", nil},
		{"carol", "office espresso machine", []string{t2}},
		{"dana", "rocket launch checklist", []string{t1}},
		{"dana", "office espresso machine", []string{t2}},
		{"erin", "rocket launch checklist", nil},
		{"erin", "office espresso machine", nil},
	} {
		if got := found(tc.user, tc.query); !slices.Equal(got, tc.want) {
			t.Errorf("%s searches %q: %v, want %v", tc.user, tc.query, got, tc.want)
		}
	}

	// Reading a thread by its id stays open to every user (the shared
	// prefix says so), title included.
	if msgs, err := mgr.Messages(ctx, t2, "erin", 0, 0); err != nil || len(msgs) != 4 {
		t.Fatalf("erin reads the second thread by its id: %d messages, %v", len(msgs), err)
	}
	if title, err := cat.Title(ctx, t2, "erin"); err != nil || title == "" {
		t.Fatalf("erin reads the second thread's title by its id: %q, %v", title, err)
	}
	// Reading is not writing: erin still does not list it.
	wantList("erin")

	// carol writes in the first thread: she lists it from then on.
	step()
	save(t, ctx, mgr, t1, "carol", "Can I join the rocket launch rehearsal?", "Yes.")
	wantList("carol", t1, "carol-own", t2)
	if got := found("carol", "rocket launch checklist"); !slices.Equal(got, []string{t1}) {
		t.Errorf("carol searches the first thread after writing in it: %v", got)
	}

	// Deleted and re-created under its id by erin: only erin lists it.
	if err := mgr.DeleteSession(ctx, t1, "bob"); err != nil {
		t.Fatal(err)
	}
	step()
	save(t, ctx, mgr, t1, "erin", "A new thread about the team lunch.", "Pizza it is.")
	wantList("alice", "alice-own")
	wantList("erin", t1)
	wantList("bob", t2, "bob-own")
	wantList("dana", t1, t2)
}

func testDeleted(t *testing.T, env Env) {
	ctx := ctxFor(t)
	mgr, cat := Open(t, env, FoldConfig())
	for _, tr := range refundTurns {
		save(t, ctx, mgr, "gone", "alice", tr[0], tr[1])
		save(t, ctx, mgr, "kept", "alice", strings.ReplaceAll(tr[0], "blender", "toaster"), strings.ReplaceAll(tr[1], "blender", "toaster"))
	}
	Flush(t, ctx, mgr, cat)
	if res, _ := cat.Search(ctx, "alice", "blender refund", 5); len(res.Matches) == 0 || res.Matches[0].SessionID != "gone" {
		t.Fatalf("before delete: %+v", res)
	}
	if err := mgr.DeleteSession(ctx, "gone", "alice"); err != nil {
		t.Fatal(err)
	}
	res, err := cat.Search(ctx, "alice", "blender refund", 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Matches {
		if m.SessionID == "gone" {
			t.Errorf("a deleted session is still found: %+v", res)
		}
	}
	if d := getDoc(t, ctx, env.Index, "gone", "alice"); d != nil {
		t.Errorf("document of a deleted session: %s", show(d))
	}
	pg, err := cat.List(ctx, "alice", 0, 0)
	if err != nil || pg.Total != 1 || pg.Sessions[0].SessionID != "kept" {
		t.Errorf("listing after delete: %+v, %v", pg, err)
	}
	// Re-created by another user: the old document never surfaces for either.
	save(t, ctx, mgr, "gone", "bob", "A new chat about gardening tomatoes.", "Happy to help with tomatoes.")
	if _, err := cat.Reindex(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if res, _ := cat.Search(ctx, "alice", "blender refund", 5); len(res.Matches) != 1 || res.Matches[0].SessionID != "kept" {
		t.Errorf("alice after re-creation: %+v", res)
	}
	if res, _ := cat.Search(ctx, "bob", "gardening tomatoes", 5); len(res.Matches) != 1 || res.Matches[0].SessionID != "gone" {
		t.Errorf("bob after re-creation: %+v", res)
	}
	if res, _ := cat.Search(ctx, "bob", "blender refund", 5); len(res.Matches) != 0 {
		t.Errorf("bob finds alice's deleted conversation: %+v", res)
	}
	if d := getDoc(t, ctx, env.Index, "gone", "bob"); d == nil || strings.Contains(d.Text, "blender") {
		t.Errorf("bob's document: %s", show(d))
	}
}

// gateEmbedder embeds lexically, but holds every document text containing
// block until release is closed (or the context ends), after telling
// entered once.
type gateEmbedder struct {
	catalog.Embedder
	block   string
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newGate(block string) *gateEmbedder {
	return &gateEmbedder{Embedder: catalog.NewLexicalEmbedder(0), block: block,
		entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gateEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	for _, text := range texts {
		if strings.Contains(text, g.block) {
			g.once.Do(func() { close(g.entered) })
			select {
			case <-g.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return g.Embedder.EmbedDocuments(ctx, texts)
}

func (g *gateEmbedder) wait(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no refresh reached the embedder")
	}
}

// A refresh that read a session before it was deleted — and then created
// again by its owner, with other content — writes nothing: neither for a
// document built from the first messages nor for one built from a summary.
func testRefreshRacingDelete(t *testing.T, env Env) {
	ctx := ctxFor(t)
	gate := newGate("blender")
	mgr, cat := Open(t, env, FoldConfig(), catalog.WithEmbedder(gate, "gate"))
	const uid = "alice"

	// From the first messages (no summary), refreshed by Reindex.
	save(t, ctx, mgr, "turns", uid, "My blender arrived broken, can I get a refund?", "Yes.")
	done := make(chan error, 1)
	go func() { _, err := cat.Reindex(ctx, uid); done <- err }()
	gate.wait(t)
	if err := mgr.DeleteSession(ctx, "turns", uid); err != nil {
		t.Fatal(err)
	}
	save(t, ctx, mgr, "turns", uid, "Which tomato varieties grow well on a balcony?", "Cherry tomatoes do.")
	close(gate.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := getDoc(t, ctx, env.Index, "turns", uid); d != nil {
		t.Errorf("a refresh of the deleted session wrote: %s", show(d))
	}

	// From a summary, refreshed after a fold.
	gate2 := newGate("blender")
	mgr2, cat2 := Open(t, env, FoldConfig(), catalog.WithEmbedder(gate2, "gate"))
	for _, tr := range refundTurns {
		save(t, ctx, mgr2, "folded", uid, tr[0], tr[1])
	}
	gate2.wait(t)
	if err := mgr2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mgr2.DeleteSession(ctx, "folded", uid); err != nil {
		t.Fatal(err)
	}
	save(t, ctx, mgr2, "folded", uid, "Which tomato varieties grow well on a balcony?", "Cherry tomatoes do.")
	close(gate2.release)
	Flush(t, ctx, mgr2, cat2)
	if d := getDoc(t, ctx, env.Index, "folded", uid); d != nil && (d.Source == catalog.SourceSummary || strings.Contains(d.Text, "blender")) {
		t.Errorf("a refresh of the deleted incarnation wrote: %s", show(d))
	}
	if res, err := cat2.Search(ctx, uid, "blender refund", 5); err != nil || len(res.Matches) != 0 {
		t.Errorf("the deleted conversation is found: %+v, %v", res, err)
	}

	// The new sessions are indexed as themselves.
	for _, c := range []*catalog.Catalog{cat, cat2} {
		if _, err := c.Reindex(ctx, uid); err != nil {
			t.Fatal(err)
		}
	}
	for _, sid := range []string{"turns", "folded"} {
		d := getDoc(t, ctx, env.Index, sid, uid)
		if d == nil || !strings.Contains(d.Text, "tomato") || strings.Contains(d.Text, "blender") {
			t.Errorf("%s after re-creation: %s", sid, show(d))
		}
	}
}

// FlakyEmbedder fails (or panics) while Fail (or Panic) is set, and embeds
// lexically otherwise; it counts calls.
type FlakyEmbedder struct {
	Fail, Panic atomic.Bool
	Calls       atomic.Int64
	lex         catalog.Embedder
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
	mgr, cat := Open(t, env, FoldConfig(), catalog.WithEmbedder(emb, "flaky-v1"))
	const sid, uid = "chat", "alice"
	turns := append(append([][2]string{}, refundTurns...), refundMore)
	for i, tr := range turns {
		if i == len(turns)-1 {
			Flush(t, ctx, mgr, cat)
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
	Flush(t, ctx, mgr, cat)
	h, err := mgr.Load(ctx, sid, uid)
	if err != nil || h.Mode != "hierarchical" || h.Total != 2*len(turns) {
		t.Fatalf("conversation after embedder failures: mode %s, %d messages, %v", h.Mode, h.Total, err)
	}
	d := getDoc(t, ctx, env.Index, sid, uid)
	if d == nil || d.Title == "" || d.Text != "" || len(d.Embedding) != 0 {
		t.Fatalf("document with a failing embedder: %s (want a title, no text, no embedding)", show(d))
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
	if res, err := cat.Search(ctx, uid, "blender refund", 5); err != nil || res.Best == nil || res.Best.SessionID != sid {
		t.Errorf("Search after recovery: %+v, %v", res, err)
	}
}
