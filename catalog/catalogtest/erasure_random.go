package catalogtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// RunErasureRandom is the randomized erasure test: two replicas — two
// managers, each with its catalogue, on replicas[0] and replicas[1], which
// share their storage (the same PostgreSQL database; the same in-memory
// stores) — hold conversations that state secrets of many shapes (numbers
// with and without separators, e-mail addresses, clauses with odd white
// space, preferences long enough for the ledger to cut), fold them with
// the extractive summarizer or with a scripted one that rewrites what it
// copies (digits regrouped, white space folded, case changed, long values
// cut with "…", paraphrased), under both policies, with the second
// replica's summaries sometimes turned off. Every message stating a
// secret is then erased, on either replica, while the other goes on
// folding and refreshing its catalogue; afterwards, and after more turns,
// no read path of either replica — messages, the model's view, the
// summary (as shown and as stored), the export, the catalogue's document,
// listing and search — holds any form of a secret, and a fact a surviving
// message states is still in the summary.
//
// The seed is printed; STRATA_ERASURE_SEED replays one, and
// STRATA_ERASURE_CASES sets the number of cases (default 24, 6 with
// -short). Every (secret, read path, replica) checked counts as a case in
// the final log line.
//
// Given the same Env twice (the in-memory stores, which serve one
// process), both roles are played by one manager, whose summaries are on.
func RunErasureRandom(t *testing.T, replicas [2]Env) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("STRATA_ERASURE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("STRATA_ERASURE_SEED: %v", err)
		}
		seed = v
	}
	cases := 24
	if testing.Short() {
		cases = 6
	}
	if s := os.Getenv("STRATA_ERASURE_CASES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("STRATA_ERASURE_CASES: %v", err)
		}
		cases = v
	}
	t.Logf("erasure seed %d (STRATA_ERASURE_SEED=%d replays it), %d cases", seed, seed, cases)
	var checks atomic.Int64
	for i := range cases {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		c := randomCase(rng)
		if replicas[0] == replicas[1] {
			c.offB = "same"
		}
		name := fmt.Sprintf("%d/%s/%s/%s", i, c.pol, c.kind, c.offB)
		if c.fact {
			name += "/fact"
		}
		if c.slowEmbedder {
			name += "/slow-embedder"
		}
		t.Run(name, func(t *testing.T) {
			c.run(t, replicas, rng, &checks)
		})
	}
	t.Logf("erasure seed %d: %d checks of (secret, read path, replica)", seed, checks.Load())
}

// erasureCase is one randomized scenario.
type erasureCase struct {
	pol  memory.Policy
	kind string // "extractive" or "rewriting"
	offB string // "on" or "off": replica B's summaries; "same": B is A
	// fact: the secrets' facts are erased with ForgetFact, not their
	// messages with Forget.
	fact bool
	// slowEmbedder: the catalogues embed in 0–50 ms.
	slowEmbedder bool
}

// jittered is an embedder that takes 0–50 ms per call.
type jittered struct{ catalog.Embedder }

func (j jittered) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	time.Sleep(time.Duration(rand.IntN(50)) * time.Millisecond)
	return j.Embedder.EmbedDocuments(ctx, texts)
}

func randomCase(rng *rand.Rand) erasureCase {
	c := erasureCase{pol: memory.PolicyParity, kind: "extractive", offB: "on"}
	if rng.IntN(2) == 0 {
		c.pol = memory.PolicyChunked
	}
	if rng.IntN(2) == 0 {
		c.kind = "rewriting"
	}
	if rng.IntN(3) == 0 {
		c.offB = "off"
	}
	c.fact = rng.IntN(4) == 0
	c.slowEmbedder = rng.IntN(4) == 0
	return c
}

// secret is one value to erase: what the user says, and its marker — a
// part every form of it keeps (its digits, or a made-up word).
type secret struct {
	said   string
	digits string // the marker of a number, compared on digits alone
	word   string // the marker of text, compared case-insensitively
}

