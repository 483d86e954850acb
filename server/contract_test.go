package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-go/strata/internal/testutil"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

// TestImports: the HTTP layer depends on the memory and the catalogue, not
// on configuration or on a database driver.
func TestImports(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not found")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "github.com/strata-go/strata/autoconfig" || p == "github.com/strata-go/strata/db" ||
			strings.HasPrefix(p, "github.com/strata-go/strata/db/") || strings.Contains(p, "lib/pq") || strings.Contains(p, "sqlx") {
			t.Errorf("package server depends on %s", p)
		}
	}
}

// TestCreateSession: POST /v1/sessions creates the session in the store at
// once, empty, owned by its creator; appends go to created sessions only.
func TestCreateSession(t *testing.T) {
	t.Parallel()
	ts := stack{}.start(t)
	var created wireAppend
	r := ts.must(201, "POST", "/v1/sessions", keyAlice, `{"title": "  Trip to Lisbon  "}`, &created)
	if created.Title != "Trip to Lisbon" || created.Stored != 0 || created.Total != 0 || r.header.Get("Location") != "/v1/sessions/"+created.ID {
		t.Fatalf("create: %s", r)
	}
	id := created.ID
	var empty wireSession
	ts.must(200, "GET", "/v1/sessions/"+id, keyAlice, nil, &empty)
	if empty.Title != "Trip to Lisbon" || empty.MessageCount != 0 || len(empty.Messages) != 0 || empty.Summary != nil || empty.NextAfterSeq != nil {
		t.Fatalf("empty session: %+v", empty)
	}
	var ctx wireContext
	ts.must(200, "GET", "/v1/sessions/"+id+"/context", keyAlice, nil, &ctx)
	mc := ts.srv.mgr.Config()
	if ctx.Mode != "empty" || len(ctx.Messages) != 0 || ctx.Tokens.Budget != mc.ContextWindowTokens-mc.OutputReserveTokens {
		t.Fatalf("empty context: %+v", ctx)
	}
	var list listResponse
	ts.must(200, "GET", "/v1/sessions", keyAlice, nil, &list)
	if list.Total != 1 || len(list.Sessions) != 1 || list.Sessions[0].ID != id {
		t.Fatalf("the empty session is not listed: %+v", list)
	}
	// It belongs to alice: bob can neither see nor take it.
	ts.must(404, "GET", "/v1/sessions/"+id, keyBob, nil, nil)
	ts.must(404, "GET", "/v1/sessions/"+id+"/context", keyBob, nil, nil)
	ts.must(404, "POST", "/v1/sessions/"+id+"/messages", keyBob, turn("mine", ""), nil)
	ts.must(404, "DELETE", "/v1/sessions/"+id, keyBob, nil, nil)
	list = listResponse{}
	ts.must(200, "GET", "/v1/sessions", keyBob, nil, &list)
	if list.Total != 0 {
		t.Fatalf("bob lists alice's session: %+v", list)
	}

	var ap wireAppend
	ts.must(200, "POST", "/v1/sessions/"+id+"/messages", keyAlice, map[string]any{"turn": map[string]string{
		"user": "Flights to Lisbon in May?", "assistant": "Several.", "model_variant": "arco"}}, &ap)
	if ap.ID != id || ap.Stored != 2 || ap.Total != 2 {
		t.Fatalf("append: %+v", ap)
	}
	var sess wireSession
	ts.must(200, "GET", "/v1/sessions/"+id, keyAlice, nil, &sess)
	if sess.Title != "Trip to Lisbon" || sess.MessageCount != 2 || sess.Messages[0].Metadata != nil || sess.Messages[1].Metadata["model_variant"] != "arco" {
		t.Fatalf("after the first turn: %+v", sess)
	}

	// Sessions are created by POST /v1/sessions only.
	ts.must(404, "POST", "/v1/sessions/chat-42/messages", keyAlice, turn("hello?", ""), nil)
	ts.must(404, "GET", "/v1/sessions/chat-42", keyAlice, nil, nil)
	// A session created without title or body; deleting it.
	other := ts.create(keyAlice, nil)
	ts.must(204, "DELETE", "/v1/sessions/"+other, keyAlice, nil, nil)
	ts.must(404, "GET", "/v1/sessions/"+other, keyAlice, nil, nil)
	ts.must(404, "DELETE", "/v1/sessions/"+other, keyAlice, nil, nil)
	ts.must(404, "POST", "/v1/sessions/"+other+"/messages", keyAlice, turn("back?", ""), nil)
	ts.must(404, "DELETE", "/v1/sessions/never-existed", keyAlice, nil, nil)
}

