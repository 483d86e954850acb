package catalogtest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/memorytest"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// The secrets of the erasure scenario: said once, early.
const (
	secretEmail = "jane.doe.4821@example.com"
	secretOrder = "ORD-99317"
)

// leaked reports which secret text holds, "" when none.
func leaked(text string) string {
	low := strings.ToLower(text)
	for _, s := range []string{secretEmail, secretOrder, "4821@", "99317"} {
		if strings.Contains(low, strings.ToLower(s)) {
			return s
		}
	}
	return ""
}

// token returns a random string unique to one test run, so that the
// scenarios can run again and again against one shared database.
func token(*testing.T) string { return strings.ToLower(rand.Text()[:12]) }

// RunErasure runs the erasure scenarios on the stores newEnv returns
// (called once per subtest), for both policies and two summarizers — the
// offline extractive one and a scripted LLM that copies every e-mail
// address and order number it is shown into facts and narrative:
//
//   - Forget: a secret (an e-mail address and an order number) said once
//     early in a 40-turn conversation is folded into facts and narrative,
//     then its message is erased; it is absent from every read path —
//     messages, the model's view, the summary, the catalogue's document,
//     title, listing and search, the export — and still absent after 20
//     more turns and their folds.
//   - ForgetFact: the fact is erased; it stays out of the facts and the
//     narrative through 10 more turns and their folds (parity re-reads the
//     message that stated it), until the user states it again.
func RunErasure(t *testing.T, newEnv func(t *testing.T) Env) {
	for _, pol := range []memory.Policy{memory.PolicyParity, memory.PolicyChunked} {
		for _, sum := range []string{"extractive", "llm"} {
			t.Run(fmt.Sprintf("Forget/%s/%s", pol, sum), func(t *testing.T) {
				testForgetMessage(t, newEnv(t), pol, sum)
			})
			t.Run(fmt.Sprintf("ForgetFact/%s/%s", pol, sum), func(t *testing.T) {
				testForgetFact(t, newEnv(t), pol, sum)
			})
		}
	}
}

// erasureRig is one manager with its catalogue.
type erasureRig struct {
	t       *testing.T
	ctx     context.Context
	mgr     *memory.Manager
	cat     *catalog.Catalog
	idx     catalog.Index
	session string
	user    string
	calls   *atomic.Int64
}

func newErasureRig(t *testing.T, st Env, pol memory.Policy, kind string) *erasureRig {
	t.Helper()
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	cfg.Policy = pol
	cfg.FailureCooldown, cfg.MaxFailureCooldown = 0, 0
	cfg.LoadGrace = time.Minute
	cfg.SupersedeDelay = time.Millisecond
	calls := new(atomic.Int64)
	var svc summary.Service = summary.NewExtractiveService()
	if kind == "llm" {
		svc = summary.NewLLMService(&scriptedLLM{calls: calls})
	}
	mgr, err := memory.NewManager(st.Store, cfg, memory.WithSummaries(st.Summaries, svc))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New(mgr, st.Index)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cat.Close(); err != nil {
			t.Error(err)
		}
		if err := mgr.Close(); err != nil {
			t.Error(err)
		}
	})
	tok := token(t)
	return &erasureRig{t: t, ctx: t.Context(), mgr: mgr, cat: cat, idx: st.Index, calls: calls,
		session: "erasure-" + tok, user: "user-" + tok}
}

// topics vary the conversation, so that the extractive summarizer has
// sentences to choose from.
var topics = []string{
	"the blue kettle delivery", "a refund for the toaster", "the warranty of the blender",
	"the store opening hours", "changing the delivery address to the office", "the loyalty points balance",
	"a gift wrap option", "the missing receipt", "the colour of the kettle lid", "the courier's phone call",
}

// turn saves user turn i (1-based) and the assistant's answer.
func (r *erasureRig) turn(i int) {
	r.t.Helper()
	text := fmt.Sprintf("Turn %d: I would like to talk about %s, please.", i, topics[i%len(topics)])
	answer := fmt.Sprintf("Of course, let us look at %s together.", topics[i%len(topics)])
	if i == 2 {
		text = "My email is " + secretEmail + " and my order number is " + secretOrder + ", please keep them on file."
		answer = "Thank you, I have noted your contact details and your order."
	}
	if err := r.mgr.SaveTurn(r.ctx, r.session, r.user, text, answer); err != nil {
		r.t.Fatal(err)
	}
}

