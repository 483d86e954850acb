package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// keyService is the test service key: it acts for the user each request
// names in X-Strata-User.
const keyService = "service-key-0123456789abcdef"

func serviceKeys() []APIKey {
	return append(testKeys(), APIKey{UserID: "backend", SHA256: HashKey(keyService), Service: true})
}

// listIDs lists the sessions the request's user sees.
func (ts *testServer) listIDs(key string, headers ...string) []string {
	ts.t.Helper()
	r := ts.do("GET", "/v1/sessions", key, nil, headers...)
	if r.status != 200 {
		ts.t.Fatalf("list: %s", r)
	}
	var l listResponse
	r.decode(ts.t, &l)
	var ids []string
	for _, e := range l.Sessions {
		ids = append(ids, e.ID)
	}
	return ids
}

// createAs makes a session for the user of key (and header) and returns its id.
func (ts *testServer) createAs(key string, body any, headers ...string) string {
	ts.t.Helper()
	r := ts.do("POST", "/v1/sessions", key, body, headers...)
	if r.status != 201 {
		ts.t.Fatalf("create: %s", r)
	}
	var created wireAppend
	r.decode(ts.t, &created)
	return created.ID
}

// A service key acts for the user each request names, with that user's
// ownership checks, and for nobody else: a session it made for alice is
// alice's (her own key reads it), invisible to bob through his key or
// through the service acting for him; a user with no key of their own (a
// UUID) gets sessions of their own through the service.
func TestServiceKeyActsForNamedUser(t *testing.T) {
	t.Parallel()
	for _, pg := range []bool{false, true} {
		t.Run(fmt.Sprintf("pg=%v", pg), func(t *testing.T) {
			t.Parallel()
			ts := stack{pg: pg, cfg: Config{APIKeys: serviceKeys()}}.start(t)
			asAlice, asBob := UserHeader+": alice", UserHeader+": bob"
			uuid := "7c9e6679-7425-40de-944b-e07cc1f70ae5"
			asUUID := UserHeader + ": " + uuid

			sa := ts.createAs(keyService, opening("alice's order 1234", "noted"), asAlice)
			if r := ts.do("GET", "/v1/sessions/"+sa, keyAlice, nil); r.status != 200 {
				t.Fatalf("alice reads the session the service made for her: %s", r)
			}
			for _, h := range []string{asBob, asUUID} {
				if r := ts.do("GET", "/v1/sessions/"+sa, keyService, nil, h); r.status != 404 {
					t.Fatalf("the service acting as %q reads alice's session: %s", h, r)
				}
				if r := ts.do("POST", "/v1/sessions/"+sa+"/messages", keyService, turn("hi", "hello"), h); r.status != 404 {
					t.Fatalf("the service acting as %q appends to alice's session: %s", h, r)
				}
				if r := ts.do("DELETE", "/v1/sessions/"+sa, keyService, nil, h); r.status != 404 {
					t.Fatalf("the service acting as %q deletes alice's session: %s", h, r)
				}
			}
			if r := ts.do("GET", "/v1/sessions/"+sa, keyBob, nil); r.status != 404 {
				t.Fatalf("bob reads alice's session: %s", r)
			}
			// alice's own key's session is reachable through the service as alice.
			own := ts.createAs(keyAlice, opening("a note of alice's own", "ok"))
			if r := ts.do("POST", "/v1/sessions/"+own+"/messages", keyService, turn("more", "fine"), asAlice); r.status != 200 {
				t.Fatalf("the service as alice appends to alice's session: %s", r)
			}
			su := ts.createAs(keyService, opening("a web user's question", "an answer"), asUUID)
			ts.flush()
			if got := ts.listIDs(keyService, asUUID); len(got) != 1 || got[0] != su {
				t.Fatalf("the UUID user lists %v, want [%s]", got, su)
			}
			if got := ts.listIDs(keyService, asAlice); len(got) != 2 || !contains(got, sa) || !contains(got, own) {
				t.Fatalf("alice through the service lists %v, want %s and %s", got, sa, own)
			}
			if got := ts.listIDs(keyBob); len(got) != 0 {
				t.Fatalf("bob lists %v", got)
			}
			// The access log names the service that acted for the user.
			if logs := ts.logs.String(); !strings.Contains(logs, "user_id="+uuid+" service=backend") {
				t.Fatalf("the access log does not name the service acting for %s:\n%s", uuid, logs)
			}
		})
	}
}

