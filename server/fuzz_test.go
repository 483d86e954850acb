package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzAppendBody sends arbitrary bodies to POST /v1/sessions/{id}/messages
// through the real handler: the answer is never a 5xx, and whatever is
// accepted is stored and readable again.
func FuzzAppendBody(f *testing.F) {
	for _, seed := range []string{
		`{"turn":{"user":"hi","assistant":"hello","model_variant":"x"}}`,
		`{"messages":[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]}`,
		`{"messages":[{"role":"tool","content":"orphan"}]}`,
		`{"messages":[{"role":"robot","content":"x"}]}`,
		`{"turn":{"user":"\u0000"}}`, `{"unknown":1}`, `{"turn":null}`, `[]`, `{`, ``, `{"turn":{}} trailing`,
	} {
		f.Add(seed)
	}
	srv := stack{quiet: true}.build(f)
	f.Cleanup(func() { _ = srv.Close() })
	h := srv.Handler()
	call := func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+keyAlice)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	created := call(http.MethodPost, "/v1/sessions", "")
	var session struct{ ID string }
	if err := json.Unmarshal(created.Body.Bytes(), &session); created.Code != http.StatusCreated || err != nil {
		f.Fatalf("create: %d %s", created.Code, created.Body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		rec := call(http.MethodPost, "/v1/sessions/"+session.ID+"/messages", body)
		if rec.Code >= 500 {
			t.Fatalf("%d for body %q: %s", rec.Code, body, rec.Body)
		}
		if rec.Code == http.StatusOK {
			if got := call(http.MethodGet, "/v1/sessions/"+session.ID+"?limit=5", ""); got.Code != http.StatusOK {
				t.Fatalf("accepted body %q, then GET answered %d: %s", body, got.Code, got.Body)
			}
		}
	})
}

// FuzzKeysFile parses arbitrary keys files: never a panic; what parses is
// a list of digests that newKeyring accepts or refuses with an error, and
// every key parsed came from a line of the file.
func FuzzKeysFile(f *testing.F) {
	for _, seed := range []string{
		"alice " + HashKey("k1") + "\n# c\n\nbackend " + HashKey("k2") + " service\n",
		"alice", "alice nothex", "a " + HashKey("k") + " admin", "\x00 " + HashKey("k"), "é\t" + HashKey("k") + "\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, err := parseKeysFile(b)
		if err != nil {
			return
		}
		for _, k := range keys {
			if k.UserID == "" || k.SHA256 == "" || !strings.Contains(string(b), k.SHA256) {
				t.Fatalf("parsed %+v from %q", k, b)
			}
		}
		_, _ = newKeyring(keys)
	})
}

// FuzzUserHeader: an X-Strata-User value a service key may act for is at
// most 256 bytes of UTF-8 without whitespace or control characters, and
// never a reserved owner.
func FuzzUserHeader(f *testing.F) {
	for _, seed := range []string{"alice", "7c9e6679-7425-40de-944b-e07cc1f70ae5", "a b", "Shared", "anonymous", "\u200b", strings.Repeat("x", 257)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if checkUserID(id) != nil {
			return
		}
		if id == "" || len(id) > maxUserIDLength || !utf8.ValidString(id) || strings.ContainsFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) ||
			strings.EqualFold(id, "shared") || strings.EqualFold(id, "anonymous") {
			t.Fatalf("checkUserID accepted %q", id)
		}
	})
}

// FuzzPathNeverRedirected sends arbitrary paths, with every method,
// through the real handler: no answer is ever a redirect (ServeMux's
// cleaning of dot segments and doubled slashes never reaches a client),
// and the session the paths circle around survives them all.
func FuzzPathNeverRedirected(f *testing.F) {
	for _, seed := range []string{
		"/v1/sessions/ID/facts/..", "/v1/sessions/ID/messages/%2E%2E", "/v1/sessions/x/../ID",
		"/v1/sessions//ID", "/v1/sessions/ID/./context", "/v1/sessions/ID/facts/%2e", "/v1/./sessions",
		"/v1/sessions/ID/facts/a%2F..%2Fb", "//v1/sessions/ID", "/v1/sessions/ID/", "/v1/sessions/ID/context/../..",
	} {
		f.Add(seed)
	}
	srv := stack{quiet: true}.build(f)
	f.Cleanup(func() { _ = srv.Close() })
	h := srv.Handler()
	call := func(method, target string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "/", nil)
		u, err := url.ParseRequestURI(target) // as the server parses it: no dot segments resolved
		if err != nil {
			return nil
		}
		req.URL, req.RequestURI = u, target
		req.Header.Set("Authorization", "Bearer "+keyAlice)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	created := call(http.MethodPost, "/v1/sessions")
	var session struct{ ID string }
	if err := json.Unmarshal(created.Body.Bytes(), &session); created.Code != http.StatusCreated || err != nil {
		f.Fatalf("create: %d %s", created.Code, created.Body)
	}
	f.Fuzz(func(t *testing.T, path string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "?# \t\r\n") {
			return
		}
		path = strings.ReplaceAll(path, "ID", session.ID)
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPut} {
			rec := call(method, path)
			if rec == nil {
				return // not a URL
			}
			if rec.Code >= 300 && rec.Code < 400 {
				t.Fatalf("%s %q answered %d (Location %q)", method, path, rec.Code, rec.Header().Get("Location"))
			}
		}
		if got := call(http.MethodGet, "/v1/sessions/"+session.ID); got.Code != http.StatusOK {
			// Only the session's own path, sent as is, deletes it.
			if path != "/v1/sessions/"+session.ID {
				t.Fatalf("after %q the session answers %d", path, got.Code)
			}
			created := call(http.MethodPost, "/v1/sessions")
			if err := json.Unmarshal(created.Body.Bytes(), &session); err != nil {
				t.Fatal(err)
			}
		}
	})
}