// leaks reports whether text holds any form of s.
func (s secret) leaks(text string) bool {
	if s.digits != "" {
		for _, run := range digitRuns(text) {
			if strings.Contains(run, s.digits) {
				return true
			}
		}
		return false
	}
	return strings.Contains(strings.ToLower(text), s.word)
}

// digitRuns returns the digits of each run of text made of digits and the
// separators numbers are written with.
func digitRuns(text string) []string {
	var out []string
	var b strings.Builder
	for _, r := range text + "x" {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case strings.ContainsRune(" \t\n-./()+", r):
		default:
			if b.Len() > 0 {
				out = append(out, b.String())
				b.Reset()
			}
		}
	}
	return out
}

// madeUp returns a made-up word: no summarizer, title or stemmer makes it
// out of anything else.
func madeUp(rng *rand.Rand) string {
	const cons, vow = "bdfgklmnprstvz", "aeiou"
	var b strings.Builder
	b.WriteString("q")
	for range 4 {
		b.WriteByte(cons[rng.IntN(len(cons))])
		b.WriteByte(vow[rng.IntN(len(vow))])
	}
	return b.String()
}

// digitString returns n random digits, the first not 0.
func digitString(rng *rand.Rand, n int) string {
	b := []byte{byte('1' + rng.IntN(9))}
	for len(b) < n {
		b = append(b, byte('0'+rng.IntN(10)))
	}
	return string(b)
}

// spaces returns a random run of white space.
func spaces(rng *rand.Rand) string {
	return []string{" ", "  ", " \t", "   ", "\u00a0"}[rng.IntN(5)]
}

// newSecret returns a secret of a random shape.
func newSecret(rng *rand.Rand) secret {
	switch rng.IntN(6) {
	case 0: // a card number, grouped by spaces or hyphens, or not at all
		d := digitString(rng, 16)
		sep := []string{" ", "-", "", "  "}[rng.IntN(4)]
		grouped := d[:4] + sep + d[4:8] + sep + d[8:12] + sep + d[12:]
		return secret{said: "My card number is " + grouped + ", please keep it on file.", digits: d}
	case 1: // an account number of 12 digits
		d := digitString(rng, 12)
		return secret{said: "My account number is " + d + " at the bank.", digits: d}
	case 2: // a phone number with separators
		d := digitString(rng, 10)
		return secret{said: "Call me at (" + d[:3] + ") " + d[3:6] + "-" + d[6:] + " after lunch.", digits: d}
	case 3: // an e-mail address
		w := madeUp(rng)
		return secret{said: "My email is " + w + "." + digitString(rng, 3) + "@example.org, write there.", word: w}
	case 4: // a clause with odd white space
		w := madeUp(rng)
		return secret{said: "I'm allergic to" + spaces(rng) + w + spaces(rng) + "and" + spaces(rng) + "shellfish.", word: w}
	default: // a preference long enough for the ledger to cut
		w := madeUp(rng)
		return secret{said: "I prefer deliveries to the " + w + " side door between nine and eleven in the morning on weekdays, " +
			"because the front porch is being rebuilt all summer and nobody hears the bell there.", word: w}
	}
}

