package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-go/strata/internal/testutil"
	"github.com/strata-go/strata/server"
)

const serveKey = "serve-test-key-0123456789"

func TestServeUsageErrors(t *testing.T) {
	t.Parallel()
	keys := "arc.reactor.memory.server.api-keys=alice=sha256:" + server.HashKey(serveKey)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"argument", []string{"serve", "extra"}, 2, `serve: unexpected argument "extra"`},
		{"log format", []string{"serve", "--log-format", "xml"}, 2, `--log-format "xml"`},
		{"log level", []string{"serve", "--log-level", "loud"}, 2, `--log-level "loud"`},
		{"unknown flag", []string{"serve", "--port", "80"}, 2, "flag provided but not defined: -port"},
		{"no keys", []string{"serve"}, 1, "serve: no API keys configured"},
		{"bad listen", []string{"serve", "--listen", "nowhere", "--set", keys}, 1, "arc.reactor.memory.server.listen = \"nowhere\" (from --set): must be host:port"},
		{"bad key", []string{"serve", "--set", "arc.reactor.memory.server.api-keys=alice=sha256:beef"}, 1, "64 hexadecimal"},
		{"key variable unset", []string{"serve", "--set", "arc.reactor.memory.server.api-keys=alice=key-env:STRATA_SERVE_TEST_UNSET"}, 1, "STRATA_SERVE_TEST_UNSET holding the key is empty or unset"},
		{"reserved user", []string{"serve", "--set", "arc.reactor.memory.server.api-keys=anonymous=sha256:" + strings.Repeat("ab", 32)}, 1, `user id "anonymous" is reserved`},
		{"port in use", []string{"serve", "--listen", busy.Addr().String(), "--set", keys}, 1, "serve: listen tcp " + busy.Addr().String() + ": bind: address already in use"},
	} {
		code, _, stderr := cli(t, c.args...)
		wantError(t, code, stderr, c.code, c.want)
	}
	code, out, _ := cli(t, "serve", "--help")
	if code != 0 || !strings.Contains(out, "Usage: strata serve") || !strings.Contains(out, "-listen ADDR") {
		t.Fatalf("serve --help: %d %q", code, out)
	}
	// Every operation of the API is listed, and the export's bound stated.
	var spec struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(server.OpenAPI(), &spec); err != nil {
		t.Fatal(err)
	}
	for path, ops := range spec.Paths {
		if !strings.HasPrefix(path, "/v1/") {
			continue
		}
		for method := range ops {
			line := regexp.MustCompile(`(?m)^  ` + strings.ToUpper(method) + `\s+` + regexp.QuoteMeta(path) + `(\s|$)`)
			if !line.MatchString(out) {
				t.Errorf("serve --help does not list %s %s", strings.ToUpper(method), path)
			}
		}
	}
	if !strings.Contains(out, "An export is streamed") || !strings.Contains(out, "8 MiB of messages") {
		t.Errorf("serve --help does not state the export's bound")
	}
	if !strings.Contains(out, "everything derived from them") || !strings.Contains(out, "one summarizer call") || !strings.Contains(out, "X-Strata-User") {
		t.Errorf("serve --help does not state what erasure guarantees and costs, or how service keys act")
	}
	if code, out, _ := cli(t, "--help"); code != 0 || !strings.Contains(out, "serve ") {
		t.Fatalf("strata --help does not list serve: %q", out)
	}
}

var (
	listeningRE = regexp.MustCompile(`strata serve: (http://127\.0\.0\.1:\d+) \(`)
	sessionIDRE = regexp.MustCompile(`"id":"([0-9a-f-]{36})"`)
)

// startServe runs strata serve in-process and returns its URL, its outputs
// and a channel with its exit code.
func startServe(t *testing.T, ctx context.Context, extra ...string) (string, *testutil.Buffer, *testutil.Buffer, chan int) {
	t.Helper()
	args := append([]string{"serve", "--listen", "127.0.0.1:0",
		"--set", "arc.reactor.memory.server.api-keys=alice=sha256:" + server.HashKey(serveKey),
		"--set", "arc.reactor.memory.summary.enabled=true",
		"--set", "arc.reactor.memory.server.shutdown-timeout=10s"}, extra...)
	stdout, stderr := &testutil.Buffer{}, &testutil.Buffer{}
	exit := make(chan int, 1)
	go func() { exit <- runContext(ctx, args, stdout, stderr) }()
	expired := time.NewTimer(20 * time.Second)
	defer expired.Stop()
	for {
		out, written := stdout.Snapshot()
		if m := listeningRE.FindStringSubmatch(out); m != nil {
			return m[1], stdout, stderr, exit
		}
		select {
		case <-written:
		case code := <-exit:
			t.Fatalf("strata serve exited with %d: %s", code, stderr)
		case <-expired.C:
			t.Fatalf("strata serve did not start: %s %s", stdout, stderr)
		}
	}
}