// settle waits for the folds the turns asked for, loads once (which folds
// what is stale), and waits for the catalogue.
func (r *erasureRig) settle() memory.History {
	r.t.Helper()
	if err := r.mgr.Flush(r.ctx); err != nil {
		r.t.Fatal(err)
	}
	h, err := r.mgr.Load(r.ctx, r.session, r.user)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.mgr.Flush(r.ctx); err != nil {
		r.t.Fatal(err)
	}
	if err := r.cat.Flush(r.ctx); err != nil {
		r.t.Fatal(err)
	}
	return h
}

// summaryText is everything the summary holds.
func summaryText(s *summary.Summary) string {
	if s == nil {
		return ""
	}
	parts := []string{s.Narrative}
	for _, f := range s.Facts {
		parts = append(parts, f.Key, f.Value, f.Previous)
	}
	return strings.Join(parts, "\n")
}

// factsText is the summary's facts.
func factsText(s *summary.Summary) string {
	if s == nil {
		return ""
	}
	var parts []string
	for _, f := range s.Facts {
		parts = append(parts, f.Value, f.Previous)
	}
	return strings.Join(parts, "\n")
}

// conversation plays the 40-turn conversation that states the secret
// early, lets its folds finish, and returns the session's summary.
func (r *erasureRig) conversation() *summary.Summary {
	r.t.Helper()
	for i := 1; i <= 40; i++ {
		r.turn(i)
	}
	r.settle()
	sum, err := r.mgr.Summary(r.ctx, r.session, r.user)
	if err != nil {
		r.t.Fatal(err)
	}
	return sum
}

// readPaths returns every read path's text, by name.
func (r *erasureRig) readPaths() map[string]string {
	r.t.Helper()
	out := map[string]string{}
	msgs, err := r.mgr.Messages(r.ctx, r.session, r.user, 0, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Content + "\n")
	}
	out["messages"] = b.String()
	h, err := r.mgr.Load(r.ctx, r.session, r.user)
	if err != nil {
		r.t.Fatal(err)
	}
	b.Reset()
	for _, m := range h.Messages {
		b.WriteString(m.GetContent() + "\n")
	}
	out["view"] = b.String()
	sum, err := r.mgr.Summary(r.ctx, r.session, r.user)
	if err != nil {
		r.t.Fatal(err)
	}
	out["summary"] = summaryText(sum)
	snap, err := r.mgr.Export(r.ctx, r.session, r.user)
	if err != nil {
		r.t.Fatal(err)
	}
	raw, err := json.Marshal(snap)
	if err != nil {
		r.t.Fatal(err)
	}
	out["export"] = exportText(r.t, raw)
	out["journal"] = journalText(r.ctx, r.t, r.mgr, r.session, r.user)
	doc, err := r.idx.Get(r.ctx, r.session, r.user)
	if err != nil {
		r.t.Fatal(err)
	}
	if doc != nil {
		out["catalogue document"] = doc.Title + "\n" + doc.Text
	}
	page, err := r.cat.List(r.ctx, r.user, 10, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	b.Reset()
	for _, e := range page.Sessions {
		b.WriteString(e.Title + "\n" + e.Preview + "\n")
	}
	out["catalogue listing"] = b.String()
	res, err := r.cat.Search(r.ctx, r.user, "email "+secretEmail+" order "+secretOrder, 10)
	if err != nil {
		r.t.Fatal(err)
	}
	b.Reset()
	for _, m := range res.Matches {
		b.WriteString(m.Title + "\n" + m.Text + "\n")
	}
	out["search"] = b.String()
	return out
}

// exportText is the text an exported snapshot (raw, its JSON) holds: every
// string in it, one per line, except its timestamps and the forgotten
// entries' digests, where the digits of the order number turn up by
// chance (a created_at of 09:37:54.199317Z holds "99317").
func exportText(t testing.TB, raw []byte) string {
	t.Helper()
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if k != "forgotten" && k != "at" && !strings.HasSuffix(k, "_at") {
					walk(k, e)
				}
			}
		case []any:
			for _, e := range v {
				walk(key, e)
			}
		case string:
			b.WriteString(key + ": " + v + "\n")
		}
	}
	walk("", doc)
	return b.String()
}

// absent fails the test for every read path that holds a secret.
func (r *erasureRig) absent(when string) {
	r.t.Helper()
	for path, text := range r.readPaths() {
		if s := leaked(text); s != "" {
			r.t.Errorf("%s: %s holds %q:\n%s", when, path, s, text)
		}
	}
}

