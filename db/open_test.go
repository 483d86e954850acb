package db_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory/store"
)

func TestOpenErrorRedactsPassword(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Port 1 on loopback refuses connections at once.
	_, err := db.Open(ctx, "postgres://alice:hunter2@127.0.0.1:1/app?sslmode=disable&connect_timeout=5")
	if err == nil {
		t.Fatal("Open succeeded against a closed port")
	}
	if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "alice:xxxxx@127.0.0.1:1") || !strings.HasPrefix(err.Error(), "db: open") {
		t.Errorf("error = %q", err)
	}
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("connection refused is not reported as an outage: %v", err)
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Errorf("the network error is not kept in the chain: %v", err)
	}
	if _, err := db.Open(ctx, "  "); err == nil {
		t.Error("Open accepted an empty data source name")
	}
	// An unparsable URL: the parser's error quotes it, password included.
	_, err = db.Open(ctx, "postgres://alice:hunter2@127.0.0.1:5x/app")
	if err == nil || strings.Contains(err.Error(), "hunter2") || errors.Is(err, store.ErrUnavailable) {
		t.Errorf("unparsable URL: %v; want an error without the password, not an outage", err)
	}
}

// silentServer listens on 127.0.0.1 and accepts connections without ever
// answering: a PostgreSQL server that hangs. It returns its address.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }() // read, never write
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// openBounded runs db.Open with a context that never expires, so that
// only the connect timeout can end a hang, and fails the test if Open has
// not returned within a generous bound.
func openBounded(t *testing.T, dsn string, opts ...db.OpenOption) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		d, err := db.Open(context.Background(), dsn, opts...)
		if d != nil {
			_ = d.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("Open against a server that never answers did not return")
		return nil
	}
}

// TestOpenHungServerFailsByConnectTimeout: a server that accepts the
// connection but never answers the start-up handshake makes Open fail by
// the connect timeout, reported as an outage — with the default timeout,
// with WithConnectTimeout, and with a connect_timeout in the data source
// name, which wins over the option. The server is an in-memory connection
// that reads and never writes, in a testing/synctest bubble: Open fails
// after exactly the timeout of the bubble's clock, and nothing waits for
// real. TestOpenHungSocketFailsByConnectTimeout does it once on a socket.
func TestOpenHungServerFailsByConnectTimeout(t *testing.T) {
	t.Parallel()
	const base = "postgres://u:p@db.invalid:5432/app?sslmode=disable"
	for name, c := range map[string]struct {
		dsn  string
		opts []db.OpenOption
		want time.Duration
	}{
		"default":              {dsn: base, want: db.DefaultConnectTimeout},
		"option":               {dsn: base, opts: []db.OpenOption{db.WithConnectTimeout(2 * time.Second)}, want: 2 * time.Second},
		"option rounded":       {dsn: base, opts: []db.OpenOption{db.WithConnectTimeout(1500 * time.Millisecond)}, want: 2 * time.Second},
		"dsn wins":             {dsn: base + "&connect_timeout=3", opts: []db.OpenOption{db.WithConnectTimeout(time.Hour)}, want: 3 * time.Second},
		"key=value form":       {dsn: "host=db.invalid port=5432 user=u dbname=app sslmode=disable connect_timeout=1", want: time.Second},
		"no statement timeout": {dsn: base, opts: []db.OpenOption{db.WithStatementTimeout(0)}, want: db.DefaultConnectTimeout},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var servers []net.Conn
				dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
					client, server := net.Pipe()
					servers = append(servers, server)
					go func() { _, _ = io.Copy(io.Discard, server) }() // read, never write
					return client, nil
				}
				start := time.Now()
				d, err := db.Open(context.Background(), c.dsn, append(c.opts, db.WithDialer(dial))...)
				elapsed := time.Since(start)
				for _, s := range servers {
					_ = s.Close()
				}
				if d != nil {
					_ = d.Close()
				}
				checkConnectTimeout(t, err)
				if elapsed != c.want {
					t.Errorf("Open failed after %v, want the connect timeout %v", elapsed, c.want)
				}
			})
		})
	}
}

// TestOpenHungSocketFailsByConnectTimeout: the same on a real socket, with
// a one-second timeout: the deadlines lib/pq and Open set hold on TCP.
func TestOpenHungSocketFailsByConnectTimeout(t *testing.T) {
	t.Parallel()
	addr := silentServer(t)
	err := openBounded(t, "postgres://u:p@"+addr+"/app?sslmode=disable", db.WithConnectTimeout(time.Second))
	checkConnectTimeout(t, err)
}

// checkConnectTimeout fails t unless err is the failure of an Open that
// ran into its connect timeout: a network timeout, reported as an outage.
func checkConnectTimeout(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("Open succeeded against a server that never answers")
	}
	var netErr net.Error
	if !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Errorf("Open = %v, want a network timeout", err)
	}
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Open = %v, want it to wrap store.ErrUnavailable", err)
	}
}

