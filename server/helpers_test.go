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

	"github.com/strata-go/strata/autoconfig"
	"github.com/strata-go/strata/internal/testutil"
)

func TestMain(m *testing.M) {
	installRecorder()
	goleak.VerifyTestMain(m,
		// dbtest's admin pool is shared by the test binary and never closed.
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionCleaner"),
	)
}

// Test API keys: alice's comes from an environment variable, bob's is
// configured as a digest.
const (
	keyAlice = "alice-key-0123456789abcdef"
	keyBob   = "bob-key-0123456789abcdef-xyz"
)

// baseOverrides is a small hierarchical configuration: chunked folds with
// the extractive summarizer, K = 6 verbatim messages growing to 12 before a
// fold.
func baseOverrides() []string {
	return []string{
		"arc.reactor.memory.summary.enabled=true",
		"arc.reactor.memory.summary.trigger-message-count=10",
		"arc.reactor.memory.summary.recent-message-count=6",
		"arc.reactor.memory.policy.name=chunked",
		"arc.reactor.memory.policy.buffer-message-count=6",
		"arc.reactor.memory.server.listen=127.0.0.1:0",
		"arc.reactor.memory.server.api-keys=alice=key-env:STRATA_TEST_KEY_ALICE,bob=sha256:" + HashKey(keyBob),
	}
}

// testConfig loads the test configuration plus extra overrides.
func testConfig(t testing.TB, extra ...string) *autoconfig.Config {
	t.Helper()
	acfg, err := autoconfig.LoadWith(autoconfig.LoadOptions{
		Environ:   []string{"STRATA_TEST_KEY_ALICE=" + keyAlice},
		Overrides: append(baseOverrides(), extra...),
	})
	if err != nil {
		t.Fatal(err)
	}
	return acfg
}

// testServer is a Server serving on a loopback port.
type testServer struct {
	t      testing.TB
	srv    *Server
	url    string
	client *http.Client
	logs   *testutil.Buffer
	stop   func() error // graceful stop; idempotent
}

// startServer opens a server from acfg and serves it on 127.0.0.1:0 until
// the test ends.
func startServer(t testing.TB, acfg *autoconfig.Config, opts ...Option) *testServer {
	t.Helper()
	logs := &testutil.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", logs)
		}
	})
	srv, err := Open(context.Background(), acfg, append([]Option{WithLogger(logger)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, srv, logs)
}

// serveOn serves srv on a loopback port until the test ends.
func serveOn(t testing.TB, srv *Server, logs *testutil.Buffer) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
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
	return &testServer{t: t, srv: srv, url: "http://" + ln.Addr().String(), client: client, logs: logs, stop: stop}
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