func testForgetMessage(t *testing.T, st Env, pol memory.Policy, kind string) {
	r := newErasureRig(t, st, pol, kind)
	sum := r.conversation()
	if leaked(factsText(sum)) == "" || sum == nil || leaked(sum.Narrative) == "" {
		t.Fatalf("the secret was not folded into facts and narrative: %+v", sum)
	}
	paths := r.readPaths()
	for _, p := range []string{"messages", "export", "catalogue document", "journal"} {
		if leaked(paths[p]) == "" {
			t.Fatalf("before the erasure, %s does not hold the secret:\n%s", p, paths[p])
		}
	}
	msgs, err := r.mgr.Messages(r.ctx, r.session, r.user, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var secretSeq int64
	for _, m := range msgs {
		if strings.Contains(m.Content, secretEmail) {
			secretSeq = m.Seq
		}
	}
	before := len(msgs)
	// An unknown seq changes nothing.
	if err := r.mgr.Forget(r.ctx, r.session, r.user, secretSeq, msgs[len(msgs)-1].Seq+1000); !errors.Is(err, store.ErrUnknownMessage) {
		t.Fatalf("forget with an unknown seq: %v, want ErrUnknownMessage", err)
	}
	if got, _ := r.mgr.Messages(r.ctx, r.session, r.user, 0, 0); len(got) != before {
		t.Fatalf("a refused erasure removed messages: %d, want %d", len(got), before)
	}
	if s, _ := r.mgr.Summary(r.ctx, r.session, r.user); leaked(summaryText(s)) == "" {
		t.Fatal("a refused erasure changed the summary")
	}
	// Another user cannot erase it.
	if err := r.mgr.Forget(r.ctx, r.session, "mallory", secretSeq); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("forget by another user: %v, want ErrNotOwner", err)
	}
	if err := r.mgr.Forget(r.ctx, r.session, r.user, secretSeq); err != nil {
		t.Fatal(err)
	}
	if n, err := r.mgr.Count(r.ctx, r.session, r.user); err != nil || n != before-1 {
		t.Fatalf("count after erasure %d, %v; want %d", n, err, before-1)
	}
	after, err := r.mgr.Summary(r.ctx, r.session, r.user)
	if err != nil {
		t.Fatal(err)
	}
	if kind == "llm" {
		// An LLM's summary cites no message: it is never shown again as it
		// was, whatever the model wrote, and a fold rebuilds it from the
		// surviving messages.
		if after != nil {
			t.Fatalf("an untraced summary touched by the erasure is still shown: %+v", after)
		}
		r.settle()
		if after, err = r.mgr.Summary(r.ctx, r.session, r.user); err != nil || after == nil {
			t.Fatalf("the summary was not rebuilt after the erasure: %+v, %v", after, err)
		}
		if after.UpToSeq < sum.UpToSeq {
			t.Fatalf("the rebuilt summary covers through %d, before %d", after.UpToSeq, sum.UpToSeq)
		}
	}
	// Nothing else goes: every fact that did not hold the secret stays,
	// and so does the narrative's other content.
	if after == nil || strings.TrimSpace(after.Narrative) == "" {
		t.Fatalf("the erasure removed the whole narrative: %+v", after)
	}
	for _, f := range sum.Facts {
		if leaked(f.Value+" "+f.Previous) != "" {
			continue
		}
		// A rebuilt summary (llm) may cover more messages: a newer value of
		// the same fact is as good.
		if !slices.ContainsFunc(after.Facts, func(g summary.Fact) bool { return g.Key == f.Key && (g.Value == f.Value || kind == "llm") }) {
			t.Errorf("the erasure removed the unrelated fact %s = %s", f.Key, f.Value)
		}
	}
	r.absent("right after the erasure")
	for i := 41; i <= 60; i++ {
		r.turn(i)
	}
	r.settle()
	r.absent("after 20 more turns")
	memorytest.CheckJournal(t, r.ctx, r.mgr, r.session, r.user)
	if s, _ := r.mgr.Summary(r.ctx, r.session, r.user); s == nil || s.UpToSeq <= after.UpToSeq {
		t.Fatalf("no fold after the erasure: %+v (was through %d)", s, after.UpToSeq)
	}
}