func showStatementTimeout(t *testing.T, ctx context.Context, dsn string, opts ...db.OpenOption) string {
	t.Helper()
	d, err := db.Open(ctx, dsn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var v string
	if err := d.GetContext(ctx, &v, `SHOW statement_timeout`); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestOpenStatementTimeout: Open bounds statements on the client, not
// with the server's statement_timeout (which a pooler refuses as a start-up
// parameter); a statement that runs past the bound is cancelled on the
// server and fails as an outage, through the stores too; a value in the
// data source name is left to the server.
func TestOpenStatementTimeout(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSchema(t)
	ctx := testCtx(t)
	if got := showStatementTimeout(t, ctx, s.URL); got != "0" {
		t.Errorf("default: the server's statement_timeout = %q, want the server's 0 (no start-up parameter)", got)
	}
	withParam, err := db.WithDSNParams(s.URL, map[string]string{"statement_timeout": "1234"})
	if err != nil {
		t.Fatal(err)
	}
	if got := showStatementTimeout(t, ctx, withParam, db.WithStatementTimeout(time.Hour)); got != "1234ms" {
		t.Errorf("statement_timeout in the DSN: %q, want 1234ms", got)
	}
	checkStatementTimeout(t, ctx, s.URL, s.Name)

	// A prepared statement (WithPreparedStatements) is bounded too: an
	// append held up by checkStatementTimeout's slow trigger, still in place.
	d, err := db.Open(ctx, s.URL, db.WithStatementTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ms := db.NewMessageStore(d, db.WithPreparedStatements())
	start := time.Now()
	_, err = ms.Append(ctx, "s", "alice", user("q2"), assistant("slow"))
	var pqErr *pq.Error
	if !errors.Is(err, store.ErrUnavailable) || !errors.As(err, &pqErr) || pqErr.Code != "57014" {
		t.Fatalf("prepared Append past the statement timeout = %v, want ErrUnavailable wrapping SQLSTATE 57014", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("the prepared append was cancelled after %v, want about 200ms", el)
	}
	if tail, err := ms.Tail(ctx, "s", "alice", 10); err != nil || tail.Total != 2 {
		t.Errorf("after the timed-out prepared append: %+v, %v; want the 2 earlier messages", tail, err)
	}
}

// checkStatementTimeout: on a pool made from url with a 200ms statement
// timeout, a statement sleeping 30s fails within seconds with SQLSTATE
// 57014, the server stops running it (the cancel request reached it), and
// a store's append held up by a slow trigger fails as an outage.
// (name: the application_name of url's connections).
func checkStatementTimeout(t *testing.T, ctx context.Context, url, name string) {
	t.Helper()
	d, err := db.Open(ctx, url, db.WithStatementTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	marker := "strata_timeout_" + name
	start := time.Now()
	_, err = d.ExecContext(ctx, `SELECT pg_sleep(30), $1::text`, marker)
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) || pqErr.Code != "57014" {
		t.Fatalf("pg_sleep past the statement timeout: %v, want SQLSTATE 57014", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("the statement was cancelled after %v, want about 200ms", el)
	}
	var running int
	if err := dbtest.Admin(t).GetContext(ctx, &running, `SELECT count(*) FROM pg_stat_activity
		WHERE state = 'active' AND query LIKE '%pg_sleep(30)%' AND query NOT LIKE '%pg_stat_activity%'
		  AND application_name = $1`, name); err != nil {
		t.Fatal(err)
	} else if running != 0 {
		t.Errorf("%d backends still run the cancelled statement", running)
	}

	// The same through a store: an append held up by a slow trigger.
	for _, q := range []string{
		`CREATE FUNCTION strata_test_sleep() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN
		   IF NEW.content = 'slow' THEN PERFORM pg_sleep(30); END IF;
		   RETURN NEW;
		 END $$`,
		`CREATE TRIGGER strata_test_sleep BEFORE INSERT ON strata_messages
		 FOR EACH ROW EXECUTE FUNCTION strata_test_sleep()`,
	} {
		if _, err := d.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	ms := db.NewMessageStore(d)
	mustAppend(t, ctx, ms, "s", "alice", user("q0"), assistant("a0"))
	_, err = ms.Append(ctx, "s", "alice", user("q1"), assistant("slow"))
	if !errors.Is(err, store.ErrUnavailable) || !errors.As(err, &pqErr) || pqErr.Code != "57014" {
		t.Fatalf("Append past the statement timeout = %v, want ErrUnavailable wrapping SQLSTATE 57014", err)
	}
	if tail, err := ms.Tail(ctx, "s", "alice", 10); err != nil || tail.Total != 2 {
		t.Errorf("after the timed-out append: %+v, %v; want the 2 earlier messages", tail, err)
	}
}

// freezableProxy forwards TCP connections to target until frozen; while
// frozen it keeps the connections open but forwards nothing, like a server
// or network that stopped answering.
type freezableProxy struct {
	addr string

	mu     sync.Mutex
	frozen bool
	thaw   chan struct{}
}

func newFreezableProxy(t *testing.T, target string) *freezableProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezableProxy{addr: ln.Addr().String(), thaw: make(chan struct{})}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, up)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); p.pipe(up, c) }()
			go func() { defer wg.Done(); p.pipe(c, up) }()
		}
	}()
	t.Cleanup(func() {
		p.setFrozen(false)
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return p
}

func (p *freezableProxy) setFrozen(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on == p.frozen {
		return
	}
	p.frozen = on
	if !on {
		close(p.thaw)
		p.thaw = make(chan struct{})
	}
}

// pipe copies src to dst, holding every chunk while the proxy is frozen.
func (p *freezableProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			for {
				p.mu.Lock()
				frozen, thaw := p.frozen, p.thaw
				p.mu.Unlock()
				if !frozen {
					break
				}
				<-thaw
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			_ = dst.Close()
			return
		}
	}
}

// TestHungServerFailsCallsByReadBound: when the server stops answering on
// connections already open, neither its statement_timeout (it is not
// running the statement) nor the caller's context (lib/pq would only send
// it a cancel request) can end a call. Open's bound on waiting for the
// server — statement timeout plus connect timeout — ends every call with
// an outage error, and calls work again once the server answers.
func TestHungServerFailsCallsByReadBound(t *testing.T) {
	t.Parallel()
	s := dbtest.NewSchema(t)
	u, err := url.Parse(s.URL)
	if err != nil || u.Host == "" {
		t.Skipf("the test server's address is not a URL host (%v)", err)
	}
	ctx := testCtx(t)
	proxy := newFreezableProxy(t, u.Host)
	u.Host = proxy.addr
	d, err := db.Open(ctx, u.String(), db.WithStatementTimeout(300*time.Millisecond), db.WithConnectTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ms, sums := db.NewMessageStore(d), db.NewSummaryStore(d)
	mustAppend(t, ctx, ms, "s", "alice", user("q"), assistant("a"))

	proxy.setFrozen(true)
	for name, call := range map[string]func() error{
		"Tail":   func() error { _, err := ms.Tail(ctx, "s", "alice", 5); return err },
		"Append": func() error { _, err := ms.Append(ctx, "s", "alice", user("q2"), assistant("a2")); return err },
		"Get":    func() error { _, err := sums.Get(ctx, "s"); return err },
	} {
		done := make(chan error, 1)
		go func() { done <- call() }()
		select {
		case err := <-done:
			var netErr net.Error
			if !errors.Is(err, store.ErrUnavailable) || !errors.As(err, &netErr) || !netErr.Timeout() {
				t.Errorf("%s against a hung server = %v, want ErrUnavailable wrapping a network timeout", name, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s against a hung server did not return", name)
		}
	}
	proxy.setFrozen(false)
	if tail, err := ms.Tail(ctx, "s", "alice", 5); err != nil || tail.Total < 2 {
		t.Errorf("Tail once the server answers again = %+v, %v", tail, err)
	}
}

// TestMigrateRunsWithoutStatementTimeout: migrations are not cut short by
// the pool's statement timeout, and a pool not made by Open gets its
// connection back with the timeout it had.
func TestMigrateRunsWithoutStatementTimeout(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)

	// A pool made by Open, whose statement timeout no migration could meet.
	s := dbtest.NewEmptySchema(t)
	d, err := db.Open(ctx, s.URL, db.WithStatementTimeout(time.Microsecond))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatalf("Migrate on a pool with a 1µs statement timeout: %v", err)
	}

	// Any other pool: its one connection keeps its statement timeout.
	s2 := dbtest.NewEmptySchema(t)
	dsn, err := db.WithDSNParams(s2.URL, map[string]string{"statement_timeout": "4321"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := sqlx.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetMaxOpenConns(1)
	if err := db.Migrate(ctx, other); err != nil {
		t.Fatal(err)
	}
	var v string
	if err := other.GetContext(ctx, &v, `SHOW statement_timeout`); err != nil || v != "4321ms" {
		t.Errorf("statement_timeout after Migrate = %q (%v), want 4321ms", v, err)
	}
	if got := db.LatestMigration(); got == 0 {
		t.Fatal("no embedded migration")
	}
	if v, _, err := db.MigrationVersion(ctx, other); err != nil || v != db.LatestMigration() {
		t.Errorf("version %d (%v), want %d", v, err, db.LatestMigration())
	}
}
