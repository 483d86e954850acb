package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/internal/testutil"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

func TestMain(m *testing.M) {
	installRecorder()
	goleak.VerifyTestMain(m,
		// dbtest's admin pool is shared by the test binary and never closed.
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionCleaner"),
	)
}

// Test API keys: alice's is configured in plain form, bob's as a digest.
const (
	keyAlice = "alice-key-0123456789abcdef"
	keyBob   = "bob-key-0123456789abcdef-xyz"
)

// testKeys are the API keys of the test servers.
func testKeys() []APIKey {
	return []APIKey{{UserID: "alice", Key: keyAlice}, {UserID: "bob", SHA256: HashKey(keyBob)}}
}

// testMemoryConfig is a small hierarchical configuration: chunked folds
// with the extractive summarizer, K = 6 verbatim messages growing to 12
// before a fold.
func testMemoryConfig() memory.Config {
	c := memory.DefaultConfig()
	c.Enabled = true
	c.TriggerMessageCount = 10
	c.RecentMessageCount = 6
	c.Policy = memory.PolicyChunked
	c.BufferMessageCount = 6
	return c
}

// stack describes the parts a test server is built from; zero fields take
// the defaults of build.
type stack struct {
	mcfg  *memory.Config      // default testMemoryConfig()
	store memory.MessageStore // default in memory
	sums  summary.Store       // default in memory (with summaries on)
	svc   summary.Service     // default extractive
	idx   catalog.Index       // default in memory
	// noCatalog builds the server without a catalogue.
	noCatalog bool
	// pg builds the stores and the index on a fresh PostgreSQL schema, with
	// a readiness check pinging it (the test is skipped without a database).
	pg      bool
	cfg     Config // APIKeys default to testKeys()
	mgrOpts []memory.Option
	srvOpts []Option
	logs    *testutil.Buffer // default a new buffer
	quiet   bool             // discard the logs
}

// build makes the manager, the catalogue and the server as an application
// (or autoconfig.OpenServer) wires them. Closing the server releases it
// all.
func (st stack) build(t testing.TB) *Server {
	t.Helper()
	if st.logs == nil {
		st.logs = &testutil.Buffer{}
	}
	var out io.Writer = st.logs
	if st.quiet {
		out = io.Discard
	}
	logger := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	mcfg := testMemoryConfig()
	if st.mcfg != nil {
		mcfg = *st.mcfg
	}
	var onClose []Option
	if st.pg {
		d := dbtest.New(t)
		d.SetMaxOpenConns(20)
		st.store, st.idx = db.NewMessageStore(d), db.NewCatalogIndex(d)
		if mcfg.Enabled {
			st.sums = db.NewSummaryStore(d)
		}
		onClose = append(onClose, WithReadiness("postgres", d.PingContext))
	}
	if st.store == nil {
		st.store = memory.NewInMemoryStore()
	}
	if mcfg.Enabled && st.sums == nil {
		st.sums = summary.NewInMemoryStore(0)
	}
	if mcfg.Enabled && st.svc == nil {
		st.svc = summary.NewExtractiveService()
	}
	mopts := []memory.Option{memory.WithLogger(logger)}
	if mcfg.Enabled {
		mopts = append(mopts, memory.WithSummaries(st.sums, st.svc))
	}
	mgr, err := memory.NewManager(st.store, mcfg, append(mopts, st.mgrOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	var cat *catalog.Catalog
	if !st.noCatalog {
		if st.idx == nil {
			st.idx = catalog.NewMemoryIndex()
		}
		if cat, err = catalog.New(mgr, st.idx, catalog.WithLogger(logger)); err != nil {
			t.Fatal(err)
		}
	}
	if st.cfg.APIKeys == nil {
		st.cfg.APIKeys = testKeys()
	}
	srv, err := New(mgr, cat, st.cfg, append(append([]Option{WithLogger(logger)}, onClose...), st.srvOpts...)...)
	if err != nil {
		_ = mgr.Close()
		if cat != nil {
			_ = cat.Close()
		}
		t.Fatal(err)
	}
	return srv
}

// testServer is a Server serving on a loopback port.
type testServer struct {
	t      testing.TB
	srv    *Server
	url    string
	client *http.Client
	logs   *testutil.Buffer
	stop   func() error // graceful stop; idempotent
	// lnClosed is closed when Serve closes the listener (at the start of
	// a shutdown).
	lnClosed <-chan struct{}
}

// signalingListener closes closed when it is closed.
type signalingListener struct {
	net.Listener
	once   sync.Once
	closed chan struct{}
}

// Close implements net.Listener.
func (l *signalingListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { close(l.closed) })
	return err
}

// start builds the stack and serves it on 127.0.0.1:0 until the test ends.
func (st stack) start(t testing.TB) *testServer {
	t.Helper()
	if st.logs == nil {
		st.logs = &testutil.Buffer{}
	}
	logs := st.logs
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", logs)
		}
	})
	return serveOn(t, st.build(t), logs)
}

