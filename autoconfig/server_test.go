package autoconfig

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/internal/testutil"
	"github.com/strata-go/strata/server"
)

func TestServerDefaults(t *testing.T) {
	t.Parallel()
	cfg := mustLoad(t, nil)
	s := cfg.Server
	if s.Addr != DefaultServerListen || s.MaxBodyBytes != 1<<20 || s.APIKeys != nil ||
		s.WriteTimeout != DefaultServerWriteTimeout || s.ShutdownTimeout != DefaultServerShutdownTimeout || s.ContextBudget != 0 {
		t.Fatalf("server defaults: %+v", s)
	}
	if v, _ := cfg.Value(keyServerAPIKeys); v != "[]" {
		t.Fatalf("Value(api-keys) = %q", v)
	}
}

func TestServerAPIKeysFromYAML(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("bob-secret-key-0123456789"))
	hexSum := hex.EncodeToString(sum[:])
	path := writeFile(t, "strata.yaml", `
arc:
  reactor:
    memory:
      server:
        listen: ":9000"
        read-timeout: 5s
        api-keys:
          - user-id: alice
            key-env: STRATA_KEY_ALICE
          - userId: bob
            sha256: `+strings.ToUpper(hexSum)+`
          - user_id: carol
            key: ${CAROL_KEY}
`)
	cfg := mustLoad(t, []string{"CAROL_KEY=carol-plain-key-0123456789", "STRATA_KEY_ALICE=alice-secret-key-0123456789"}, path)
	want := []APIKeyConfig{
		{UserID: "alice", KeyEnv: "STRATA_KEY_ALICE"},
		{UserID: "bob", SHA256: hexSum},
		{UserID: "carol", Key: "carol-plain-key-0123456789"},
	}
	if !reflect.DeepEqual(cfg.Server.APIKeys, want) {
		t.Fatalf("APIKeys = %+v, want %+v", cfg.Server.APIKeys, want)
	}
	if cfg.Server.Addr != ":9000" || cfg.Server.ReadTimeout != 5*time.Second {
		t.Fatalf("server = %+v", cfg.Server)
	}
	v, _ := cfg.Value(keyServerAPIKeys)
	if strings.Contains(v, "carol-plain") || !strings.Contains(v, `{user-id: "carol", key: "*****"}`) || !strings.Contains(v, "STRATA_KEY_ALICE") {
		t.Fatalf("Value(api-keys) = %s", v)
	}
	if k, err := cfg.ResolveAPIKey(cfg.Server.APIKeys[0]); err != nil || k != "alice-secret-key-0123456789" {
		t.Fatalf("ResolveAPIKey(alice) = %q, %v", k, err)
	}
	if k, err := cfg.ResolveAPIKey(cfg.Server.APIKeys[1]); err != nil || k != "" {
		t.Fatalf("ResolveAPIKey(bob) = %q, %v", k, err)
	}
	// Clone copies the list.
	cl := cfg.Clone()
	cl.Server.APIKeys[0].UserID = "mallory"
	if cfg.Server.APIKeys[0].UserID != "alice" {
		t.Fatal("Clone shares the api-keys list")
	}
	// A missing variable is reported when the key is resolved, not loaded.
	cfg = mustLoad(t, []string{"CAROL_KEY=carol-plain-key-0123456789"}, path)
	_, err := cfg.ResolveAPIKey(cfg.Server.APIKeys[0])
	if err == nil || !strings.Contains(err.Error(), "STRATA_KEY_ALICE") || !strings.Contains(err.Error(), keyServerAPIKeys) {
		t.Fatalf("ResolveAPIKey without the variable: %v", err)
	}
}