// rewriting is a summarizer standing in for an LLM that rewrites what it
// copies: every number of ten digits or more with its separators dropped,
// e-mail addresses upper-cased, order numbers kept, and a paraphrase of
// each user sentence with its white space folded, cut past 120 characters
// with "…". It reports no provenance, as an LLM does not.
func rewriting() summary.Service {
	numRE := regexp.MustCompile(`\d[\d \t\-().]{8,}\d`)
	mailRE := regexp.MustCompile(`[A-Za-z0-9.]+@example\.org`)
	orderRE := regexp.MustCompile(`ORD-\d+`)
	return summary.ServiceFunc(func(_ context.Context, req summary.Request) (summary.Result, error) {
		var res summary.Result
		var narr []string
		for _, m := range req.Messages {
			if m.GetType() != llms.ChatMessageTypeHuman {
				continue
			}
			text := m.GetContent()
			for i, n := range numRE.FindAllString(text, -1) {
				d := strings.Map(func(r rune) rune {
					if r >= '0' && r <= '9' {
						return r
					}
					return -1
				}, n)
				res.Facts = append(res.Facts, summary.Fact{Key: fmt.Sprintf("number_%d", i+1), Value: d, Category: summary.Numeric})
			}
			if e := mailRE.FindString(text); e != "" {
				res.Facts = append(res.Facts, summary.Fact{Key: "email", Value: strings.ToUpper(e), Category: summary.Entity})
			}
			if o := orderRE.FindString(text); o != "" {
				res.Facts = append(res.Facts, summary.Fact{Key: "order_id", Value: o, Category: summary.Entity})
			}
			p := strings.Join(strings.Fields(text), " ")
			for _, sent := range strings.SplitAfter(p, ". ") {
				if strings.Contains(sent, "prefer") || strings.Contains(sent, "allergic") {
					v := strings.TrimSpace(sent)
					if r := []rune(v); len(r) > 120 {
						v = string(r[:119]) + "…"
					}
					res.Facts = append(res.Facts, summary.Fact{Key: "preference", Value: v, Category: summary.Condition})
				}
			}
			narr = append(narr, "The customer said that "+strings.TrimSuffix(strings.ToLower(p[:1])+p[1:], ".")+".")
		}
		if len(narr) > 6 {
			narr = narr[len(narr)-6:]
		}
		res.Narrative = strings.Join(narr, " ")
		if res.IsEmpty() {
			res.Narrative = "The customer is being helped."
		}
		return res, nil
	})
}

// replica is one manager with its catalogue.
type replica struct {
	mgr *memory.Manager
	cat *catalog.Catalog
	st  Env
}

func (c erasureCase) replica(t *testing.T, st Env, summaries bool) *replica {
	t.Helper()
	cfg := memory.DefaultConfig()
	cfg.Enabled = summaries
	cfg.Policy = c.pol
	cfg.RecentMessageCount, cfg.BufferMessageCount, cfg.TriggerMessageCount = 4, 4, 6
	cfg.MaxFactValueLen = 120
	cfg.FailureCooldown, cfg.MaxFailureCooldown = 0, 0
	cfg.LoadGrace, cfg.SupersedeDelay = time.Minute, time.Millisecond
	var svc summary.Service = summary.NewExtractiveService()
	if c.kind == "rewriting" {
		svc = rewriting()
	}
	var opts []memory.Option
	if summaries {
		opts = append(opts, memory.WithSummaries(st.Summaries, svc))
	}
	mgr, err := memory.NewManager(st.Store, cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var copts []catalog.Option
	if c.slowEmbedder {
		// A 0–50 ms embedder widens the window in which a refresh that
		// read the session before an erasure could write after it.
		copts = append(copts, catalog.WithEmbedder(jittered{catalog.NewLexicalEmbedder(0)}, "jittered-lexical"))
	}
	cat, err := catalog.New(mgr, st.Index, copts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cat.Close()
		_ = mgr.Close()
	})
	return &replica{mgr: mgr, cat: cat, st: st}
}