// TestSessionsAcrossReplicas: two servers over one store (two replicas
// behind a load balancer) see a session as soon as either creates it.
func TestSessionsAcrossReplicas(t *testing.T) {
	t.Parallel()
	store, sums := memory.NewInMemoryStore(), summary.NewInMemoryStore(0)
	a := stack{store: store, sums: sums, noCatalog: true}.start(t)
	b := stack{store: store, sums: sums, noCatalog: true}.start(t)
	id := a.create(keyAlice, nil)
	var sess wireSession
	b.must(200, "GET", "/v1/sessions/"+id, keyAlice, nil, &sess)
	if sess.ID != id || sess.MessageCount != 0 {
		t.Fatalf("replica b: %+v", sess)
	}
	b.must(404, "GET", "/v1/sessions/"+id, keyBob, nil, nil)
	b.must(404, "POST", "/v1/sessions/"+id+"/messages", keyBob, turn("mine", ""), nil)
	b.must(200, "POST", "/v1/sessions/"+id+"/messages", keyAlice, turn("hello from b", "hi"), nil)
	sess = wireSession{}
	a.must(200, "GET", "/v1/sessions/"+id, keyAlice, nil, &sess)
	if sess.MessageCount != 2 || sess.Messages[0].Content != "hello from b" {
		t.Fatalf("replica a after b's append: %+v", sess)
	}
	b.must(204, "DELETE", "/v1/sessions/"+id, keyAlice, nil, nil)
	a.must(404, "GET", "/v1/sessions/"+id, keyAlice, nil, nil)
	a.must(404, "DELETE", "/v1/sessions/"+id, keyAlice, nil, nil)
}

// TestNotFoundIsIndistinguishable: on every endpoint and method, another
// user's session, a deleted one and one that never existed get byte-for-byte
// the same answer (same request id), and the probes change nothing.
func TestNotFoundIsIndistinguishable(t *testing.T) {
	t.Parallel()
	ts := stack{}.start(t)
	owned := ts.create(keyAlice, map[string]any{"messages": []map[string]string{{"role": "user", "content": "secret plans"}}})
	empty := ts.create(keyAlice, nil)
	gone := ts.create(keyAlice, nil)
	ts.must(204, "DELETE", "/v1/sessions/"+gone, keyAlice, nil, nil)

	probes := []struct {
		method, suffix string
		body           any
	}{
		{"GET", "", nil},
		{"GET", "?limit=1&after_seq=0", nil},
		{"GET", "/context", nil},
		{"GET", "/context?budget=100", nil},
		{"POST", "/messages", turn("let me in", "")},
		{"POST", "/messages", map[string]any{"messages": []map[string]string{{"role": "user", "content": "x"}}}},
		{"DELETE", "", nil},
	}
	for _, p := range probes {
		ref := ts.do(p.method, "/v1/sessions/never-existed"+p.suffix, keyBob, p.body, "X-Request-Id: probe-1")
		if ref.status != 404 {
			t.Fatalf("%s never-existed%s: %s", p.method, p.suffix, ref)
		}
		if e := ref.errorOf(t); e.Code != "not_found" || e.Error != "session not found" {
			t.Fatalf("%s never-existed%s: %+v", p.method, p.suffix, e)
		}
		for _, c := range []struct {
			who, key, id string
		}{
			{"bob on alice's session", keyBob, owned},
			{"bob on alice's empty session", keyBob, empty},
			{"bob on a deleted session", keyBob, gone},
			{"alice on her deleted session", keyAlice, gone},
			{"alice on a session that never existed", keyAlice, "never-existed"},
		} {
			r := ts.do(p.method, "/v1/sessions/"+c.id+p.suffix, c.key, p.body, "X-Request-Id: probe-1")
			if r.status != ref.status || !bytes.Equal(r.body, ref.body) {
				t.Errorf("%s %s%s, %s: %s; want %s", p.method, c.id, p.suffix, c.who, r, ref)
			}
			for name := range mergeKeys(r.header, ref.header) {
				if name != "Date" && r.header.Get(name) != ref.header.Get(name) {
					t.Errorf("%s %s%s, %s: header %s = %q, want %q", p.method, c.id, p.suffix, c.who, name, r.header.Get(name), ref.header.Get(name))
				}
			}
		}
	}
	var sess wireSession
	ts.must(200, "GET", "/v1/sessions/"+owned, keyAlice, nil, &sess)
	if sess.MessageCount != 1 || sess.Messages[0].Content != "secret plans" {
		t.Fatalf("the probes changed alice's session: %+v", sess)
	}
	ts.must(200, "GET", "/v1/sessions/"+empty, keyAlice, nil, &sess)
	ts.must(404, "GET", "/v1/sessions/never-existed", keyAlice, nil, nil) // not created by the probes
}