func call(t *testing.T, client *http.Client, method, url, key, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServe starts strata serve, uses it and stops it by cancelling its
// context (as SIGINT does through main).
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Access-log lines are debug: serving requests is normal operation.
	url, stdout, stderr, exit := startServe(t, ctx, "--log-format", "json", "--log-level", "debug")
	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()

	if code, _ := call(t, client, "GET", url+"/healthz", "", ""); code != 200 {
		t.Fatalf("healthz: %d", code)
	}
	// Serving is announced once: the log's "listening", beside one line
	// on stdout saying what serves.
	if n := strings.Count(stdout.String()+stderr.String(), "listening"); n != 1 {
		t.Fatalf("\"listening\" said %d times:\n%s\n%s", n, stdout, stderr)
	}
	if code, body := call(t, client, "GET", url+"/v1/sessions", "", ""); code != 401 || !strings.Contains(body, "missing API key") {
		t.Fatalf("no key: %d %s", code, body)
	}
	// Appending to a session that was never created is 404.
	if code, body := call(t, client, "POST", url+"/v1/sessions/cli-1/messages", serveKey, `{"turn":{"user":"hi"}}`); code != 404 {
		t.Fatalf("append to an unknown session: %d %s", code, body)
	}
	code, body := call(t, client, "POST", url+"/v1/sessions", serveKey, `{"title":"Late orders"}`)
	m := sessionIDRE.FindStringSubmatch(body)
	if code != 201 || m == nil {
		t.Fatalf("create: %d %s", code, body)
	}
	id := m[1]
	for i := range 12 {
		if code, body := call(t, client, "POST", url+"/v1/sessions/"+id+"/messages", serveKey,
			`{"turn":{"user":"My order #Z-`+string(rune('0'+i%10))+` is late","assistant":"Checking.","model_variant":"arco"}}`); code != 200 {
			t.Fatalf("append %d: %d %s", i, code, body)
		}
	}
	// The last append started a background fold; until it is stored a load
	// may show the previous summary ("stale", a documented degradation when
	// the fold outlasts the load's grace, as on a loaded machine). The
	// HTTP API has no way to wait for a background fold: the loop polls it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, body := call(t, client, "GET", url+"/v1/sessions/"+id+"/context?budget=4000", serveKey, "")
		if code == 200 && strings.Contains(body, `"mode":"hierarchical"`) {
			break
		}
		if code != 200 || !strings.Contains(body, `"mode":"stale"`) || time.Now().After(deadline) {
			t.Fatalf("context: %d %s", code, body)
		}
	}
	client.CloseIdleConnections()
	cancel()
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("strata serve did not stop")
	}
	if !strings.Contains(stdout.String(), "strata serve: stopped") || !strings.Contains(stdout.String(), "stores: in-memory, summaries: on, extractive") {
		t.Errorf("stdout: %s", stdout)
	}
	logs := stderr.String()
	if strings.Contains(logs, serveKey) {
		t.Fatal("the API key is in the log")
	}
	if !strings.Contains(logs, `"level":"WARN","msg":"strata serve: the in-memory store is a development store`) {
		t.Errorf("no start-up warning about the in-memory store: %s", logs)
	}
	if !strings.Contains(logs, `"msg":"http request"`) || !strings.Contains(logs, `"route":"/v1/sessions/{id}/context"`) || !strings.Contains(logs, `"user_id":"alice"`) {
		t.Errorf("no JSON access log: %s", logs)
	}
}

// TestServeSIGTERM: a service manager's SIGTERM stops the server gracefully.
// Not parallel: it signals the test process (strata serve handles SIGTERM
// while it runs).
func TestServeSIGTERM(t *testing.T) {
	url, stdout, stderr, exit := startServe(t, context.Background())
	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	if code, _ := call(t, client, "GET", url+"/readyz", "", ""); code != 200 {
		t.Fatalf("readyz: %d", code)
	}
	client.CloseIdleConnections()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit %d after SIGTERM: %s", code, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("strata serve ignored SIGTERM")
	}
	if !strings.Contains(stdout.String(), "strata serve: stopped") || !strings.Contains(stderr.String(), "shutting down") {
		t.Errorf("no graceful stop: %s / %s", stdout, stderr)
	}
}