// settle waits for the replica's folds, loads once (folding what is
// stale) and waits for its catalogue.
func (r *replica) settle(t *testing.T, ctx context.Context, session, user string) {
	t.Helper()
	if err := r.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.mgr.Load(ctx, session, user); err != nil {
		t.Fatal(err)
	}
	if err := r.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.cat.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// readPaths returns the text of every read path of the session on r.
func (r *replica) readPaths(t *testing.T, ctx context.Context, session, user, query string) map[string]string {
	t.Helper()
	out := map[string]string{}
	msgs, err := r.mgr.Messages(ctx, session, user, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(msgs)
	out["messages"] = string(raw)
	h, err := r.mgr.Load(ctx, session, user)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range h.Messages {
		b.WriteString(m.GetContent() + "\n")
	}
	out["view"] = b.String()
	sum, err := r.mgr.Summary(ctx, session, user)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = json.Marshal(sum)
	out["summary"] = string(raw)
	stored, err := r.st.Summaries.Get(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = json.Marshal(stored)
	out["stored summary"] = string(raw)
	snap, err := r.mgr.Export(ctx, session, user)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = json.Marshal(snap)
	out["export"] = string(raw)
	doc, err := r.st.Index.Get(ctx, session, user)
	if err != nil {
		t.Fatal(err)
	}
	if doc != nil {
		out["catalogue document"] = doc.Title + "\n" + doc.Text
	}
	page, err := r.cat.List(ctx, user, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	for _, e := range page.Sessions {
		b.WriteString(e.Title + "\n" + e.Preview + "\n")
	}
	out["catalogue listing"] = b.String()
	res, err := r.cat.Search(ctx, user, query, 10)
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	for _, m := range res.Matches {
		b.WriteString(m.Title + "\n" + m.Text + "\n")
	}
	out["search"] = b.String()
	return out
}

func (c erasureCase) run(t *testing.T, replicas [2]Env, rng *rand.Rand, checks *atomic.Int64) {
	ctx := t.Context()
	a := c.replica(t, replicas[0], true)
	b := a
	if c.offB != "same" {
		b = c.replica(t, replicas[1], c.offB == "on")
	}
	tok := token(t)
	session, user := "rnd-"+tok, "user-"+tok
	secrets := make([]secret, 2+rng.IntN(3))
	for i := range secrets {
		secrets[i] = newSecret(rng)
	}
	keep := "ORD-" + digitString(rng, 6)
	turns := 12 + rng.IntN(10)
	at := map[int][]int{} // turn → secrets said in it
	for i := range secrets {
		n := 2 + rng.IntN(turns-2)
		at[n] = append(at[n], i)
	}
	echo := rng.IntN(2) == 0 // the assistant repeats a secret
	for i := 1; i <= turns; i++ {
		text := fmt.Sprintf("Turn %d: I would like to talk about %s, please.", i, topics[rng.IntN(len(topics))])
		answer := fmt.Sprintf("Of course, let us look at %s together.", topics[rng.IntN(len(topics))])
		if i == 1 {
			text = "Hello, my order number is " + keep + " and the kettle arrived damaged."
		}
		for _, s := range at[i] {
			text += " " + secrets[s].said
			if echo {
				answer = "Noted: " + secrets[s].said
			}
		}
		if err := a.mgr.SaveTurn(ctx, session, user, text, answer); err != nil {
			t.Fatal(err)
		}
	}
	a.settle(t, ctx, session, user)
	before, err := a.mgr.Summary(ctx, session, user)
	if err != nil {
		t.Fatal(err)
	}
	if c.fact {
		c.forgetFacts(t, ctx, a, session, user, secrets, checks)
		return
	}
	// The erasures, on either replica, race the other replica's turns,
	// folds and catalogue refreshes.
	msgs, err := a.mgr.Messages(ctx, session, user, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var erase []int64
	for _, m := range msgs {
		if slices.ContainsFunc(secrets, func(s secret) bool { return s.leaks(m.Content) }) {
			erase = append(erase, m.Seq)
		}
	}
	rng.Shuffle(len(erase), func(i, j int) { erase[i], erase[j] = erase[j], erase[i] })
	forgetter, other := a, b
	if rng.IntN(2) == 0 {
		forgetter, other = b, a
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for len(erase) > 0 {
			n := 1 + rng.IntN(len(erase))
			if err := forgetter.mgr.Forget(ctx, session, user, erase[:n]...); err != nil {
				t.Errorf("forget %v: %v", erase[:n], err)
				return
			}
			erase = erase[n:]
		}
	}()
	go func() {
		defer wg.Done()
		for i := range 4 {
			if err := other.mgr.SaveTurn(ctx, session, user, fmt.Sprintf("Meanwhile %d: what about %s?", i, topics[i]), "Let me check."); err != nil {
				t.Error(err)
				return
			}
			if _, err := other.mgr.Load(ctx, session, user); err != nil {
				t.Error(err)
				return
			}
			other.cat.Folded(ctx, memory.FoldEvent{SessionID: session, UserID: user})
		}
	}()
	wg.Wait()
	if t.Failed() {
		return
	}
	var query strings.Builder
	for _, s := range secrets {
		query.WriteString(s.said + " ")
	}
	check := func(when string) {
		t.Helper()
		for _, r := range []*replica{a, b} {
			r.settle(t, ctx, session, user)
		}
		for ri, r := range []*replica{a, b} {
			for path, text := range r.readPaths(t, ctx, session, user, query.String()) {
				for _, s := range secrets {
					checks.Add(1)
					if s.leaks(text) {
						t.Errorf("%s: replica %d's %s holds %q:\n%s", when, ri, path, s.said, text)
					}
				}
			}
		}
	}
	check("after the erasures")
	for i := range 3 {
		if err := b.mgr.SaveTurn(ctx, session, user, fmt.Sprintf("Later %d: and %s?", i, topics[(i+3)%len(topics)]), "Sure."); err != nil {
			t.Fatal(err)
		}
	}
	check("after more turns")
	// What a surviving message states survives: the order number said in
	// the first turn.
	if before == nil || !slices.ContainsFunc(before.Facts, func(f summary.Fact) bool { return f.Value == keep }) {
		return // not folded into the summary in the first place
	}
	after, err := a.mgr.Summary(ctx, session, user)
	if err != nil {
		t.Fatal(err)
	}
	if after == nil || !slices.ContainsFunc(after.Facts, func(f summary.Fact) bool { return strings.Contains(f.Value, keep) }) {
		t.Errorf("the fact %s, which a surviving message states, is gone: %+v", keep, after)
	}
}

// RunToolErasure checks that provenance is each message's own: erasing a
// tool result and the answer after it removes what only they state and
// keeps a fact an earlier message states, though the erased ones repeat
// it (the fold that read them all recorded one span), for both policies.
func RunToolErasure(t *testing.T, newEnv func(t *testing.T) Env) {
	for _, pol := range []memory.Policy{memory.PolicyParity, memory.PolicyChunked} {
		t.Run(string(pol), func(t *testing.T) {
			ctx := t.Context()
			c := erasureCase{pol: pol, kind: "extractive", offB: "on"}
			r := c.replica(t, newEnv(t), true)
			tok := token(t)
			session, user := "tool-"+tok, "user-"+tok
			save := func(msgs ...llms.ChatMessage) {
				t.Helper()
				if err := r.mgr.SaveMessages(ctx, session, user, msgs...); err != nil {
					t.Fatal(err)
				}
			}
			save(llms.HumanChatMessage{Content: "My order number is ORD-48213 and the kettle arrived damaged."},
				llms.AIChatMessage{Content: "Sorry to hear that, let me check order ORD-48213."})
			save(llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: "c1", Type: "function",
				FunctionCall: &llms.FunctionCall{Name: "lookup_order", Arguments: `{"order":"ORD-48213"}`}}}},
				llms.ToolChatMessage{ID: "c1", Content: `{"order":"ORD-48213","tracking":"TRK-775120","courier_phone":"555-0188"}`},
				llms.AIChatMessage{Content: "Order ORD-48213 is with the courier, tracking TRK-775120."})
			for i := range 8 {
				save(llms.HumanChatMessage{Content: fmt.Sprintf("Turn %d: I would like to talk about %s, please.", i, topics[i])},
					llms.AIChatMessage{Content: "Of course."})
			}
			r.settle(t, ctx, session, user)
			sum, err := r.mgr.Summary(ctx, session, user)
			if err != nil || sum == nil {
				t.Fatalf("no summary: %v", err)
			}
			has := func(s *summary.Summary, v string) bool {
				return s != nil && slices.ContainsFunc(s.Facts, func(f summary.Fact) bool { return strings.Contains(f.Value, v) })
			}
			if !has(sum, "ORD-48213") || !has(sum, "TRK-775120") {
				t.Fatalf("the order and tracking numbers were not folded: %+v", sum.Facts)
			}
			msgs, err := r.mgr.Messages(ctx, session, user, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			var erase []int64
			for _, m := range msgs {
				if m.Role == store.RoleTool || strings.Contains(m.Content, "with the courier") {
					erase = append(erase, m.Seq)
				}
			}
			if err := r.mgr.Forget(ctx, session, user, erase...); err != nil {
				t.Fatal(err)
			}
			after, err := r.mgr.Summary(ctx, session, user)
			if err != nil {
				t.Fatal(err)
			}
			if !has(after, "ORD-48213") {
				t.Errorf("erasing the tool result and the answer removed the order number an earlier message states: %+v", after)
			}
			if has(after, "TRK-775120") || strings.Contains(after.Narrative, "TRK-775120") {
				t.Errorf("the tracking number only the erased messages state is still there: %+v", after)
			}
			if !strings.Contains(after.Narrative, "ORD-48213") && strings.Contains(sum.Narrative, "User: My order number is ORD-48213") {
				t.Errorf("the earlier message's narrative sentence went: %q", after.Narrative)
			}
			// Later folds do not bring the tracking number back, nor lose the order.
			for i := range 6 {
				save(llms.HumanChatMessage{Content: fmt.Sprintf("Later %d: about %s.", i, topics[i+1])}, llms.AIChatMessage{Content: "Sure."})
			}
			r.settle(t, ctx, session, user)
			final, err := r.mgr.Summary(ctx, session, user)
			if err != nil {
				t.Fatal(err)
			}
			if has(final, "TRK-775120") || !has(final, "ORD-48213") {
				t.Errorf("after more folds: %+v", final)
			}
		})
	}
}

// RunToolCallErasure checks that erasing an assistant message with tool
// calls erases the results answering them (store.ToolResultsOf) and
// nothing else, that erasing one result alone keeps its call, and that the
// session's export imports again afterwards (no result is left without
// its call).
func RunToolCallErasure(t *testing.T, newEnv func(t *testing.T) Env) {
	ctx := t.Context()
	c := erasureCase{pol: memory.PolicyChunked, kind: "extractive", offB: "on"}
	r := c.replica(t, newEnv(t), true)
	tok := token(t)
	session, user := "call-"+tok, "user-"+tok
	call := func(ids ...string) llms.AIChatMessage {
		var tcs []llms.ToolCall
		for _, id := range ids {
			tcs = append(tcs, llms.ToolCall{ID: id, Type: "function",
				FunctionCall: &llms.FunctionCall{Name: "charge", Arguments: `{"card":"4111 1111 1111 1111"}`}})
		}
		return llms.AIChatMessage{ToolCalls: tcs}
	}
	if err := r.mgr.SaveMessages(ctx, session, user,
		llms.HumanChatMessage{Content: "Charge my card, please."},
		call("c1", "c2"),
		llms.ToolChatMessage{ID: "c2", Content: `{"ok":true,"card":"4111 1111 1111 1111"}`},
		llms.ToolChatMessage{ID: "c1", Content: `{"ok":true}`},
		llms.AIChatMessage{Content: "Both charges went through."},
		call("c3"),
		llms.ToolChatMessage{ID: "c3", Content: `{"receipt":"R-1"}`},
		llms.AIChatMessage{Content: "Here is the receipt."}); err != nil {
		t.Fatal(err)
	}
	msgs, err := r.mgr.Messages(ctx, session, user, 0, 0)
	if err != nil || len(msgs) != 8 {
		t.Fatalf("%d messages, %v", len(msgs), err)
	}
	seq := func(i int) int64 { return msgs[i].Seq }
	left := func() []int64 {
		t.Helper()
		got, err := r.mgr.Messages(ctx, session, user, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, m := range got {
			out = append(out, m.Seq)
		}
		return out
	}
	// A result alone: its call stays.
	if err := r.mgr.Forget(ctx, session, user, seq(6)); err != nil {
		t.Fatal(err)
	}
	if got, want := left(), []int64{seq(0), seq(1), seq(2), seq(3), seq(4), seq(5), seq(7)}; !slices.Equal(got, want) {
		t.Fatalf("after erasing a result: %v, want %v", got, want)
	}
	// A call: both its results go with it, the answer after them stays.
	if err := r.mgr.Forget(ctx, session, user, seq(1)); err != nil {
		t.Fatal(err)
	}
	if got, want := left(), []int64{seq(0), seq(4), seq(5), seq(7)}; !slices.Equal(got, want) {
		t.Fatalf("after erasing a call: %v, want %v", got, want)
	}
	snap, err := r.mgr.Export(ctx, session, user)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range snap.Messages {
		if strings.Contains(m.Content, "4111") {
			t.Fatalf("the export still holds an erased result: %+v", m)
		}
	}
	snap.SessionID = session + "-again"
	if err := r.mgr.Import(ctx, snap); err != nil {
		t.Fatalf("the export of a session whose call was erased does not import: %v", err)
	}
	if got, err := r.mgr.Messages(ctx, snap.SessionID, user, 0, 0); err != nil || len(got) != 4 {
		t.Fatalf("imported %d messages, %v; want 4", len(got), err)
	}
}

// forgetFacts erases with ForgetFact every fact of the session's summary
// that holds a form of a secret, and checks that those secrets stay out of
// the summary (as shown and as stored) and of the model's facts and
// narrative, after the erasure and after more turns and folds (parity
// re-reads the messages that stated them, which stay).
func (c erasureCase) forgetFacts(t *testing.T, ctx context.Context, r *replica, session, user string, secrets []secret, checks *atomic.Int64) {
	t.Helper()
	sum, err := r.mgr.Summary(ctx, session, user)
	if err != nil {
		t.Fatal(err)
	}
	if sum == nil {
		return
	}
	var gone []secret
	for _, f := range sum.Facts {
		for _, s := range secrets {
			if s.leaks(f.Value) || s.leaks(f.Previous) {
				if err := r.mgr.ForgetFact(ctx, session, user, f.Key); err != nil {
					t.Fatalf("forget fact %s: %v", f.Key, err)
				}
				gone = append(gone, s)
				break
			}
		}
	}
	check := func(when string) {
		t.Helper()
		r.settle(t, ctx, session, user)
		shown, err := r.mgr.Summary(ctx, session, user)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := r.st.Summaries.Get(ctx, session)
		if err != nil {
			t.Fatal(err)
		}
		h, err := r.mgr.Load(ctx, session, user)
		if err != nil {
			t.Fatal(err)
		}
		var blocks strings.Builder
		for _, m := range h.Messages {
			if m.GetType() == llms.ChatMessageTypeSystem {
				blocks.WriteString(m.GetContent() + "\n")
			}
		}
		paths := map[string]string{"summary": summaryText(shown), "stored summary": summaryText(stored), "view's blocks": blocks.String()}
		for path, text := range paths {
			for _, s := range gone {
				checks.Add(1)
				if s.leaks(text) {
					t.Errorf("%s: the %s holds the forgotten %q:\n%s", when, path, s.said, text)
				}
			}
		}
	}
	check("after ForgetFact")
	for i := range 4 {
		if err := r.mgr.SaveTurn(ctx, session, user, fmt.Sprintf("Later %d: and %s?", i, topics[(i+5)%len(topics)]), "Sure."); err != nil {
			t.Fatal(err)
		}
	}
	check("after more turns")
}