func mergeKeys(a, b http.Header) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// outageStore fails every call with an error wrapping
// store.ErrUnavailable while down is set, as the PostgreSQL store does
// when the database does not answer.
type outageStore struct {
	memory.MessageStore
	down atomic.Bool
}

var errOutage = fmt.Errorf("db: dial tcp 10.0.0.5:5432: connect: connection refused: %w", store.ErrUnavailable)

func (o *outageStore) Create(ctx context.Context, id, user string) error {
	if o.down.Load() {
		return errOutage
	}
	return o.MessageStore.Create(ctx, id, user)
}

func (o *outageStore) Append(ctx context.Context, id, user string, msgs ...store.Message) (store.AppendResult, error) {
	if o.down.Load() {
		return store.AppendResult{}, errOutage
	}
	return o.MessageStore.Append(ctx, id, user, msgs...)
}

func (o *outageStore) Tail(ctx context.Context, id, user string, n int) (store.Tail, error) {
	if o.down.Load() {
		return store.Tail{}, errOutage
	}
	return o.MessageStore.Tail(ctx, id, user, n)
}

func (o *outageStore) Range(ctx context.Context, id, user string, after, through int64, limit int) ([]store.Message, error) {
	if o.down.Load() {
		return nil, errOutage
	}
	return o.MessageStore.Range(ctx, id, user, after, through, limit)
}

func (o *outageStore) Delete(ctx context.Context, id, user string) error {
	if o.down.Load() {
		return errOutage
	}
	return o.MessageStore.Delete(ctx, id, user)
}

func (o *outageStore) Sessions(ctx context.Context, user string, limit, offset int) ([]store.SessionInfo, int, error) {
	if o.down.Load() {
		return nil, 0, errOutage
	}
	return o.MessageStore.Sessions(ctx, user, limit, offset)
}

