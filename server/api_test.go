package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-go/strata/autoconfig"
	"github.com/strata-go/strata/internal/testutil"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

func TestAuthentication(t *testing.T) {
	t.Parallel()
	ts := startServer(t, testConfig(t))
	cases := []struct {
		name, header, wantMsg string
		invalidToken          bool
	}{
		{"missing", "", "missing API key", false},
		{"wrong key", "Bearer not-a-valid-key-0123456789", "invalid API key", true},
		{"basic", "Basic " + keyAlice, "malformed Authorization header", true},
		{"no token", "Bearer", "malformed Authorization header", true},
		{"two tokens", "Bearer " + keyAlice + " " + keyBob, "malformed Authorization header", true},
		{"key digest instead of key", "Bearer " + HashKey(keyBob), "invalid API key", true},
	}
	for _, c := range cases {
		for _, target := range []struct{ method, path string }{
			{"GET", "/v1/sessions"}, {"GET", "/v1/sessions/s1/context"}, {"POST", "/v1/sessions"}, {"GET", "/v1/nope"},
		} {
			var headers []string
			if c.header != "" {
				headers = append(headers, "Authorization: "+c.header)
			}
			r := ts.do(target.method, target.path, "", nil, headers...)
			if r.status != 401 {
				t.Fatalf("%s: %s %s: %s", c.name, target.method, target.path, r)
			}
			e := r.errorOf(t)
			if e.Code != "unauthorized" || !strings.Contains(e.Error, c.wantMsg) {
				t.Errorf("%s: error %+v", c.name, e)
			}
			wa := r.header.Get("WWW-Authenticate")
			if !strings.HasPrefix(wa, "Bearer ") || strings.Contains(wa, "invalid_token") != c.invalidToken {
				t.Errorf("%s: WWW-Authenticate %q", c.name, wa)
			}
		}
	}
	// The scheme is case-insensitive; both ways of configuring a key work.
	if r := ts.do("GET", "/v1/sessions", "", nil, "Authorization: bearer "+keyBob); r.status != 200 {
		t.Fatalf("bob: %s", r)
	}
	ts.must(200, "GET", "/v1/sessions", keyAlice, nil, nil)
	// The probes and the document need no key.
	ts.must(200, "GET", "/healthz", "", nil, nil)
	ts.must(200, "GET", "/readyz", "", nil, nil)
	ts.must(200, "GET", "/openapi.json", "", nil, nil)
}

