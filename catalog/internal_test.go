package catalog

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

func TestLexicalEmbedder(t *testing.T) {
	ctx := context.Background()
	e := NewLexicalEmbedder(0).(*lexicalEmbedder)
	if e.dims != 1024 || e.model() != "strata-lexical-v1-1024" {
		t.Fatalf("dims %d model %q", e.dims, e.model())
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
	if s := cosine(q, a); s < 0.4 {
		t.Errorf("similar texts: cosine %.3f", s)
	}
	if s := cosine(far, a); math.Abs(s) > 0.1 {
		t.Errorf("unrelated texts: cosine %.3f", s)
	}
	if s := e.similarity("paintings of lakes", "I painted the lake"); math.Abs(s-1) > 1e-9 {
		t.Errorf("exact similarity of the same terms = %v", s)
	}
	if s := e.similarity("tax", "I painted the lake"); s != 0 {
		t.Errorf("exact similarity without shared terms = %v", s)
	}
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.EmbedDocuments(ctx2, []string{"x"}); err == nil {
		t.Error("no error on a cancelled context")
	}
	if m := NewLexicalEmbedder(256).(*lexicalEmbedder).model(); m != "strata-lexical-v1-256" {
		t.Errorf("model %q", m)
	}
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
		if got := strings.Join(terms(in), " "); got != want {
			t.Errorf("terms(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCosine(t *testing.T) {
	if c := cosine([]float32{1, 2}, []float32{2, 4}); math.Abs(c-1) > 1e-9 {
		t.Errorf("parallel: %v", c)
	}
	if c := cosine([]float32{1, 0}, []float32{0, 1}); c != 0 {
		t.Errorf("orthogonal: %v", c)
	}
	for _, c := range []float64{
		cosine(nil, nil), cosine([]float32{1}, []float32{1, 0}), cosine([]float32{0, 0}, []float32{1, 0}),
	} {
		if c != 0 {
			t.Errorf("degenerate: %v", c)
		}
	}
}

func TestQueryRank(t *testing.T) {
	now := time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	q := Query{UserID: "u", Vector: []float32{1, 0}, Model: "m", Weight: 0.8, HalfLife: 30 * day, Now: now, MinSimilarity: 0.1}
	docs := []Doc{
		{SessionID: "now", UserID: "u", Model: "m", Embedding: []float32{1, 0}, LastActivity: now},
		{SessionID: "future", UserID: "u", Model: "m", Embedding: []float32{1, 0}, LastActivity: now.Add(time.Hour)},
		{SessionID: "month", UserID: "u", Model: "m", Embedding: []float32{1, 0}, LastActivity: now.Add(-30 * day)},
		{SessionID: "old-half", UserID: "u", Model: "m", Embedding: []float32{1, 1}, LastActivity: now.Add(-60 * day)},
		{SessionID: "unknown", UserID: "u", Model: "m", Embedding: []float32{1, 0}},
		{SessionID: "orthogonal", UserID: "u", Model: "m", Embedding: []float32{0, 1}, LastActivity: now},
		{SessionID: "other-user", UserID: "v", Model: "m", Embedding: []float32{1, 0}, LastActivity: now},
		{SessionID: "other-model", UserID: "u", Model: "n", Embedding: []float32{1, 0}, LastActivity: now},
		{SessionID: "other-dims", UserID: "u", Model: "m", Embedding: []float32{1, 0, 0}, LastActivity: now},
	}
	got := q.Rank(docs)
	want := map[string][2]float64{ // recency, score
		"future":   {1, 1},
		"now":      {1, 1},
		"month":    {0.5, 0.8 + 0.2*0.5},
		"unknown":  {0, 0.8},
		"old-half": {0.25, 0.8*math.Sqrt(0.5) + 0.2*0.25},
	}
	var ids []string
	for _, m := range got {
		ids = append(ids, m.SessionID)
		w, ok := want[m.SessionID]
		if !ok || math.Abs(m.Recency-w[0]) > 1e-9 || math.Abs(m.Score-w[1]) > 1e-9 {
			t.Errorf("%s: recency %v score %v, want %v", m.SessionID, m.Recency, m.Score, w)
		}
	}
	if strings.Join(ids, ",") != "future,now,month,unknown,old-half" {
		t.Errorf("order %v", ids)
	}
	q.Limit = 2
	if got := q.Rank(docs); len(got) != 2 || got[0].SessionID != "future" {
		t.Errorf("limit 2: %+v", got)
	}
	q.HalfLife = 0
	for _, m := range q.Rank(docs) {
		if m.Recency != 0 {
			t.Errorf("%s: recency %v without half-life", m.SessionID, m.Recency)
		}
	}
}

func TestDecide(t *testing.T) {
	m := func(id string, s float64) Match { return Match{SessionID: id, Score: s} }
	if r := decide(nil, 0.05); r.Best != nil || r.Ambiguous || len(r.Contenders) != 0 {
		t.Errorf("none: %+v", r)
	}
	if r := decide([]Match{m("a", 0.1)}, 0.05); r.Best == nil || r.Best.SessionID != "a" || r.Ambiguous {
		t.Errorf("one: %+v", r)
	}
	if r := decide([]Match{m("a", 0.6), m("b", 0.5)}, 0.05); r.Best == nil || r.Best.SessionID != "a" || r.Ambiguous || len(r.Matches) != 2 {
		t.Errorf("clear: %+v", r)
	}
	ms := []Match{m("a", 0.6), m("b", 0.58), m("c", 0.56), m("d", 0.3)}
	if r := decide(ms, 0.05); r.Best != nil || !r.Ambiguous || len(r.Contenders) != 3 || len(r.Matches) != 4 {
		t.Errorf("close: %+v", r)
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
		if got := cleanTitle(in); got != want {
			t.Errorf("cleanTitle(%q) = %q, want %q", in, got, want)
		}
	}
	if got := capTitle(strings.Repeat("word ", 30)); len([]rune(got)) != 80 || !strings.HasSuffix(got, "…") {
		t.Errorf("capTitle = %q", got)
	}
}

func TestFingerprintAndJaccard(t *testing.T) {
	if fp := fingerprint("The blender refund: refund the blender, order #4417."); fp != "4417 blender order refund" {
		t.Errorf("fingerprint = %q", fp)
	}
	if n := len(strings.Fields(fingerprint(strings.Repeat("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau ", 2)))); n != fingerprintSize {
		t.Errorf("fingerprint of %d terms", n)
	}
	for _, c := range []struct {
		a, b string
		want float64
	}{{"a b c", "b c d", 0.5}, {"", "", 1}, {"a", "", 0}, {"a b", "b a b", 1}} {
		if j := jaccard(c.a, c.b); j != c.want {
			t.Errorf("jaccard(%q, %q) = %v, want %v", c.a, c.b, j, c.want)
		}
	}
}

func TestKeywords(t *testing.T) {
	if got := keywords([]string{"We adopted a puppy. The puppy loves walks.", "Puppies need walks and a vet."}, 3); got != "puppy, walks, adopted" {
		t.Errorf("keywords = %q", got)
	}
	msgs := []store.Message{
		{Role: store.RoleSystem, Content: "secret system prompt"},
		{Role: store.RoleUser, Content: "puppy"},
		{Role: store.RoleTool, Content: "tool output"},
		{Role: store.RoleAssistant, Content: "walks"},
	}
	if got := keywordsOf(msgs); got != "puppy, walks" {
		t.Errorf("keywordsOf = %q (system and tool messages are left out)", got)
	}
}

func TestSupersedes(t *testing.T) {
	sum := func(seq int64) Doc { return Doc{Source: SourceSummary, SourceSeq: seq} }
	turns := func(seq int64) Doc { return Doc{Source: SourceTurns, SourceSeq: seq} }
	for _, c := range []struct {
		d, old Doc
		want   bool
	}{
		{sum(5), sum(4), true}, {sum(5), sum(5), true}, {sum(4), sum(5), false},
		{sum(1), turns(9), true}, {turns(9), sum(1), false}, {turns(3), turns(2), true},
	} {
		if got := c.d.supersedes(c.old); got != c.want {
			t.Errorf("%+v supersedes %+v = %v", c.d, c.old, got)
		}
	}
}

func TestOfflineTitle(t *testing.T) {
	ctx := context.Background()
	got, _ := offlineTitle(ctx, summary.Summary{}, []string{"Hi!", "Hello, I need to change my flight to Boston next week."})
	if got != "I need to change my flight to Boston next week" {
		t.Errorf("from turns: %q", got)
	}
	s := summary.Summary{Narrative: "Assistant: Tokyo is lovely in April. User: Which hotel in Shinjuku is close to the station? Assistant: The Keio Plaza."}
	if got, _ := offlineTitle(ctx, s, []string{"My blender is broken."}); got != "Which hotel in Shinjuku is close to the station" {
		t.Errorf("from an outline narrative: %q", got)
	}
	s = summary.Summary{Narrative: "The user asked for a refund of a broken blender. It was approved."}
	if got, _ := offlineTitle(ctx, s, nil); got != "The user asked for a refund of a broken blender" {
		t.Errorf("from a prose narrative: %q", got)
	}
	s = summary.Summary{Facts: []summary.Fact{{Key: "order_id", Value: "#4417"}}}
	if got, _ := offlineTitle(ctx, s, nil); got != "Order id: #4417" {
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

func TestLLMTitle(t *testing.T) {
	ctx := context.Background()
	m := &recLLM{reply: "Title: \"Refund for the broken blender from order 4417 and more words\"."}
	fn := llmTitle(m)
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
	m.err = errors.New("down")
	if _, err := fn(ctx, s, nil); err == nil {
		t.Error("a failing model is not an error")
	}
}

// The in-memory index drops a fenced write whose session was deleted after
// the fence opened, and forgets tombstones no open fence needs.
func TestMemoryIndexFence(t *testing.T) {
	x := NewMemoryIndex().(*memoryIndex)
	doc := Doc{SessionID: "s", UserID: "u", Source: SourceTurns, SourceSeq: 1, Title: "T"}

	before := x.fence()
	if err := x.Delete(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	after := x.fence()
	if x.upsert(doc, before) {
		t.Error("a write fenced before the delete was stored")
	}
	if err := x.pin("s", "u", "Pinned", before); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a pin fenced before the delete = %v, want ErrNotFound", err)
	}
	if !x.upsert(doc, after) {
		t.Error("a write fenced after the delete was dropped")
	}
	x.unfence(before)
	x.unfence(after)
	if len(x.open) != 0 || len(x.tombs) != 0 {
		t.Errorf("after the fences closed: %d open, %d tombstones", len(x.open), len(x.tombs))
	}
	// Deletes without an open fence leave no tombstone.
	_ = x.Delete(context.Background(), "s")
	if len(x.tombs) != 0 {
		t.Errorf("%d tombstones without fences", len(x.tombs))
	}
	// With a long-lived fence open, tombstones older than every open fence
	// are pruned as they accumulate.
	old := x.fence()
	for i := range 200 {
		_ = x.Delete(context.Background(), string(rune('a'+i%26))+strings.Repeat("x", i))
	}
	newer := x.fence()
	for i := range 200 {
		_ = x.Delete(context.Background(), "late"+strings.Repeat("y", i))
	}
	x.unfence(old) // newer still open: only tombstones after it are needed
	x.unfence(x.fence())
	if len(x.tombs) > 200 {
		t.Errorf("%d tombstones kept, want at most the 200 newer than the open fence", len(x.tombs))
	}
	x.unfence(newer)
	if len(x.tombs) != 0 || len(x.open) != 0 {
		t.Errorf("after the last fence: %d tombstones, %d open", len(x.tombs), len(x.open))
	}
}

// A document of another epoch or user is left over from a deleted
// incarnation: it never blocks the new one, and its pinned title does not
// carry over.
func TestMemoryIndexIncarnations(t *testing.T) {
	ctx := context.Background()
	x := NewMemoryIndex().(*memoryIndex)
	_ = x.Upsert(ctx, Doc{SessionID: "s", UserID: "u", Epoch: 1, Source: SourceSummary, SourceSeq: 50, Title: "Old"})
	_ = x.SetTitle(ctx, "s", "u", "Pinned")
	_ = x.Upsert(ctx, Doc{SessionID: "s", UserID: "u", Epoch: 2, Source: SourceSummary, SourceSeq: 60, Title: "New"})
	if d, _ := x.Get(ctx, "s", "u"); d == nil || d.Title != "New" || d.Pinned || d.Epoch != 2 {
		t.Errorf("new epoch: %+v", d)
	}
	_ = x.Upsert(ctx, Doc{SessionID: "s", UserID: "v", Source: SourceTurns, SourceSeq: 1, Title: "Other user"})
	if d, _ := x.Get(ctx, "s", "u"); d != nil {
		t.Errorf("u still sees %+v", d)
	}
	if d, _ := x.Get(ctx, "s", "v"); d == nil || d.Title != "Other user" {
		t.Errorf("v: %+v", d)
	}
}

func TestSketchTitle(t *testing.T) {
	cases := []struct {
		name  string
		s     *summary.Summary
		first []string
		want  string
	}{
		{"first user sentence", nil, []string{"Hi! I need a refund for order #1234. It arrived broken."}, "I need a refund for order #1234"},
		{"greeting stripped", nil, []string{"hello, where is my parcel?"}, "Where is my parcel"},
		{"skips blank messages", nil, []string{"", "  ", "Change my seat please"}, "Change my seat please"},
		{"long cut at a word", nil, []string{"My flight HAT170 on 2024-05-20 was cancelled and I want to rebook on a later flight."},
			"My flight HAT170 on 2024-05-20 was cancelled and I want to…"},
		{"from narrative", &summary.Summary{Narrative: "User: Asked about baggage allowance. Assistant: Explained."}, nil, "Asked about baggage allowance"},
		{"the user's words before the assistant's", &summary.Summary{Narrative: "Assistant: Welcome back to the help desk. User: My parcel to Lyon is late."}, nil, "My parcel to Lyon is late"},
		{"from facts", &summary.Summary{Facts: []summary.Fact{{Key: "order_id", Value: "#1234"}}}, nil, "Order id: #1234"},
		{"greeting skipped for a later message", nil, []string{"Hi", "My parcel never arrived at all"}, "My parcel never arrived at all"},
		{"greeting loses to the narrative", &summary.Summary{Narrative: "User: Asked about baggage allowance."}, []string{"Hello!"}, "Asked about baggage allowance"},
		{"short opener as a last resort", nil, []string{"Thanks"}, "Thanks"},
		{"nothing", &summary.Summary{}, nil, ""},
		{"nil", nil, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := sketchTitle(tc.s, tc.first)
			if got != tc.want {
				t.Fatalf("sketchTitle = %q, want %q", got, tc.want)
			}
			if utf8.RuneCountInString(got) > 60 {
				t.Fatalf("title has %d runes", utf8.RuneCountInString(got))
			}
		})
	}
	long := strings.Repeat("가나다라마바사아자차", 10)
	if got := sketchTitle(nil, []string{long}); utf8.RuneCountInString(got) != 60 || !strings.HasSuffix(got, "…") {
		t.Fatalf("unbroken long title %q", got)
	}
}