func TestServerAPIKeysFromEnvironment(t *testing.T) {
	t.Parallel()
	sum := strings.Repeat("ab", 32)
	for _, v := range []string{
		`alice=key-env:K_ALICE, bob=sha256:` + sum,
		`[{"user-id":"alice","key-env":"K_ALICE"},{"user-id":"bob","sha256":"` + sum + `"}]`,
	} {
		cfg := mustLoad(t, []string{"ARC_REACTOR_MEMORY_SERVER_API_KEYS=" + v})
		want := []APIKeyConfig{{UserID: "alice", KeyEnv: "K_ALICE"}, {UserID: "bob", SHA256: sum}}
		if !reflect.DeepEqual(cfg.Server.APIKeys, want) {
			t.Errorf("%s: APIKeys = %+v", v, cfg.Server.APIKeys)
		}
	}
	// --set takes the same forms.
	cfg, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{keyServerAPIKeys + "=dana=key:dana-key-0123456789abc"}})
	if err != nil || len(cfg.Server.APIKeys) != 1 || cfg.Server.APIKeys[0].Key != "dana-key-0123456789abc" {
		t.Fatalf("--set: %+v, %v", cfg, err)
	}
}

func TestServerConfigErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		set, key, want string
	}{
		{keyServerListen + "=localhost", keyServerListen, "must be host:port"},
		{keyServerListen + "=:http", keyServerListen, "port must be a number"},
		{keyServerMaxBodyBytes + "=10", keyServerMaxBodyBytes, "must be >= 1024"},
		{keyServerWriteTimeout + "=0", keyServerWriteTimeout, "must be > 0"},
		{keyServerShutdownTimeout + "=-1s", keyServerShutdownTimeout, "must be > 0"},
		{keyServerContextBudget + "=-1", keyServerContextBudget, "must be >= 0"},
		{keyServerHistoryPageBytes + "=100", keyServerHistoryPageBytes, "must be >= 1024"},
		{keyServerAPIKeys + "=alice", keyServerAPIKeys, "want USER=key-env:NAME"},
		{keyServerAPIKeys + "==key-env:K", keyServerAPIKeys, "user-id is missing"},
		{keyServerAPIKeys + "=alice=sha256:abc", keyServerAPIKeys, "64 hexadecimal"},
		{keyServerAPIKeys + "=alice=key-env:not-a-name", keyServerAPIKeys, "NAME of an environment variable"},
		{keyServerAPIKeys + "=alice=key:short", keyServerAPIKeys, "at least 16"},
		{keyServerAPIKeys + "=alice=token:abc", keyServerAPIKeys, `unknown field "token"`},
		{keyServerAPIKeys + `=[{"user-id":"a","key-env":"K","sha256":"` + strings.Repeat("0", 64) + `"}]`, keyServerAPIKeys, "exactly one of"},
		{keyServerAPIKeys + "=a=key-env:K,b=key-env:K", keyServerAPIKeys, "entries 1 and 2 give the same key"},
		{keyServerAPIKeys + "=[{oops", keyServerAPIKeys, "malformed JSON"},
	}
	for _, c := range cases {
		e := loadErr(t, LoadOptions{Overrides: []string{c.set}})
		if e.Key != c.key || !strings.Contains(e.Error(), c.want) {
			t.Errorf("--set %s: %v (key %s), want %s: …%s…", c.set, e, e.Key, c.key, c.want)
		}
		if strings.Contains(e.Error(), "short\"") {
			t.Errorf("--set %s: error shows the key: %v", c.set, e)
		}
	}
	// A YAML entry that is not a map.
	path := writeFile(t, "bad.yaml", "arc.reactor.memory.server.api-keys: [alice]\n")
	if e := loadErr(t, LoadOptions{Files: []string{path}}); !strings.Contains(e.Error(), "entry 1: want a map") {
		t.Errorf("scalar entry: %v", e)
	}
}

// serveOverrides configure two API keys (alice's from the environment,
// bob's as a digest) and summaries.
func serveOverrides(extra ...string) []string {
	return append([]string{
		keyServerAPIKeys + "=alice=key-env:STRATA_TEST_KEY_ALICE,bob=sha256:" + server.HashKey("bob-key-0123456789abcdef"),
		"arc.reactor.memory.summary.enabled=true",
	}, extra...)
}

const serveKeyAlice = "alice-key-0123456789abcdef"