// TestStoreOutage: while the store is unreachable every endpoint answers
// 503 with Retry-After and a JSON error, never a 500, and says nothing of
// the database; it works again when the store is back.
func TestStoreOutage(t *testing.T) {
	t.Parallel()
	store := &outageStore{MessageStore: memory.NewInMemoryStore()}
	logs := &testutil.Buffer{}
	ts := stack{store: store, logs: logs}.start(t)
	id := ts.create(keyAlice, map[string]any{"messages": []map[string]string{{"role": "user", "content": "hello"}}})
	requests := []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/sessions", nil},
		{"POST", "/v1/sessions", `{"title":"t","messages":[{"role":"user","content":"x"}]}`},
		{"POST", "/v1/sessions/" + id + "/messages", turn("still there?", "")},
		{"GET", "/v1/sessions/" + id, nil},
		{"GET", "/v1/sessions/" + id + "?after_seq=0&limit=1", nil},
		{"GET", "/v1/sessions/" + id + "/context", nil},
		{"GET", "/v1/sessions", nil},
		{"GET", "/v1/sessions?search=hello", nil},
		{"DELETE", "/v1/sessions/" + id, nil},
	}
	store.down.Store(true)
	for _, q := range requests {
		r := ts.do(q.method, q.path, keyAlice, q.body)
		if r.status != 503 {
			t.Errorf("%s %s during an outage: %s, want 503", q.method, q.path, r)
			continue
		}
		if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 || s > 30 {
			t.Errorf("%s %s: Retry-After %q", q.method, q.path, r.header.Get("Retry-After"))
		}
		e := r.errorOf(t)
		if e.Code != "unavailable" || strings.Contains(string(r.body), "10.0.0.5") {
			t.Errorf("%s %s: %+v", q.method, q.path, e)
		}
	}
	if !strings.Contains(logs.String(), "10.0.0.5") {
		t.Error("the outage is not logged")
	}
	store.down.Store(false)
	var sess wireSession
	ts.must(200, "GET", "/v1/sessions/"+id, keyAlice, nil, &sess)
	if sess.MessageCount != 1 {
		t.Fatalf("after the outage: %+v", sess)
	}
	var list listResponse
	ts.must(200, "GET", "/v1/sessions", keyAlice, nil, &list)
	if list.Total != 1 {
		t.Fatalf("sessions created during the outage: %+v", list)
	}
	ts.must(204, "DELETE", "/v1/sessions/"+id, keyAlice, nil, nil)
}

// TestReadiness: /readyz follows its checks and the shutdown.
func TestReadiness(t *testing.T) {
	t.Parallel()
	var failing atomic.Pointer[error]
	ts := stack{srvOpts: []Option{WithReadiness("dependency", func(context.Context) error {
		if e := failing.Load(); e != nil {
			return *e
		}
		return nil
	})}}.start(t)
	var st statusResponse
	ts.must(200, "GET", "/readyz", "", nil, &st)
	if st.Status != "ready" {
		t.Fatalf("ready: %+v", st)
	}
	down := errors.New("connection refused: db.internal:5432")
	failing.Store(&down)
	r := ts.must(503, "GET", "/readyz", "", nil, &st)
	if st.Status != "unavailable" || strings.Contains(string(r.body), "db.internal") || r.header.Get("Retry-After") == "" {
		t.Fatalf("readyz leaks the error or lacks Retry-After: %s", r)
	}
	if !strings.Contains(ts.logs.String(), "dependency: connection refused") {
		t.Error("the failed check is not logged by name")
	}
	ts.must(200, "GET", "/healthz", "", nil, nil)
	failing.Store(nil)
	ts.must(200, "GET", "/readyz", "", nil, nil)
	ts.srv.draining.Store(true)
	ts.must(503, "GET", "/readyz", "", nil, &st)
	if st.Status != "shutting down" {
		t.Fatalf("draining: %+v", st)
	}
}

// TestReadinessHangingChecks: checks that hang — one until its context
// ends, one ignoring its context — do not hold /readyz: every probe
// answers 503 with Retry-After while the check that ignores its context
// is still blocked (it is released only when the test ends), and both
// hanging checks are logged. The probe's limit is shortened so that the
// test is quick; it asserts what the probe answers, not how fast.
func TestReadinessHangingChecks(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	logs := &testutil.Buffer{}
	srv := stack{logs: logs, srvOpts: []Option{
		WithReadiness("fine", func(context.Context) error { return nil }),
		WithReadiness("slow", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }),
		WithReadiness("stuck", func(context.Context) error { <-release; return nil }),
	}}.build(t)
	srv.readyLimit = 200 * time.Millisecond
	ts := serveOn(t, srv, logs)
	t.Cleanup(func() { close(release) }) // the stuck checks end with the test
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := ts.try(context.Background(), "GET", "/readyz", "", nil)
				if err != nil || r.status != 503 || r.header.Get("Retry-After") == "" {
					t.Errorf("readyz with hanging checks: %v %s", err, r)
				}
			}()
		}
		wg.Wait()
	}()
	select {
	case <-answered:
	case <-time.After(time.Minute): // a hang guard, far above the limit
		t.Fatal("readyz waits for a check that ignores its context")
	}
	if logs := ts.logs.String(); !strings.Contains(logs, "did not answer") {
		t.Errorf("the check that ignores its context is not logged: %s", logs)
	}
}