// TestBadRequests covers the strict decoding and validation paths.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	ts := startServer(t, testConfig(t,
		"arc.reactor.memory.server.max-body-bytes=4096",
		"arc.reactor.memory.store.max-message-bytes=1024"))
	turn := func(u string) map[string]any { return map[string]any{"turn": map[string]string{"user": u}} }
	ts.must(200, "POST", "/v1/sessions/s1/messages", keyAlice, turn("hello"), nil)

	cases := []struct {
		name         string
		method, path string
		body         any
		headers      []string
		status       int
		code, want   string
	}{
		{"oversized body", "POST", "/v1/sessions/s1/messages", `{"turn":{"user":"` + strings.Repeat("x", 5000) + `"}}`, nil, 413, "body_too_large", "larger than 4096 bytes"},
		{"oversized chunked body", "POST", "/v1/sessions/s1/messages", io.MultiReader(strings.NewReader(`{"turn":{"user":"` + strings.Repeat("x", 5000) + `"}}`)), nil, 413, "body_too_large", "larger than 4096 bytes"},
		{"oversized create", "POST", "/v1/sessions", `{"title":"` + strings.Repeat("x", 5000) + `"}`, nil, 413, "body_too_large", "larger than 4096 bytes"},
		{"message over the store limit", "POST", "/v1/sessions/s1/messages", turn(strings.Repeat("y", 2000)), nil, 413, "message_too_large", "messages[0]: message too large: 2000 bytes, limit 1024"},
		{"malformed JSON", "POST", "/v1/sessions/s1/messages", `{"turn": {"user": "hi",}}`, nil, 400, "bad_request", "malformed JSON at byte"},
		{"truncated JSON", "POST", "/v1/sessions/s1/messages", `{"turn": {"user": "hi"`, nil, 400, "bad_request", "unexpected end of body"},
		{"unknown field", "POST", "/v1/sessions/s1/messages", `{"turn": {"user": "hi"}, "foo": 1}`, nil, 400, "bad_request", `unknown field "foo"`},
		{"unknown nested field", "POST", "/v1/sessions/s1/messages", `{"messages": [{"role": "user", "content": "hi", "colour": "red"}]}`, nil, 400, "bad_request", `unknown field "colour"`},
		{"seq is not an input", "POST", "/v1/sessions/s1/messages", `{"messages": [{"role": "user", "content": "hi", "seq": 3}]}`, nil, 400, "bad_request", `unknown field "seq"`},
		{"trailing data", "POST", "/v1/sessions/s1/messages", `{"turn": {"user": "hi"}} {"turn": {"user": "again"}}`, nil, 400, "bad_request", "unexpected data after the JSON object"},
		{"trailing garbage", "POST", "/v1/sessions/s1/messages", `{"turn": {"user": "hi"}} x`, nil, 400, "bad_request", "unexpected data after the JSON object"},
		{"empty body", "POST", "/v1/sessions/s1/messages", "", nil, 400, "bad_request", "empty body"},
		{"not an object", "POST", "/v1/sessions/s1/messages", `[1,2]`, nil, 400, "bad_request", "want a JSON object"},
		{"wrong type", "POST", "/v1/sessions/s1/messages", `{"turn": {"user": 42}}`, nil, 400, "bad_request", `field "turn.user": want a string`},
		{"nothing to append", "POST", "/v1/sessions/s1/messages", `{}`, nil, 400, "bad_request", "nothing to append"},
		{"turn and messages", "POST", "/v1/sessions/s1/messages", `{"turn":{"user":"a"},"messages":[{"role":"user","content":"b"}]}`, nil, 400, "bad_request", "not both"},
		{"turn without user", "POST", "/v1/sessions/s1/messages", `{"turn":{"assistant":"a"}}`, nil, 400, "bad_request", "turn.user is missing"},
		{"bad role", "POST", "/v1/sessions/s1/messages", `{"messages":[{"role":"bot","content":"b"}]}`, nil, 400, "invalid_message", `messages[0].role = "bot"`},
		{"tool without call id", "POST", "/v1/sessions/s1/messages", `{"messages":[{"role":"tool","content":"{}"}]}`, nil, 400, "invalid_message", "messages[0].tool_call_id is missing"},
		{"tool calls on a user message", "POST", "/v1/sessions/s1/messages", `{"messages":[{"role":"user","content":"x","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, nil, 400, "invalid_message", "only assistant messages make tool calls"},
		{"tool call without name", "POST", "/v1/sessions/s1/messages", `{"messages":[{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"arguments":"{}"}}]}]}`, nil, 400, "invalid_message", "tool_calls[0].function.name is missing"},
		{"NUL byte", "POST", "/v1/sessions/s1/messages", `{"messages":[{"role":"user","content":"a\u0000b"}]}`, nil, 400, "invalid_message", "NUL byte"},
		{"reserved metadata", "POST", "/v1/sessions/s1/messages", `{"messages":[{"role":"user","content":"a","metadata":{"strata.title":"x"}}]}`, nil, 400, "invalid_message", "reserved"},
		{"non-JSON content type", "POST", "/v1/sessions/s1/messages", `user=hi`, []string{"Content-Type: application/x-www-form-urlencoded"}, 415, "unsupported_media_type", "want application/json"},
		{"invalid session id", "POST", "/v1/sessions/bad%20id/messages", turn("x"), nil, 400, "bad_request", "invalid session id"},
		{"session id too long", "GET", "/v1/sessions/" + strings.Repeat("a", 129), nil, nil, 400, "bad_request", "invalid session id"},
		{"bad budget", "GET", "/v1/sessions/s1/context?budget=-5", nil, nil, 400, "bad_request", "query parameter budget"},
		{"bad limit", "GET", "/v1/sessions/s1?limit=0", nil, nil, 400, "bad_request", "query parameter limit"},
		{"bad after_seq", "GET", "/v1/sessions/s1?after_seq=x", nil, nil, 400, "bad_request", "query parameter after_seq"},
		{"bad list limit", "GET", "/v1/sessions?limit=1000", nil, nil, 400, "bad_request", "between 1 and 100"},
		{"empty search", "GET", "/v1/sessions?search=", nil, nil, 400, "bad_request", "search is empty"},
		{"long title", "POST", "/v1/sessions", map[string]string{"title": strings.Repeat("t", 201)}, nil, 400, "bad_request", "title is longer than 200"},
		{"unknown session", "GET", "/v1/sessions/nope", nil, nil, 404, "not_found", "session not found"},
		{"no such endpoint", "GET", "/v1/elsewhere", nil, nil, 404, "not_found", "no such endpoint"},
		{"method not allowed", "PUT", "/v1/sessions/s1", `{}`, nil, 405, "method_not_allowed", "method PUT not allowed"},
	}
	for _, c := range cases {
		r := ts.do(c.method, c.path, keyAlice, c.body, c.headers...)
		if r.status != c.status {
			t.Errorf("%s: %s, want %d", c.name, r, c.status)
			continue
		}
		e := r.errorOf(t)
		if e.Code != c.code || !strings.Contains(e.Error, c.want) {
			t.Errorf("%s: %+v, want code %s and …%s…", c.name, e, c.code, c.want)
		}
		if c.status == 405 && !strings.Contains(r.header.Get("Allow"), "GET") {
			t.Errorf("%s: Allow = %q", c.name, r.header.Get("Allow"))
		}
	}
	// Nothing of the above was stored; the connection-closing 413 did not
	// break the client.
	var sess wireSession
	ts.must(200, "GET", "/v1/sessions/s1", keyAlice, nil, &sess)
	if sess.MessageCount != 1 {
		t.Fatalf("rejected requests stored messages: %d", sess.MessageCount)
	}
	// A request id is echoed when sensible, replaced otherwise.
	if r := ts.do("GET", "/healthz", "", nil, "X-Request-Id: abc-123"); r.header.Get(RequestIDHeader) != "abc-123" {
		t.Errorf("request id not echoed: %q", r.header.Get(RequestIDHeader))
	}
	if r := ts.do("GET", "/healthz", "", nil, "X-Request-Id: "+strings.Repeat("z", 200)); len(r.header.Get(RequestIDHeader)) != 24 {
		t.Errorf("long request id kept: %q", r.header.Get(RequestIDHeader))
	}
}

// TestCreateWithoutMessages: a session created empty exists for its creator
// until the first message, which carries its title from then on.
func TestCreateWithoutMessages(t *testing.T) {
	t.Parallel()
	ts := startServer(t, testConfig(t))
	var created wireAppend
	ts.must(201, "POST", "/v1/sessions", keyAlice, `{"title": "  Trip to Lisbon  "}`, &created)
	if created.Title != "Trip to Lisbon" || created.Stored != 0 || created.Total == nil || *created.Total != 0 {
		t.Fatalf("create: %+v", created)
	}
	var empty wireSession
	ts.must(200, "GET", "/v1/sessions/"+created.ID, keyAlice, nil, &empty)
	if empty.Title != "Trip to Lisbon" || empty.MessageCount != 0 || len(empty.Messages) != 0 || empty.Summary != nil {
		t.Fatalf("empty session: %+v", empty)
	}
	var ctx wireContext
	ts.must(200, "GET", "/v1/sessions/"+created.ID+"/context", keyAlice, nil, &ctx)
	if ctx.Mode != "empty" || len(ctx.Messages) != 0 || ctx.Tokens.Budget != 128000-4096 {
		t.Fatalf("empty context: %+v", ctx)
	}
	// Another user can neither see nor take it.
	ts.must(404, "GET", "/v1/sessions/"+created.ID, keyBob, nil, nil)
	ts.must(404, "POST", "/v1/sessions/"+created.ID+"/messages", keyBob, `{"turn":{"user":"mine"}}`, nil)
	ts.must(404, "DELETE", "/v1/sessions/"+created.ID, keyBob, nil, nil)

	ts.must(200, "POST", "/v1/sessions/"+created.ID+"/messages", keyAlice, `{"turn":{"user":"Flights to Lisbon in May?","assistant":"Several.","model_variant":"arco"}}`, nil)
	var sess wireSession
	ts.must(200, "GET", "/v1/sessions/"+created.ID, keyAlice, nil, &sess)
	if sess.Title != "Trip to Lisbon" || sess.MessageCount != 2 || sess.Messages[0].Metadata != nil || sess.Messages[1].Metadata["model_variant"] != "arco" {
		t.Fatalf("after the first message: %+v", sess)
	}
	if m, _ := ts.srv.store.Range(context.Background(), created.ID, 0, 1<<62, 1); len(m) != 1 || m[0].Metadata[MetadataTitle] != "Trip to Lisbon" {
		t.Fatalf("title not stored with the first message: %+v", m)
	}
	// Creating with neither title nor body works too.
	ts.must(201, "POST", "/v1/sessions", keyAlice, nil, &created)
	ts.must(204, "DELETE", "/v1/sessions/"+created.ID, keyAlice, nil, nil)
	ts.must(404, "GET", "/v1/sessions/"+created.ID, keyAlice, nil, nil)
}

// panicStore panics on one session id.
type panicStore struct{ *memory.InMemoryStore }

func (p panicStore) Owner(ctx context.Context, id string) (string, error) {
	if id == "boom" {
		panic("store exploded")
	}
	return p.InMemoryStore.Owner(ctx, id)
}

// failingStore fails every owner lookup when broken is set.
type failingStore struct {
	memory.MessageStore
	broken atomic.Bool
}

func (f *failingStore) Owner(ctx context.Context, id string) (string, error) {
	if f.broken.Load() {
		return "", errors.New("connection refused: db.internal:5432")
	}
	return f.MessageStore.Owner(ctx, id)
}

// newRuntime builds a runtime around store by hand, as New's callers do.
func newRuntime(t *testing.T, store memory.MessageStore, svc summary.Service, opts ...memory.Option) *autoconfig.Runtime {
	t.Helper()
	acfg := testConfig(t)
	sums := summary.NewInMemoryStore(0)
	mgr, err := memory.NewManager(store, acfg.Memory, append([]memory.Option{memory.WithSummaries(sums, svc), memory.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &autoconfig.Runtime{Config: acfg, Manager: mgr, Messages: store, Summaries: sums, Summarizer: svc}
}

func TestPanicRecovery(t *testing.T) {
	t.Parallel()
	logs := &testutil.Buffer{}
	rt := newRuntime(t, panicStore{memory.NewInMemoryStoreWith()}, summary.NewExtractiveService())
	cfg, err := ConfigFrom(testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(rt, cfg, WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ts := serveOn(t, srv, logs)
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
	// Search without a catalogue: 501; listing falls back to the store.
	ts.must(501, "GET", "/v1/sessions?search=x", keyAlice, nil, nil)
	ts.must(200, "GET", "/v1/sessions", keyAlice, nil, nil)
}

func TestReadiness(t *testing.T) {
	t.Parallel()
	store := &failingStore{MessageStore: memory.NewInMemoryStore()}
	rt := newRuntime(t, store, summary.NewExtractiveService())
	cfg, err := ConfigFrom(testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	var extra atomic.Pointer[error]
	srv, err := New(rt, cfg, WithLogger(slog.New(slog.DiscardHandler)),
		WithReadiness(func(context.Context) error {
			if e := extra.Load(); e != nil {
				return *e
			}
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	ts := serveOn(t, srv, &testutil.Buffer{})
	ts.must(200, "GET", "/readyz", "", nil, nil)
	store.broken.Store(true)
	r := ts.must(503, "GET", "/readyz", "", nil, nil)
	if strings.Contains(string(r.body), "db.internal") || r.header.Get("Retry-After") == "" {
		t.Fatalf("readyz leaks the error or lacks Retry-After: %s", r)
	}
	ts.must(200, "GET", "/healthz", "", nil, nil)
	// A store error on an API call: 500 without details.
	r = ts.must(500, "GET", "/v1/sessions/s1/context", keyAlice, nil, nil)
	if e := r.errorOf(t); e.Error != "internal error" {
		t.Fatalf("store error: %+v", e)
	}
	store.broken.Store(false)
	down := errors.New("dependency down")
	extra.Store(&down)
	ts.must(503, "GET", "/readyz", "", nil, nil)
	extra.Store(nil)
	ts.must(200, "GET", "/readyz", "", nil, nil)
	srv.draining.Store(true)
	var st statusResponse
	ts.must(503, "GET", "/readyz", "", nil, &st)
	if st.Status != "shutting down" {
		t.Fatalf("draining: %+v", st)
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, memory.NewInMemoryStore(), summary.NewExtractiveService())
	defer rt.Close()
	for _, c := range []struct {
		keys []APIKey
		want string
	}{
		{nil, "no API keys configured"},
		{[]APIKey{{UserID: "a", Key: "short"}}, "shorter than 16"},
		{[]APIKey{{UserID: "", Key: keyAlice}}, "missing or invalid user id"},
		{[]APIKey{{UserID: "a", SHA256: "zz"}}, "64 hexadecimal"},
		{[]APIKey{{UserID: "a", Key: keyAlice, SHA256: HashKey(keyAlice)}}, "not both"},
		{[]APIKey{{UserID: "a", Key: keyAlice}, {UserID: "b", SHA256: HashKey(keyAlice)}}, "API keys 1 and 2 are the same key"},
	} {
		_, err := New(rt, Config{APIKeys: c.keys})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("keys %+v: %v, want …%s…", c.keys, err, c.want)
		}
	}
	if _, err := New(nil, Config{}); err == nil {
		t.Error("nil runtime accepted")
	}
	// A key-env variable that is not set names the variable.
	acfg, err := autoconfig.LoadWith(autoconfig.LoadOptions{Environ: []string{}, Overrides: baseOverrides()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), acfg); err == nil || !strings.Contains(err.Error(), "STRATA_TEST_KEY_ALICE") {
		t.Fatalf("Open without the key variable: %v", err)
	}
}

func TestKeyring(t *testing.T) {
	t.Parallel()
	kr, err := newKeyring([]APIKey{{UserID: "alice", Key: keyAlice}, {UserID: "bob", SHA256: strings.ToUpper(HashKey(keyBob))}, {UserID: "carol", Key: "carol-key-0123456789abc"}})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{keyAlice: "alice", keyBob: "bob", "carol-key-0123456789abc": "carol", "nope": "", "": ""} {
		got, ok := kr.lookup(key)
		if got != want || ok != (want != "") {
			t.Errorf("lookup(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
	// The configured plain keys are not kept.
	rt := newRuntime(t, memory.NewInMemoryStore(), summary.NewExtractiveService())
	srv, err := New(rt, Config{APIKeys: []APIKey{{UserID: "alice", Key: keyAlice, Plaintext: true}}}, WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if len(srv.Config().APIKeys) != 0 {
		t.Fatal("Config keeps the API keys")
	}
}

func TestValidSessionID(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]bool{
		"3f2b8c1e-9a4d-4c7e-8f1a-2b3c4d5e6f70": true, "chat-42": true, "tenant:1234@eu": true, "a": true,
		"": false, "-x": false, "a b": false, "a/b": false, "é": false, strings.Repeat("a", 128): true, strings.Repeat("a", 129): false,
	} {
		if validSessionID(id) != want {
			t.Errorf("validSessionID(%q) != %v", id, want)
		}
	}
	if id := newSessionID(); len(id) != 36 || id[14] != '4' || !validSessionID(id) {
		t.Errorf("newSessionID() = %q", id)
	}
}

func TestListenAndServe(t *testing.T) {
	t.Parallel()
	logs := &testutil.Buffer{}
	acfg := testConfig(t, "arc.reactor.memory.server.api-keys=carol=key:carol-plain-key-0123456789")
	srv, err := Open(context.Background(), acfg, WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "in plain text") || strings.Contains(logs.String(), "carol-plain-key") {
		t.Errorf("no warning about the plain key, or the key is logged: %s", logs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "listening") {
		if time.Now().After(deadline) {
			t.Fatal("ListenAndServe did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ListenAndServe: %v", err)
	}
	rt := newRuntime(t, memory.NewInMemoryStore(), summary.NewExtractiveService())
	srv, err = New(rt, Config{APIKeys: []APIKey{{UserID: "a", Key: keyAlice}}}, WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.ListenAndServe(context.Background()); err == nil || !strings.Contains(err.Error(), "no listen address") {
		t.Fatalf("ListenAndServe without an address: %v", err)
	}
}