func TestServerConfigFromConfiguration(t *testing.T) {
	t.Parallel()
	cfg, err := LoadWith(LoadOptions{Environ: []string{"STRATA_TEST_KEY_ALICE=" + serveKeyAlice},
		Overrides: serveOverrides(keyServerListen+"=:9000", keyServerReadTimeout+"=5s", keyServerContextBudget+"=2000", keyServerHistoryPageBytes+"=65536")})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := serverConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []server.APIKey{{UserID: "alice", Key: serveKeyAlice}, {UserID: "bob", SHA256: server.HashKey("bob-key-0123456789abcdef")}}
	if !reflect.DeepEqual(sc.APIKeys, want) || sc.Addr != ":9000" || sc.ReadTimeout != 5*time.Second ||
		sc.ContextBudget != 2000 || sc.MaxHistoryBytes != 65536 || sc.WriteTimeout != server.DefaultWriteTimeout || sc.MaxBodyBytes != server.DefaultMaxBodyBytes {
		t.Fatalf("server config: %+v", sc)
	}
	// The variable holding a key is named when it is missing.
	cfg, err = LoadWith(LoadOptions{Environ: []string{}, Overrides: serveOverrides()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := serverConfig(cfg); err == nil || !strings.Contains(err.Error(), "STRATA_TEST_KEY_ALICE") {
		t.Fatalf("missing key variable: %v", err)
	}
	if _, err := OpenServer(context.Background(), cfg, ServerOptions{Logger: slog.New(slog.DiscardHandler)}); err == nil || !strings.Contains(err.Error(), "STRATA_TEST_KEY_ALICE") {
		t.Fatalf("OpenServer without the key variable: %v", err)
	}
	// No keys at all.
	if _, err := serverConfig(Default()); err == nil || !strings.Contains(err.Error(), keyServerAPIKeys) {
		t.Fatalf("no keys: %v", err)
	}
	// A plain key in the configuration is flagged for a warning.
	cfg, err = LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{keyServerAPIKeys + "=carol=key:carol-plain-key-0123456789"}})
	if err != nil {
		t.Fatal(err)
	}
	if sc, err := serverConfig(cfg); err != nil || len(sc.APIKeys) != 1 || !sc.APIKeys[0].Plaintext {
		t.Fatalf("plain key: %+v, %v", sc, err)
	}
}

func TestOpenServerInMemory(t *testing.T) {
	t.Parallel()
	cfg, err := LoadWith(LoadOptions{Environ: []string{"STRATA_TEST_KEY_ALICE=" + serveKeyAlice}, Overrides: serveOverrides()})
	if err != nil {
		t.Fatal(err)
	}
	runOpenServer(t, cfg)
}

func TestOpenServerPostgres(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewEmptySchema(t)
	cfg, err := LoadWith(LoadOptions{Environ: []string{"STRATA_TEST_KEY_ALICE=" + serveKeyAlice},
		Overrides: serveOverrides(keyDatasourceURL + "=" + schema.URL)})
	if err != nil {
		t.Fatal(err)
	}
	runOpenServer(t, cfg)
}