// TestReadinessReportsBothHangingChecks: on a fake clock (testing/synctest),
// checkReady names both kinds of hanging check — the one that ends with its
// context and the one that ignores it — and returns at seven eighths of
// the limit, whatever the machine's load: the check that honours its
// context reports before the probe stops waiting.
func TestReadinessReportsBothHangingChecks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		s := &Server{readyLimit: 2 * time.Second, ready: []readiness{
			{"fine", func(context.Context) error { return nil }},
			{"slow", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }},
			{"stuck", func(context.Context) error { <-release; return nil }},
		}}
		start := time.Now()
		err := s.checkReady(context.Background())
		if err == nil || !strings.Contains(err.Error(), "slow: context deadline exceeded") || !strings.Contains(err.Error(), "did not answer within 1.75s") {
			t.Fatalf("checkReady: %v", err)
		}
		if took := time.Since(start); took != s.readyLimit*7/8 {
			t.Fatalf("checkReady answered after %s, want %s", took, s.readyLimit*7/8)
		}
	})
}

// TestContextBudget: the context is the manager's prompt, fitted to the
// requested budget, never above the manager's budget nor the request's.
func TestContextBudget(t *testing.T) {
	t.Parallel()
	mcfg := memory.DefaultConfig() // summaries off: the last 20 messages
	mcfg.ContextWindowTokens, mcfg.OutputReserveTokens = 1500, 500
	const managerBudget = 1000
	ts := stack{mcfg: &mcfg, cfg: Config{ContextBudget: 700}}.start(t)
	id := ts.create(keyAlice, nil)
	for i := range 10 {
		ts.must(200, "POST", "/v1/sessions/"+id+"/messages", keyAlice,
			turn(fmt.Sprintf("Question %d: %s", i, strings.Repeat("what about the parcel to Porto? ", 8)),
				fmt.Sprintf("Answer %d: %s", i, strings.Repeat("it left the depot this morning. ", 8))), nil)
	}
	h, err := ts.srv.mgr.Load(context.Background(), id, "alice")
	if err != nil || len(h.Messages) == 0 {
		t.Fatalf("Load: %d messages, %v", len(h.Messages), err)
	}
	meter := trimmer.New(1<<30, 0, ts.srv.mgr.Config().Estimator)
	if c := meter.Cost(h.Messages); c <= managerBudget {
		t.Fatalf("the history costs %d tokens: too little to test trimming", c)
	}
	for _, c := range []struct {
		query      string
		wantBudget int
	}{
		{"", 700},               // the server's default
		{"?budget=400", 400},    // smaller: a reserve for the manager
		{"?budget=1000", 1000},  // the manager's budget
		{"?budget=99999", 1000}, // never more than the manager's budget
	} {
		var got wireContext
		ts.must(200, "GET", "/v1/sessions/"+id+"/context"+c.query, keyAlice, nil, &got)
		want, _ := ts.srv.mgr.Prompt("", h.Messages, managerBudget-c.wantBudget)
		chat := toChat(t, got.Messages)
		if got.Tokens.Budget != c.wantBudget || got.Tokens.Total > c.wantBudget || got.OverBudget ||
			got.Tokens.Total != meter.Cost(chat) || got.Tokens.BeforeTrim != meter.Cost(h.Messages) ||
			got.Removed != len(h.Messages)-len(chat) || got.Removed == 0 {
			t.Errorf("context%s: %d messages, tokens %+v, removed %d, over %v", c.query, len(chat), got.Tokens, got.Removed, got.OverBudget)
		}
		if len(chat) != len(want) {
			t.Errorf("context%s: %d messages, the manager's prompt has %d", c.query, len(chat), len(want))
			continue
		}
		for i := range want {
			if chat[i].GetContent() != want[i].GetContent() || chat[i].GetType() != want[i].GetType() {
				t.Errorf("context%s: message %d differs from the manager's prompt", c.query, i)
			}
		}
	}
	// Too small for the last question: the answer after it goes, and the
	// question is cut to fit, with a marker.
	var tiny wireContext
	ts.must(200, "GET", "/v1/sessions/"+id+"/context?budget=30", keyAlice, nil, &tiny)
	question := h.Messages[len(h.Messages)-2].GetContent()
	if tiny.OverBudget || len(tiny.Messages) != 1 || tiny.Truncated != 1 || tiny.Tokens.Total > 30 ||
		tiny.Tokens.Total != meter.Cost(toChat(t, tiny.Messages)) || tiny.Removed != len(h.Messages)-1 {
		t.Fatalf("tiny budget: %+v", tiny)
	}
	if m := tiny.Messages[0]; m.Role != "user" || !strings.HasSuffix(m.Content, truncationMarker) ||
		!strings.HasPrefix(question, strings.TrimSuffix(m.Content, truncationMarker)) || len(m.Content) >= len(question) {
		t.Fatalf("tiny budget: message %+v is not the last question (%q) cut", m, question)
	}
	// Too small for even a message's overhead: nothing rather than too much.
	var none wireContext
	ts.must(200, "GET", "/v1/sessions/"+id+"/context?budget=10", keyAlice, nil, &none)
	if !none.OverBudget || len(none.Messages) != 0 || none.Tokens.Total != 0 || none.Tokens.Budget != 10 || none.Removed != len(h.Messages) {
		t.Fatalf("budget below a message's overhead: %+v", none)
	}
}