func testForgetFact(t *testing.T, st Env, pol memory.Policy, kind string) {
	r := newErasureRig(t, st, pol, kind)
	sum := r.conversation()
	key := ""
	for _, f := range sum.Facts {
		if strings.Contains(strings.ToLower(f.Value), secretEmail) {
			key = f.Key
		}
	}
	if key == "" {
		t.Fatalf("no fact holds the e-mail address: %+v", sum.Facts)
	}
	if err := r.mgr.ForgetFact(r.ctx, r.session, r.user, "no_such_key"); !errors.Is(err, store.ErrNoSuchFact) {
		t.Fatalf("forget an unknown fact: %v, want ErrNoSuchFact", err)
	}
	if err := r.mgr.ForgetFact(r.ctx, r.session, "mallory", key); !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("forget a fact of another user's session: %v, want ErrNotOwner", err)
	}
	if !strings.Contains(journalText(r.ctx, t, r.mgr, r.session, r.user), secretEmail) {
		t.Fatal("before ForgetFact, the journal does not hold the value")
	}
	if err := r.mgr.ForgetFact(r.ctx, r.session, r.user, key); err != nil {
		t.Fatal(err)
	}
	memorytest.CheckJournal(t, r.ctx, r.mgr, r.session, r.user)
	gone := func(when string) {
		t.Helper()
		if strings.Contains(strings.ToLower(journalText(r.ctx, t, r.mgr, r.session, r.user)), secretEmail) {
			t.Errorf("%s: the journal holds the forgotten value", when)
		}
		s, err := r.mgr.Summary(r.ctx, r.session, r.user)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(strings.ToLower(summaryText(s)), secretEmail) {
			t.Errorf("%s: the summary holds the forgotten value: %s", when, summaryText(s))
		}
		h, err := r.mgr.Load(r.ctx, r.session, r.user)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range h.Messages {
			if m.GetType() == llms.ChatMessageTypeSystem && strings.Contains(strings.ToLower(m.GetContent()), secretEmail) {
				t.Errorf("%s: the model's facts or narrative hold the forgotten value: %s", when, m.GetContent())
			}
		}
	}
	gone("right after ForgetFact")
	for i := 41; i <= 50; i++ {
		r.turn(i)
	}
	r.settle()
	gone("after 10 more turns")
	// The user states it again: it may be remembered again.
	if err := r.mgr.SaveTurn(r.ctx, r.session, r.user, "Please note my email again: "+secretEmail+".", "Noted."); err != nil {
		t.Fatal(err)
	}
	for i := 52; i <= 75; i++ {
		r.turn(i)
	}
	r.settle()
	s, err := r.mgr.Summary(r.ctx, r.session, r.user)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.ToLower(factsText(s)), secretEmail) {
		t.Errorf("restated after the erasure, the e-mail address is not remembered again: %+v", s.Facts)
	}
	memorytest.CheckJournal(t, r.ctx, r.mgr, r.session, r.user)
}

// scriptedLLM is a chat model standing in for an LLM summarizer: it copies
// every e-mail address and order number of its prompt — the messages to
// fold and the summary so far — into facts and narrative, as a model
// would, and adds a sentence about the topic of the newest turn.
type scriptedLLM struct{ calls *atomic.Int64 }

var (
	emailRE = regexp.MustCompile(`[a-z0-9.]+@example\.com`)
	orderRE = regexp.MustCompile(`ORD-[0-9]+`)
	turnRE  = regexp.MustCompile(`talk about ([a-z' ]+)`)
)

// GenerateContent implements llms.Model.
func (m *scriptedLLM) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	m.calls.Add(1)
	var prompt strings.Builder
	for _, mc := range msgs {
		for _, p := range mc.Parts {
			if tp, ok := p.(llms.TextContent); ok {
				prompt.WriteString(tp.Text + "\n")
			}
		}
	}
	text := prompt.String()
	type fact struct {
		Key      string `json:"key"`
		Value    string `json:"value"`
		Category string `json:"category"`
	}
	var facts []fact
	narr := []string{"The customer is being helped with their purchases."}
	if e := emailRE.FindString(text); e != "" {
		facts = append(facts, fact{"email", e, "ENTITY"})
		narr = append(narr, "The customer's email is "+e+".")
	}
	if o := orderRE.FindString(text); o != "" {
		facts = append(facts, fact{"order_id", o, "ENTITY"})
		narr = append(narr, "The customer's order is "+o+".")
	}
	if ts := turnRE.FindAllStringSubmatch(text, -1); len(ts) > 0 {
		topic := ts[len(ts)-1][1]
		facts = append(facts, fact{"last_topic", topic, "STATE"})
		narr = append(narr, "Lately they asked about "+topic+".")
	}
	raw, err := json.Marshal(map[string]any{"narrative": strings.Join(narr, " "), "facts": facts})
	if err != nil {
		return nil, err
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: string(raw)}}}, nil
}

// Call implements llms.Model.
func (m *scriptedLLM) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// journalText is the session's journal, for the erasure scenarios' read
// paths: its strings, as exportText reads them (timestamps left out).
func journalText(ctx context.Context, t testing.TB, mgr *memory.Manager, sessionID, userID string) string {
	t.Helper()
	j, err := mgr.Journal(ctx, sessionID, userID)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	return exportText(t, raw)
}