// runOpenServer opens strata serve's server from cfg and uses it through
// its handler: readiness, a session with a title, folds, listing, search.
func runOpenServer(t *testing.T, cfg *Config) {
	logs := &testutil.Buffer{}
	srv, err := OpenServer(context.Background(), cfg, ServerOptions{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	h := srv.Handler()
	call := func(method, path, body string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+serveKeyAlice)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if r := call("GET", "/readyz", ""); r.Code != 200 {
		t.Fatalf("readyz: %d %s", r.Code, r.Body)
	}
	r := call("POST", "/v1/sessions", `{"title":"Blender refund"}`)
	var created struct{ ID, Title string }
	if err := json.Unmarshal(r.Body.Bytes(), &created); r.Code != 201 || err != nil || created.Title != "Blender refund" {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	for i := range 12 {
		body := fmt.Sprintf(`{"turn":{"user":"My blender order #B-%d arrived broken, I want a refund.","assistant":"Refund %d noted."}}`, i, i)
		if r := call("POST", "/v1/sessions/"+created.ID+"/messages", body); r.Code != 200 {
			t.Fatalf("append %d: %d %s", i, r.Code, r.Body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	r = call("GET", "/v1/sessions/"+created.ID, "")
	var sess struct {
		Title        string `json:"title"`
		MessageCount int    `json:"message_count"`
		Summary      *struct {
			UpToSeq int64 `json:"up_to_seq"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(r.Body.Bytes(), &sess); r.Code != 200 || err != nil || sess.MessageCount != 24 || sess.Title != "Blender refund" || sess.Summary == nil {
		t.Fatalf("get: %d %s", r.Code, r.Body)
	}
	if r := call("GET", "/v1/sessions", ""); r.Code != 200 || !strings.Contains(r.Body.String(), created.ID) {
		t.Fatalf("list: %d %s", r.Code, r.Body)
	}
	if r := call("GET", "/v1/sessions?search=blender+refund", ""); r.Code != 200 || !strings.Contains(r.Body.String(), created.ID) {
		t.Fatalf("search: %d %s", r.Code, r.Body)
	}
	if r := call("POST", "/v1/sessions/never-created/messages", `{"turn":{"user":"hi"}}`); r.Code != 404 {
		t.Fatalf("append to an unknown session: %d %s", r.Code, r.Body)
	}
	if r := call("DELETE", "/v1/sessions/"+created.ID, ""); r.Code != 204 {
		t.Fatalf("delete: %d %s", r.Code, r.Body)
	}
}

// Another user's 1 200 new sessions against a strata serve whose in-memory
// store holds 1 000 evict none of the first user's: the flooding user gives
// up their own least recently used sessions (whose catalogue documents go
// with them), a user with none to give up is refused with 507 and a JSON
// error. (strata serve's start-up warning is tested in cmd/strata.)
func TestServeInMemoryNeverEvictsAnotherUsersSessions(t *testing.T) {
	t.Parallel()
	const carolKey = "carol-key-0123456789abcdef"
	cfg, err := LoadWith(LoadOptions{Environ: []string{"STRATA_TEST_KEY_ALICE=" + serveKeyAlice}, Overrides: []string{
		keyServerAPIKeys + "=alice=key-env:STRATA_TEST_KEY_ALICE,bob=sha256:" + server.HashKey("bob-key-0123456789abcdef") + ",carol=sha256:" + server.HashKey(carolKey),
		keyMaxSessions + "=1000",
	}})
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	idx := catalog.NewMemoryIndex()
	srv, err := OpenServer(context.Background(), cfg, ServerOptions{Logger: slog.New(slog.NewTextHandler(logs, nil)), index: idx})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	h := srv.Handler()
	call := func(key, method, path, body string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	create := func(key, title string) (int, string) {
		t.Helper()
		r := call(key, "POST", "/v1/sessions", fmt.Sprintf(`{"title":%q}`, title))
		var created struct{ ID string }
		_ = json.Unmarshal(r.Body.Bytes(), &created)
		return r.Code, created.ID
	}
	var alices []string
	for i := range 20 {
		code, id := create(serveKeyAlice, fmt.Sprintf("alice %d", i))
		if code != 201 {
			t.Fatalf("alice's create %d: %d", i, code)
		}
		if r := call(serveKeyAlice, "POST", "/v1/sessions/"+id+"/messages", `{"turn":{"user":"hi","assistant":"hello"}}`); r.Code != 200 {
			t.Fatalf("alice's turn: %d %s", r.Code, r.Body)
		}
		alices = append(alices, id)
	}
	var bobs []string
	for i := range 1200 {
		code, id := create("bob-key-0123456789abcdef", fmt.Sprintf("bob %d", i))
		if code != 201 {
			t.Fatalf("bob's create %d: %d", i, code)
		}
		bobs = append(bobs, id)
	}
	for _, id := range alices {
		r := call(serveKeyAlice, "GET", "/v1/sessions/"+id, "")
		var sess struct {
			MessageCount int `json:"message_count"`
		}
		if err := json.Unmarshal(r.Body.Bytes(), &sess); r.Code != 200 || err != nil || sess.MessageCount != 2 {
			t.Fatalf("alice's session %s after bob's 1 200 creates: %d %s", id, r.Code, r.Body)
		}
	}
	// Bob lost 220 of his own least recently used sessions (background
	// catalogue reads count as use too), their documents with them.
	ctx := context.Background()
	live := 0
	for i, id := range bobs {
		r := call("bob-key-0123456789abcdef", "GET", "/v1/sessions/"+id, "")
		doc, err := idx.Get(ctx, id, "bob")
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case r.Code == 200 && doc != nil:
			live++
		case r.Code != 404 || doc != nil:
			t.Fatalf("bob's session %d: %d %s, document %v", i, r.Code, r.Body, doc)
		}
	}
	if live != 980 {
		t.Fatalf("bob holds %d sessions, want 980", live)
	}
	// Carol holds nothing she could give up: refused, clearly.
	r := call(carolKey, "POST", "/v1/sessions", "")
	var e struct{ Error, Code string }
	if err := json.Unmarshal(r.Body.Bytes(), &e); r.Code != 507 || err != nil || e.Code != "store_full" || e.Error == "" {
		t.Fatalf("carol's create in a full store: %d %s", r.Code, r.Body)
	}
}

// summarizer.timeout is also the manager's deadline of a summarizer call.
func TestSummarizerTimeoutIsTheManagersDeadline(t *testing.T) {
	t.Parallel()
	cfg, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{"arc.reactor.memory.summary.enabled=true", keySummarizerTimeout + "=7s"}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := BuildRuntime(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rt.Close() }()
	if got := rt.Manager.Config().SummarizeTimeout; got != 7*time.Second {
		t.Fatalf("SummarizeTimeout = %s, want 7s", got)
	}
}

// A blank shared-session prefix given in configuration is refused, naming
// the key, not dropped: it would share every session.
func TestBlankSharedSessionPrefixRefused(t *testing.T) {
	t.Parallel()
	for _, over := range []string{"slack-,,teams-", "slack-, ,teams-", " ,slack-"} {
		cfg, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{keySharedPrefixes + "=" + over}})
		if err == nil {
			_, err = BuildRuntime(context.Background(), cfg)
		}
		if err == nil || !strings.Contains(err.Error(), keySharedPrefixes) {
			t.Fatalf("shared-session-prefixes=%q: %v, want an error naming the key", over, err)
		}
	}
	file := writeFile(t, "blank.yaml", "arc.reactor.memory.shared-session-prefixes: [slack-, \"\"]\n")
	if _, err := LoadWith(LoadOptions{Environ: []string{}, Files: []string{file}}); err == nil || !strings.Contains(err.Error(), keySharedPrefixes) {
		t.Fatalf("a blank prefix in YAML: %v", err)
	}
	// An empty value as a whole is no prefix at all.
	cfg, err := LoadWith(LoadOptions{Environ: []string{"ARC_REACTOR_MEMORY_SHARED_SESSION_PREFIXES="}})
	if err != nil || len(cfg.Memory.SharedSessionPrefixes) != 0 {
		t.Fatalf("empty value: %v, %v", cfg.Memory.SharedSessionPrefixes, err)
	}
}

// Service keys and the keys file from the configuration: service: true in
// a YAML entry or a JSON list, a keys file alone is enough to serve, and
// through OpenServer a service key of the configuration acts for the user
// each request names while the file's user key works as its own user.
func TestServeServiceKeysFromConfiguration(t *testing.T) {
	t.Parallel()
	const svcKey, bobKey = "service-key-0123456789abcdef", "bob-key-0123456789abcdef"
	keysFile := writeFile(t, "keys", "# user keys\nbob "+server.HashKey(bobKey)+"\n")
	path := writeFile(t, "strata.yaml", `
arc:
  reactor:
    memory:
      server:
        api-keys-file: `+keysFile+`
        api-keys:
          - user-id: backend
            key-env: STRATA_TEST_SERVICE_KEY
            service: true
`)
	cfg := mustLoad(t, []string{"STRATA_TEST_SERVICE_KEY=" + svcKey}, path)
	if want := []APIKeyConfig{{UserID: "backend", KeyEnv: "STRATA_TEST_SERVICE_KEY", Service: true}}; !reflect.DeepEqual(cfg.Server.APIKeys, want) {
		t.Fatalf("APIKeys = %+v", cfg.Server.APIKeys)
	}
	if v, _ := cfg.Value(keyServerAPIKeys); !strings.Contains(v, "service: true") {
		t.Fatalf("Value(api-keys) = %s", v)
	}
	sc, err := serverConfig(cfg)
	if err != nil || sc.KeysFile != keysFile || len(sc.APIKeys) != 1 || !sc.APIKeys[0].Service {
		t.Fatalf("server config: %+v, %v", sc, err)
	}
	// The JSON form, and a bad value.
	c2, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{keyServerAPIKeys + `=[{"user-id":"backend","sha256":"` + server.HashKey(svcKey) + `","service":true}]`}})
	if err != nil || len(c2.Server.APIKeys) != 1 || !c2.Server.APIKeys[0].Service {
		t.Fatalf("JSON service key: %+v, %v", c2, err)
	}
	if e := loadErr(t, LoadOptions{Overrides: []string{keyServerAPIKeys + `=[{"user-id":"b","key-env":"K","service":"maybe"}]`}}); e.Key != keyServerAPIKeys || !strings.Contains(e.Error(), "true or false") {
		t.Fatalf("service: maybe: %v", e)
	}
	// A keys file alone is enough.
	c3, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{keyServerAPIKeysFile + "=" + keysFile}})
	if err != nil {
		t.Fatal(err)
	}
	if sc, err := serverConfig(c3); err != nil || sc.KeysFile != keysFile || len(sc.APIKeys) != 0 {
		t.Fatalf("keys file alone: %+v, %v", sc, err)
	}

	srv, err := OpenServer(context.Background(), cfg, ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	call := func(key, user, method, path, body string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		if user != "" {
			req.Header.Set(server.UserHeader, user)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return rec
	}
	r := call(svcKey, "carol", "POST", "/v1/sessions", `{"title":"carol's"}`)
	var created struct{ ID string }
	if err := json.Unmarshal(r.Body.Bytes(), &created); r.Code != 201 || err != nil {
		t.Fatalf("create as carol: %d %s", r.Code, r.Body)
	}
	if r := call(svcKey, "carol", "GET", "/v1/sessions/"+created.ID, ""); r.Code != 200 {
		t.Fatalf("carol reads her session: %d %s", r.Code, r.Body)
	}
	if r := call(svcKey, "bob", "GET", "/v1/sessions/"+created.ID, ""); r.Code != 404 {
		t.Fatalf("the service as bob reads carol's session: %d %s", r.Code, r.Body)
	}
	if r := call(bobKey, "", "GET", "/v1/sessions/"+created.ID, ""); r.Code != 404 {
		t.Fatalf("bob's key from the file reads carol's session: %d %s", r.Code, r.Body)
	}
	if r := call(bobKey, "carol", "GET", "/v1/sessions/"+created.ID, ""); r.Code != 403 {
		t.Fatalf("bob's user key naming carol: %d %s", r.Code, r.Body)
	}
	if r := call(svcKey, "", "GET", "/v1/sessions", ""); r.Code != 400 {
		t.Fatalf("the service key without a user: %d %s", r.Code, r.Body)
	}
}

// A blank or odd shared-session viewer is refused with an error naming the
// key.
func TestOddSharedSessionViewerRefused(t *testing.T) {
	t.Parallel()
	for _, over := range []string{"admin,,auditor", "admin, ,auditor"} {
		cfg, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: []string{keySharedViewers + "=" + over}})
		if err == nil {
			_, err = BuildRuntime(context.Background(), cfg)
		}
		if err == nil || !strings.Contains(err.Error(), keySharedViewers) {
			t.Fatalf("shared-session-viewers=%q: %v, want an error naming the key", over, err)
		}
	}
}

// Through strata serve, on both stores: three users and two shared
// threads, written through one service key acting for each user. GET
// /v1/sessions and its search show a thread to the users who wrote in it
// and to the configured viewer, never to the others; a thread is still
// read by its id by anyone, as shared-session-prefixes says.
func TestServeSharedThreadsShownToParticipants(t *testing.T) {
	t.Parallel()
	for _, pg := range []bool{false, true} {
		t.Run(fmt.Sprintf("pg=%v", pg), func(t *testing.T) {
			t.Parallel()
			const svcKey = "service-key-0123456789abcdef"
			over := []string{
				keyServerAPIKeys + `=[{"user-id":"backend","sha256":"` + server.HashKey(svcKey) + `","service":true}]`,
				keySharedPrefixes + "=slack-", keySharedViewers + "=dana",
			}
			if pg {
				over = append(over, keyDatasourceURL+"="+dbtest.NewEmptySchema(t).URL)
			}
			cfg, err := LoadWith(LoadOptions{Environ: []string{}, Overrides: over})
			if err != nil {
				t.Fatal(err)
			}
			srv, err := OpenServer(context.Background(), cfg, ServerOptions{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			call := func(user, method, path, body string) *httptest.ResponseRecorder {
				t.Helper()
				req := httptest.NewRequest(method, path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+svcKey)
				req.Header.Set(server.UserHeader, user)
				if body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				rec := httptest.NewRecorder()
				srv.Handler().ServeHTTP(rec, req)
				return rec
			}
			post := func(user, id, text string) {
				t.Helper()
				if r := call(user, "POST", "/v1/sessions/"+id+"/messages", `{"turn":{"user":"`+text+`","assistant":"noted"}}`); r.Code != 200 {
					t.Fatalf("%s writes in %s: %d %s", user, id, r.Code, r.Body)
				}
			}
			// alice has a session of her own too.
			if r := call("alice", "POST", "/v1/sessions", `{"messages":[{"role":"user","content":"Which tomato varieties grow on a balcony?"}]}`); r.Code != 201 {
				t.Fatalf("alice creates a session: %d %s", r.Code, r.Body)
			}
			// Shared threads are made by their first message (an import of
			// a Slack thread, or a bot's first save): through import here.
			thread := func(user, id, text string) {
				t.Helper()
				snap := `{"version":1,"session_id":"` + id + `","user_id":"` + user + `","messages":[{"seq":1,"role":"user","content":"` + text + `","created_at":"2026-01-01T00:00:00Z"}]}`
				if r := call(user, "POST", "/v1/sessions/import", snap); r.Code != 201 {
					t.Fatalf("%s imports %s: %d %s", user, id, r.Code, r.Body)
				}
			}
			const t1, t2 = "slack-C1-1700000000.1", "slack-C2-1700000000.2"
			thread("alice", t1, "When is the rocket launch rehearsal?")
			post("bob", t1, "Who runs the rocket launch checklist?")
			thread("carol", t2, "How do I descale the office espresso machine?")
			post("bob", t2, "Which espresso beans should the office order?")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := srv.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			list := func(user, query string) []string {
				t.Helper()
				path := "/v1/sessions"
				if query != "" {
					path += "?search=" + strings.ReplaceAll(query, " ", "+")
				}
				r := call(user, "GET", path, "")
				if r.Code != 200 {
					t.Fatalf("%s lists %q: %d %s", user, query, r.Code, r.Body)
				}
				var out struct {
					Sessions []struct{ ID string } `json:"sessions"`
					Matches  []struct{ ID string } `json:"matches"`
					Results  []struct{ ID string } `json:"results"`
				}
				if err := json.Unmarshal(r.Body.Bytes(), &out); err != nil {
					t.Fatal(err)
				}
				var ids []string
				for _, e := range append(append(out.Sessions, out.Matches...), out.Results...) {
					if strings.HasPrefix(e.ID, "slack-") {
						ids = append(ids, e.ID)
					}
				}
				slices.Sort(ids)
				return ids
			}
			for _, tc := range []struct {
				user, query string
				want        []string
			}{
				{"alice", "", []string{t1}},
				{"bob", "", []string{t1, t2}},
				{"carol", "", []string{t2}},
				{"dana", "", []string{t1, t2}},
				{"erin", "", nil},
				{"alice", "office espresso machine", nil},
				{"carol", "office espresso machine", []string{t2}},
				{"erin", "rocket launch rehearsal", nil},
				{"dana", "rocket launch rehearsal", []string{t1}},
			} {
				if got := list(tc.user, tc.query); !slices.Equal(got, tc.want) {
					t.Errorf("%s lists %q: shared %v, want %v", tc.user, tc.query, got, tc.want)
				}
			}
			// Read by its id: open to every user, as configured.
			if r := call("erin", "GET", "/v1/sessions/"+t2, ""); r.Code != 200 {
				t.Fatalf("erin reads the thread by its id: %d %s", r.Code, r.Body)
			}
		})
	}
}