// panicStore panics on one session id.
type panicStore struct{ memory.MessageStore }

func (p panicStore) Range(ctx context.Context, id, user string, after, through int64, limit int) ([]store.Message, error) {
	if id == "boom" {
		panic("store exploded")
	}
	return p.MessageStore.Range(ctx, id, user, after, through, limit)
}

func (p panicStore) Tail(ctx context.Context, id, user string, n int) (store.Tail, error) {
	if id == "boom" {
		panic("store exploded")
	}
	return p.MessageStore.Tail(ctx, id, user, n)
}

func TestPanicRecovery(t *testing.T) {
	t.Parallel()
	logs := &testutil.Buffer{}
	ts := stack{store: panicStore{memory.NewInMemoryStore()}, noCatalog: true, logs: logs}.start(t)
	r := ts.do("GET", "/v1/sessions/boom", keyAlice, nil, "X-Request-Id: panic-1")
	if r.status != 500 {
		t.Fatalf("panic: %s", r)
	}
	if e := r.errorOf(t); e.RequestID != "panic-1" || e.Code != "internal" || strings.Contains(e.Error, "exploded") {
		t.Fatalf("panic response: %+v", e)
	}
	if !strings.Contains(logs.String(), "store exploded") || !strings.Contains(logs.String(), "request_id=panic-1") {
		t.Errorf("the panic is not logged with its request id")
	}
	ts.must(404, "GET", "/v1/sessions/calm", keyAlice, nil, nil) // still serving
	// Without a catalogue: search is 501; listing goes through the manager.
	ts.must(501, "GET", "/v1/sessions?search=x", keyAlice, nil, nil)
	id := ts.create(keyAlice, nil)
	var list listResponse
	ts.must(200, "GET", "/v1/sessions", keyAlice, nil, &list)
	if list.Total != 1 || list.Sessions[0].ID != id || list.Sessions[0].Title != "" {
		t.Fatalf("list without a catalogue: %+v", list)
	}
}
