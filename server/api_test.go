package server

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/strata-go/strata/internal/testutil"
	"github.com/strata-go/strata/memory"
)

func TestAuthentication(t *testing.T) {
	t.Parallel()
	ts := stack{}.start(t)
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
			{"GET", "/v1/sessions"}, {"GET", "/v1/sessions/s-1/context"}, {"POST", "/v1/sessions"}, {"GET", "/v1/nope"},
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
	mcfg := testMemoryConfig()
	mcfg.MaxMessageBytes = 1024
	ts := stack{mcfg: &mcfg, cfg: Config{MaxBodyBytes: 4096}}.start(t)
	turn := func(u string) map[string]any { return map[string]any{"turn": map[string]string{"user": u}} }
	s1 := ts.create(keyAlice, nil)
	ts.must(200, "POST", "/v1/sessions/"+s1+"/messages", keyAlice, turn("hello"), nil)
	msgs, sess := "/v1/sessions/"+s1+"/messages", "/v1/sessions/"+s1

	cases := []struct {
		name         string
		method, path string
		body         any
		headers      []string
		status       int
		code, want   string
	}{
		{"oversized body", "POST", msgs, `{"turn":{"user":"` + strings.Repeat("x", 5000) + `"}}`, nil, 413, "body_too_large", "larger than 4096 bytes"},
		{"oversized chunked body", "POST", msgs, io.MultiReader(strings.NewReader(`{"turn":{"user":"` + strings.Repeat("x", 5000) + `"}}`)), nil, 413, "body_too_large", "larger than 4096 bytes"},
		{"oversized create", "POST", "/v1/sessions", `{"title":"` + strings.Repeat("x", 5000) + `"}`, nil, 413, "body_too_large", "larger than 4096 bytes"},
		{"message over the store limit", "POST", msgs, turn(strings.Repeat("y", 2000)), nil, 413, "message_too_large", "messages[0]: message too large: 2000 bytes, limit 1024"},
		{"malformed JSON", "POST", msgs, `{"turn": {"user": "hi",}}`, nil, 400, "bad_request", "malformed JSON at byte"},
		{"truncated JSON", "POST", msgs, `{"turn": {"user": "hi"`, nil, 400, "bad_request", "unexpected end of body"},
		{"unknown field", "POST", msgs, `{"turn": {"user": "hi"}, "foo": 1}`, nil, 400, "bad_request", `unknown field "foo"`},
		{"unknown nested field", "POST", msgs, `{"messages": [{"role": "user", "content": "hi", "colour": "red"}]}`, nil, 400, "bad_request", `unknown field "colour"`},
		{"seq is not an input", "POST", msgs, `{"messages": [{"role": "user", "content": "hi", "seq": 3}]}`, nil, 400, "bad_request", `unknown field "seq"`},
		{"trailing data", "POST", msgs, `{"turn": {"user": "hi"}} {"turn": {"user": "again"}}`, nil, 400, "bad_request", "unexpected data after the JSON object"},
		{"trailing garbage", "POST", msgs, `{"turn": {"user": "hi"}} x`, nil, 400, "bad_request", "unexpected data after the JSON object"},
		{"empty body", "POST", msgs, "", nil, 400, "bad_request", "empty body"},
		{"not an object", "POST", msgs, `[1,2]`, nil, 400, "bad_request", "want a JSON object"},
		{"wrong type", "POST", msgs, `{"turn": {"user": 42}}`, nil, 400, "bad_request", `field "turn.user": want a string`},
		{"nothing to append", "POST", msgs, `{}`, nil, 400, "bad_request", "nothing to append"},
		{"turn and messages", "POST", msgs, `{"turn":{"user":"a"},"messages":[{"role":"user","content":"b"}]}`, nil, 400, "bad_request", "not both"},
		{"turn without user", "POST", msgs, `{"turn":{"assistant":"a"}}`, nil, 400, "bad_request", "turn.user is missing"},
		{"bad role", "POST", msgs, `{"messages":[{"role":"bot","content":"b"}]}`, nil, 400, "invalid_message", `messages[0].role = "bot"`},
		{"tool without call id", "POST", msgs, `{"messages":[{"role":"tool","content":"{}"}]}`, nil, 400, "invalid_message", "messages[0].tool_call_id is missing"},
		{"tool calls on a user message", "POST", msgs, `{"messages":[{"role":"user","content":"x","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, nil, 400, "invalid_message", "only assistant messages make tool calls"},
		{"tool call without name", "POST", msgs, `{"messages":[{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"arguments":"{}"}}]}]}`, nil, 400, "invalid_message", "tool_calls[0].function.name is missing"},
		{"NUL byte", "POST", msgs, `{"messages":[{"role":"user","content":"a\u0000b"}]}`, nil, 400, "invalid_message", "NUL byte"},
		{"reserved metadata", "POST", msgs, `{"messages":[{"role":"user","content":"a","metadata":{"strata.title":"x"}}]}`, nil, 400, "invalid_message", "reserved"},
		{"non-JSON content type", "POST", msgs, `user=hi`, []string{"Content-Type: application/x-www-form-urlencoded"}, 415, "unsupported_media_type", "want application/json"},
		{"invalid session id", "POST", "/v1/sessions/bad%20id/messages", turn("x"), nil, 400, "bad_request", "invalid session id"},
		{"session id too long", "GET", "/v1/sessions/" + strings.Repeat("a", 129), nil, nil, 400, "bad_request", "invalid session id"},
		{"bad budget", "GET", sess + "/context?budget=-5", nil, nil, 400, "bad_request", "query parameter budget"},
		{"bad limit", "GET", sess + "?limit=0", nil, nil, 400, "bad_request", "query parameter limit"},
		{"bad after_seq", "GET", sess + "?after_seq=x", nil, nil, 400, "bad_request", "query parameter after_seq"},
		{"bad list limit", "GET", "/v1/sessions?limit=1000", nil, nil, 400, "bad_request", "between 1 and 100"},
		{"empty search", "GET", "/v1/sessions?search=", nil, nil, 400, "bad_request", "search is empty"},
		{"long title", "POST", "/v1/sessions", map[string]string{"title": strings.Repeat("t", 81)}, nil, 400, "bad_request", "title is longer than 80"},
		{"control character in title", "POST", "/v1/sessions", map[string]string{"title": "a\x07b"}, nil, 400, "bad_request", "control characters"},
		{"unknown session", "GET", "/v1/sessions/nope", nil, nil, 404, "not_found", "session not found"},
		{"no such endpoint", "GET", "/v1/elsewhere", nil, nil, 404, "not_found", "no such endpoint"},
		{"method not allowed", "PUT", sess, `{}`, nil, 405, "method_not_allowed", "method PUT not allowed"},
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
	var got wireSession
	ts.must(200, "GET", sess, keyAlice, nil, &got)
	if got.MessageCount != 1 {
		t.Fatalf("rejected requests stored messages: %d", got.MessageCount)
	}
	// A request id is echoed when sensible, replaced otherwise.
	if r := ts.do("GET", "/healthz", "", nil, "X-Request-Id: abc-123"); r.header.Get(RequestIDHeader) != "abc-123" {
		t.Errorf("request id not echoed: %q", r.header.Get(RequestIDHeader))
	}
	if r := ts.do("GET", "/healthz", "", nil, "X-Request-Id: "+strings.Repeat("z", 200)); len(r.header.Get(RequestIDHeader)) != 24 {
		t.Errorf("long request id kept: %q", r.header.Get(RequestIDHeader))
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), memory.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "no API keys configured"},
		{Config{APIKeys: []APIKey{{UserID: "a", Key: "short"}}}, "shorter than 16"},
		{Config{APIKeys: []APIKey{{UserID: "", Key: keyAlice}}}, "missing or invalid user id"},
		{Config{APIKeys: []APIKey{{UserID: "a", SHA256: "zz"}}}, "64 hexadecimal"},
		{Config{APIKeys: []APIKey{{UserID: "a", Key: keyAlice, SHA256: HashKey(keyAlice)}}}, "not both"},
		{Config{APIKeys: []APIKey{{UserID: "a", Key: keyAlice}, {UserID: "b", SHA256: HashKey(keyAlice)}}}, "API keys 1 and 2 are the same key"},
		{Config{APIKeys: testKeys(), MaxBodyBytes: 10}, "MaxBodyBytes = 10"},
		{Config{APIKeys: testKeys(), ContextBudget: -1}, "ContextBudget = -1"},
	} {
		_, err := New(mgr, nil, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want …%s…", c.cfg, err, c.want)
		}
	}
	if _, err := New(nil, nil, Config{APIKeys: testKeys()}); err == nil {
		t.Error("nil manager accepted")
	}
}

func TestKeyring(t *testing.T) {
	t.Parallel()
	kr, err := newKeyring([]APIKey{{UserID: "alice", Key: keyAlice}, {UserID: "bob", SHA256: strings.ToUpper(HashKey(keyBob))}, {UserID: "carol", Key: "carol-key-0123456789abc"}})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{keyAlice: "alice", keyBob: "bob", "carol-key-0123456789abc": "carol", "nope": "", "": ""} {
		got, _, ok := kr.lookup(key)
		if got != want || ok != (want != "") {
			t.Errorf("lookup(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
	// The configured plain keys are not kept; a plain key in a
	// configuration file is warned about, without showing it.
	logs := &testutil.Buffer{}
	srv := stack{logs: logs, cfg: Config{APIKeys: []APIKey{{UserID: "carol", Key: "carol-plain-key-0123456789", Plaintext: true}}}}.build(t)
	defer srv.Close()
	if len(srv.Config().APIKeys) != 0 {
		t.Fatal("Config keeps the API keys")
	}
	if !strings.Contains(logs.String(), "in plain text") || strings.Contains(logs.String(), "carol-plain-key") {
		t.Errorf("no warning about the plain key, or the key is logged: %s", logs)
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
	srv := stack{logs: logs, cfg: Config{Addr: "127.0.0.1:0"}}.build(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe(ctx) }()
	logs.Await(t, 10*time.Second, "listening")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ListenAndServe: %v", err)
	}
	srv = stack{}.build(t)
	defer srv.Close()
	if err := srv.ListenAndServe(context.Background()); err == nil || !strings.Contains(err.Error(), "no listen address") {
		t.Fatalf("ListenAndServe without an address: %v", err)
	}
}