// opening is the body of a create with a first turn.
func opening(user, assistant string) map[string]any {
	return map[string]any{"messages": []map[string]string{{"role": "user", "content": user}, {"role": "assistant", "content": assistant}}}
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// A user key that sends X-Strata-User is refused with 403 and one body,
// whatever the header names (another user, itself, a user with sessions,
// one without, an empty or an invalid id), and nothing is done.
func TestUserKeyCannotImpersonate(t *testing.T) {
	t.Parallel()
	ts := stack{cfg: Config{APIKeys: serviceKeys()}}.start(t)
	sb := ts.createAs(keyBob, opening("bob's secret plan", "kept"))
	var first []byte
	for _, target := range []string{"bob", "alice", "nobody-at-all", "", "shared", "anonymous", strings.Repeat("x", 300), "a b"} {
		for _, req := range []struct{ method, path string }{
			{"GET", "/v1/sessions/" + sb}, {"GET", "/v1/sessions"}, {"POST", "/v1/sessions"},
			{"DELETE", "/v1/sessions/" + sb}, {"GET", "/v1/sessions/" + sb + "/context"},
		} {
			var body any
			if req.method == "POST" {
				body = opening("hijack", "no")
			}
			r := ts.do(req.method, req.path, keyAlice, body, UserHeader+": "+target)
			if r.status != 403 {
				t.Fatalf("alice's key naming %q on %s %s: %s, want 403", target, req.method, req.path, r)
			}
			e := r.errorOf(t)
			e.RequestID = ""
			b, _ := json.Marshal(e)
			if first == nil {
				first = b
			} else if !bytes.Equal(b, first) {
				t.Fatalf("the 403 body depends on the target: %s vs %s", b, first)
			}
		}
	}
	if e := errorBodyOf(t, first); e.Code != "forbidden" {
		t.Fatalf("code %q, want forbidden", e.Code)
	}
	// Nothing happened: bob's session is whole, alice created nothing.
	if r := ts.do("GET", "/v1/sessions/"+sb, keyBob, nil); r.status != 200 {
		t.Fatalf("bob's session after the attempts: %s", r)
	}
	if got := ts.listIDs(keyAlice); len(got) != 0 {
		t.Fatalf("alice's attempts created %v", got)
	}
	// Without the header alice's key works as before.
	if got := ts.listIDs(keyAlice); got != nil {
		t.Fatalf("alice lists %v", got)
	}
}

func errorBodyOf(t *testing.T, b []byte) errorBody {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// A service key without a usable user is refused with 400: the header
// missing, empty, sent twice, or naming an odd id (whitespace, control or
// invisible characters, too long, not UTF-8, or a reserved owner in any
// case); an id of exactly the maximum length works.
func TestServiceKeyOddUsers(t *testing.T) {
	t.Parallel()
	ts := stack{cfg: Config{APIKeys: serviceKeys()}}.start(t)
	if r := ts.do("GET", "/v1/sessions", keyService, nil); r.status != 400 {
		t.Fatalf("no header: %s", r)
	}
	for _, h := range []string{UserHeader + ":", UserHeader + ":    "} {
		if r := ts.do("GET", "/v1/sessions", keyService, nil, h); r.status != 400 {
			t.Fatalf("%q: %s", h, r)
		}
	}
	long := strings.Repeat("é", maxUserIDLength/2)
	if r := ts.do("GET", "/v1/sessions", keyService, nil, UserHeader+": "+long); r.status != 200 {
		t.Fatalf("a %d-byte id: %s", len(long), r)
	}

	// Through the handler, so that values an HTTP client refuses to send
	// reach the server too.
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	odd := []string{"anonymous", "Anonymous", "SHARED", "shared", "a b", "a\tb", "al\x00ice", "al\nice", "\u200balice",
		"alice\u00a0", "al\xffice", long + "x", "bob\x7f", "a\u2028b"}
	marks := []string{" ", "\t", "\x00", "\x01", "\x1b", "\x7f", "\u00a0", "\u200b", "\u2028", "\u3000", "\xfe"}
	for range 40 {
		base := []rune(fmt.Sprintf("user-%x", rng.Uint64()))
		i := rng.IntN(len(base) + 1)
		odd = append(odd, string(base[:i])+marks[rng.IntN(len(marks))]+string(base[i:]))
	}
	h := ts.srv.Handler()
	for _, id := range odd {
		req := httptest.NewRequest("GET", "/v1/sessions", nil)
		req.Header.Set("Authorization", "Bearer "+keyService)
		req.Header[UserHeader] = []string{id}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 400 {
			t.Fatalf("user id %q: %d %s, want 400", id, rec.Code, rec.Body)
		}
		checkResponse(t, req, rec.Code, rec.Header(), rec.Body.Bytes())
	}
	req := httptest.NewRequest("GET", "/v1/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+keyService)
	req.Header[UserHeader] = []string{"alice", "bob"}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 400 {
		t.Fatalf("the header twice: %d %s", rec.Code, rec.Body)
	}
}

// writeKeys replaces the keys file atomically.
func writeKeys(t testing.TB, path string, lines ...string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// Keys are added to and removed from the keys file without a restart: the
// file is read again on the first request after the interval (not
// before), an added service key works, a removed key stops working, and a
// file that no longer parses keeps the keys loaded before, with a warning.
func TestKeysFileReload(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keys")
	writeKeys(t, path, "# strata serve keys", "", "bob "+HashKey(keyBob))
	ts := stack{cfg: Config{APIKeys: []APIKey{{UserID: "alice", Key: keyAlice}}, KeysFile: path, KeysFileInterval: time.Minute}}.start(t)
	var mu sync.Mutex
	now := time.Now()
	ts.srv.keys.mu.Lock()
	ts.srv.keys.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ts.srv.keys.mu.Unlock()
	advance := func() { mu.Lock(); now = now.Add(time.Minute); mu.Unlock() }
	status := func(key string, headers ...string) int {
		return ts.do("GET", "/v1/sessions", key, nil, headers...).status
	}
	if status(keyAlice) != 200 || status(keyBob) != 200 || status(keyService, UserHeader+": carol") != 401 {
		t.Fatal("initial keys")
	}
	writeKeys(t, path, "bob "+HashKey(keyBob), "backend "+HashKey(keyService)+" service")
	if got := status(keyService, UserHeader+": carol"); got != 401 {
		t.Fatalf("the file was read again before the interval: %d", got)
	}
	advance()
	if got := status(keyService, UserHeader+": carol"); got != 200 {
		t.Fatalf("an added service key: %d", got)
	}
	// Removed: bob's key stops working; the configured key stays.
	writeKeys(t, path, "backend "+HashKey(keyService)+" service")
	advance()
	if status(keyBob) != 401 || status(keyAlice) != 200 || status(keyService, UserHeader+": carol") != 200 {
		t.Fatal("after bob's key was removed")
	}
	// A broken file keeps the keys in force and says so.
	writeKeys(t, path, "backend "+HashKey(keyService)+" service", "oops")
	advance()
	if status(keyService, UserHeader+": carol") != 200 || strings.Count(ts.logs.String(), "keys file not reloaded") != 1 {
		t.Fatal("a broken keys file dropped the keys, or was not logged")
	}
	advance() // read again, unchanged: not reported twice
	if status(keyService, UserHeader+": carol") != 200 || strings.Count(ts.logs.String(), "keys file not reloaded") != 1 {
		t.Fatal("a broken keys file was reported again")
	}
	// A missing file keeps the keys too (empty it to remove its keys).
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	advance()
	if status(keyService, UserHeader+": carol") != 200 || strings.Count(ts.logs.String(), "keys file not reloaded") != 2 {
		t.Fatal("a missing keys file dropped the keys, or was not logged")
	}
	// A key of the file that duplicates a configured one is refused too.
	writeKeys(t, path, "alice2 "+HashKey(keyAlice))
	advance()
	if status(keyService, UserHeader+": carol") != 200 {
		t.Fatal("a duplicate key in the file replaced the keyring")
	}
	// A service key listed as a user key is a user key: it may not name users.
	writeKeys(t, path, "backend "+HashKey(keyService))
	advance()
	if got := status(keyService, UserHeader+": carol"); got != 403 {
		t.Fatalf("a key demoted to a user key: %d, want 403", got)
	}
}

// New refuses a keys file that is missing or does not parse, and accepts
// an empty one when nothing else is configured (keys are added later).
func TestKeysFileAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mgr := func() Config { return Config{KeysFile: filepath.Join(dir, "missing")} }
	if _, err := newKeySource(nil, mgr().KeysFile, time.Second, nil); err == nil {
		t.Fatal("a missing keys file was accepted")
	}
	for _, bad := range []string{"alice", "alice nothex", "alice " + HashKey("k") + " admin", "a " + HashKey("k") + "\nb " + HashKey("k")} {
		p := filepath.Join(dir, "bad")
		writeKeys(t, p, bad)
		if _, err := newKeySource(nil, p, time.Second, nil); err == nil {
			t.Fatalf("keys file %q was accepted", bad)
		}
	}
	p := filepath.Join(dir, "empty")
	writeKeys(t, p, "# none yet")
	ks, err := newKeySource(nil, p, time.Second, nil)
	if err != nil || len(ks.keys().hashes) != 0 {
		t.Fatalf("an empty keys file: %v", err)
	}
	if err := (Config{KeysFile: p}).withDefaults().validate(); err != nil {
		t.Fatalf("a keys file without configured keys: %v", err)
	}
}

// Requests authenticate while the keys file changes under them (run with
// -race): every request sees one whole keyring, and the keys the file
// keeps (bob's) and the configured one (alice's) always work.
func TestKeysFileReloadRace(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keys")
	writeKeys(t, path, "bob "+HashKey(keyBob))
	ts := stack{cfg: Config{APIKeys: []APIKey{{UserID: "alice", Key: keyAlice}}, KeysFile: path, KeysFileInterval: time.Nanosecond}, quiet: true}.start(t)
	stop := make(chan struct{})
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			lines := []string{"bob " + HashKey(keyBob)}
			if i%2 == 1 {
				lines = append(lines, "backend "+HashKey(keyService)+" service")
			}
			writeKeys(t, path, lines...)
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan string, 200)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				key := []string{keyAlice, keyBob}[(w+i)%2]
				r, err := ts.try(t.Context(), "GET", "/v1/sessions", key, nil)
				if err != nil || r.status != 200 {
					errs <- fmt.Sprint(r, err)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-writer
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