// serveOn serves srv on a loopback port until the test ends.
func serveOn(t testing.TB, srv *Server, logs *testutil.Buffer) *testServer {
	t.Helper()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &signalingListener{Listener: tcp, closed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	client := serveClient()
	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() {
			client.CloseIdleConnections()
			cancel()
			select {
			case stopErr = <-done:
			case <-time.After(60 * time.Second):
				stopErr = fmt.Errorf("Serve did not return within 60s")
			}
			client.CloseIdleConnections()
		})
		return stopErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("graceful stop: %v", err)
		}
	})
	return &testServer{t: t, srv: srv, url: "http://" + ln.Addr().String(), client: client, logs: logs, stop: stop, lnClosed: ln.closed}
}

// serveClient is the tests' HTTP client: its own transport, so that its
// idle connections can be closed.
func serveClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 100}, Timeout: 30 * time.Second}
}

// reply is a response read whole.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) String() string { return fmt.Sprintf("%d %s", r.status, bytes.TrimSpace(r.body)) }

// decode unmarshals the body, failing the test when it is not JSON.
func (r reply) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("response %s is not JSON: %v", r, err)
	}
}

// errorOf returns the error body of a reply.
func (r reply) errorOf(t testing.TB) errorBody {
	t.Helper()
	var e errorBody
	r.decode(t, &e)
	if e.Error == "" || e.Code == "" || e.RequestID == "" {
		t.Fatalf("error body lacks error, code or request_id: %s", r)
	}
	if got := r.header.Get(RequestIDHeader); got != e.RequestID {
		t.Fatalf("request_id %q differs from the %s header %q", e.RequestID, RequestIDHeader, got)
	}
	return e
}

// do sends a request. body is nil, a string or []byte (sent as is) or a
// value sent as JSON. headers are "Name: value" strings.
func (ts *testServer) do(method, path, key string, body any, headers ...string) reply {
	ts.t.Helper()
	r, err := ts.try(context.Background(), method, path, key, body, headers...)
	if err != nil {
		ts.t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

func (ts *testServer) try(ctx context.Context, method, path, key string, body any, headers ...string) (reply, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader: // sent chunked: no Content-Length
		rd = b
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return reply{}, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, ts.url+path, rd)
	if err != nil {
		return reply{}, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for _, h := range headers {
		name, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(name), strings.TrimSpace(v))
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	checkResponse(ts.t, req, resp.StatusCode, resp.Header, raw)
	return reply{status: resp.StatusCode, header: resp.Header, body: raw}, nil
}

// must sends a request and checks its status.
func (ts *testServer) must(status int, method, path, key string, body any, out any) reply {
	ts.t.Helper()
	r := ts.do(method, path, key, body)
	if r.status != status {
		ts.t.Fatalf("%s %s: got %s, want %d", method, path, r, status)
	}
	if out != nil {
		r.decode(ts.t, out)
	}
	return r
}

// flush waits for background folds and catalogue refreshes.
func (ts *testServer) flush() {
	ts.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ts.srv.Flush(ctx); err != nil {
		ts.t.Fatalf("Flush: %v", err)
	}
}

// create makes a session for the user of key and returns its id.
func (ts *testServer) create(key string, body any) string {
	ts.t.Helper()
	var created wireAppend
	ts.must(201, "POST", "/v1/sessions", key, body, &created)
	if !validSessionID(created.ID) {
		ts.t.Fatalf("create: id %q", created.ID)
	}
	return created.ID
}

// turn is the body of a one-turn append.
func turn(user, assistant string) map[string]any {
	return map[string]any{"turn": map[string]string{"user": user, "assistant": assistant}}
}
