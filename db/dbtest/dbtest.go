// Package dbtest gives tests an isolated, migrated PostgreSQL schema.
//
// The server comes from STRATA_TEST_DATABASE_URL or, when that is unset,
// DATABASE_URL (scripts/test.sh sets it, starting a throwaway server when
// none is available). Without either, tests that call New are skipped, or
// fail when CI=true, so that CI always runs them for real.
//
// Every call creates a fresh schema with a unique name, points the pool's
// search_path at it (through the connection string, so every pooled
// connection, including reconnections, uses it), runs db.Migrate in it and
// drops it when the test ends. Tests may therefore run in parallel, in one
// package or many, against one database.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/strata-go/strata/db"
)

// Environment variables read by this package.
const (
	// EnvURL names the test server explicitly; it wins over EnvFallbackURL.
	EnvURL = "STRATA_TEST_DATABASE_URL"
	// EnvFallbackURL is the conventional variable, set by scripts/test.sh.
	EnvFallbackURL = "DATABASE_URL"
)

// SkipMessage is the reason given when no server is configured.
const SkipMessage = "PostgreSQL tests skipped: set DATABASE_URL or run ./scripts/test.sh (it starts a throwaway server)"

// setupTimeout bounds creating, migrating and dropping a test schema.
const setupTimeout = time.Minute

// BaseURL returns the configured server's connection string, or "" when
// none is configured.
func BaseURL() string {
	if u := strings.TrimSpace(os.Getenv(EnvURL)); u != "" {
		return u
	}
	return strings.TrimSpace(os.Getenv(EnvFallbackURL))
}

// Require returns the configured server's connection string. Without one it
// skips the test, or fails it when the environment variable CI is "true".
func Require(t testing.TB) string {
	t.Helper()
	u := BaseURL()
	if u == "" {
		if strings.EqualFold(os.Getenv("CI"), "true") {
			t.Fatal("CI=true but no PostgreSQL is configured: set DATABASE_URL (scripts/test.sh does)")
		}
		t.Skip(SkipMessage)
	}
	return u
}

// Schema is an isolated, migrated schema created for one test.
type Schema struct {
	// Name is the schema's name; it is also the application_name of every
	// connection opened through URL, which lets a test find (and, say,
	// terminate) its own backends in pg_stat_activity.
	Name string
	// URL connects to the server with search_path set to the schema.
	URL string
}

// New returns a pool on a fresh, migrated schema; the pool is closed and the
// schema dropped when the test ends.
func New(t testing.TB) *sqlx.DB {
	t.Helper()
	return Open(t, NewSchema(t).URL)
}

// NewSchema creates a fresh schema, migrates it, and registers its removal
// at the end of the test.
func NewSchema(t testing.TB) Schema {
	t.Helper()
	s := NewEmptySchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	d, err := db.Open(ctx, s.URL)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	defer d.Close()
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatalf("dbtest: migrate schema %s: %v", s.Name, err)
	}
	return s
}

// NewEmptySchema is NewSchema without the migration, for migration tests.
func NewEmptySchema(t testing.TB) Schema {
	t.Helper()
	base := Require(t)
	admin := adminPool(t, base)
	name := schemaName(t)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+pq.QuoteIdentifier(name)); err != nil {
		t.Fatalf("dbtest: create schema %s: %v", name, err)
	}
	// Registered before any pool on the schema is opened, so it runs after
	// they are closed (cleanups run last-in first-out).
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		// Backends still attached (a leaked pool) would block the DROP.
		_, _ = admin.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE application_name = $1 AND pid <> pg_backend_pid()`, name)
		if _, err := admin.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+pq.QuoteIdentifier(name)+" CASCADE"); err != nil {
			t.Errorf("dbtest: drop schema %s: %v", name, err)
		}
	})
	u, err := db.WithDSNParams(base, map[string]string{"search_path": name, "application_name": name})
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	return Schema{Name: name, URL: u}
}

// Pool limits of the pools Open returns: smaller than db.Open's, so that
// many tests running at once stay well within a default server's
// max_connections (100).
const (
	MaxOpenConns = 8
	MaxIdleConns = 4
)

// Open opens an additional pool on url with db.Open, lowers its limits to
// MaxOpenConns and MaxIdleConns, and closes it when the test ends. Separate
// pools on one schema behave like separate replicas of a service.
func Open(t testing.TB, url string) *sqlx.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	d, err := db.Open(ctx, url)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	d.SetMaxOpenConns(MaxOpenConns)
	d.SetMaxIdleConns(MaxIdleConns)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// Admin returns a pool on the configured server with its default
// search_path, shared by the whole test binary and never closed. Use it
// for server-wide statements such as pg_terminate_backend; its
// application_name is "strata-dbtest-admin".
func Admin(t testing.TB) *sqlx.DB {
	t.Helper()
	return adminPool(t, Require(t))
}

var (
	adminMu    sync.Mutex
	adminPools = map[string]*sqlx.DB{}
)

func adminPool(t testing.TB, base string) *sqlx.DB {
	t.Helper()
	adminMu.Lock()
	defer adminMu.Unlock()
	if d, ok := adminPools[base]; ok {
		return d
	}
	u, err := db.WithDSNParams(base, map[string]string{"application_name": "strata-dbtest-admin"})
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	d, err := db.Open(ctx, u)
	if err != nil {
		t.Fatalf("dbtest: connect to the test server: %v", err)
	}
	d.SetMaxOpenConns(4)
	d.SetMaxIdleConns(2)
	adminPools[base] = d
	return d
}

var nonIdent = regexp.MustCompile(`[^a-z0-9]+`)

// schemaName derives a unique, valid, at most 63-byte schema name from the
// test's name.
func schemaName(t testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("dbtest: random schema name: %v", err)
	}
	base := strings.Trim(nonIdent.ReplaceAllString(strings.ToLower(t.Name()), "_"), "_")
	if len(base) > 40 {
		base = base[:40]
	}
	return fmt.Sprintf("strata_t_%s_%s", base, hex.EncodeToString(b[:]))
}

// EnvPoolerURL names a connection pooler in transaction mode (PgBouncer)
// in front of the test server, reaching it as the same user;
// scripts/with-postgres.sh starts one and sets it. The pooler must route
// any database name to the server's database of that name.
const EnvPoolerURL = "STRATA_PGBOUNCER_URL"

// PoolerSkipMessage is the reason given when no pooler is configured.
const PoolerSkipMessage = "pooled PostgreSQL tests skipped: set " + EnvPoolerURL +
	" to a PgBouncer in transaction mode in front of DATABASE_URL's server (scripts/with-postgres.sh starts one)"

// Pooled is a fresh, migrated database of its own on the test server,
// reachable directly and through the pooler. A pooler in transaction mode
// refuses the search_path start-up parameter that Schema relies on, hence
// a database rather than a schema.
type Pooled struct {
	// Name is the database's name; it is also the application_name of
	// every connection opened through the URLs.
	Name string
	// DirectURL connects to the database directly; PooledURL through the
	// pooler.
	DirectURL, PooledURL string
}

// NewPooled creates a database, migrates it over the direct URL and drops
// it when the test ends. Without a configured pooler it skips the test.
func NewPooled(t testing.TB) Pooled {
	t.Helper()
	Require(t)
	pooler := strings.TrimSpace(os.Getenv(EnvPoolerURL))
	if pooler == "" {
		t.Skip(PoolerSkipMessage)
	}
	p := NewDatabase(t)
	pooled, err := WithDatabase(pooler, p.Name)
	if err != nil {
		t.Skipf("pooled tests need URL data source names: %v", err)
	}
	waitForPooler(t, pooled)
	p.PooledURL = pooled
	return p
}

// poolerWait bounds how long NewPooled waits for a pooler that refuses
// connections: scripts/with-postgres.sh restarts a PgBouncer that exited
// within about two seconds.
const poolerWait = 15 * time.Second

// waitForPooler waits, at most poolerWait, until the pooler of URL u
// accepts TCP connections, and fails the test naming it when it never does.
func waitForPooler(t testing.TB, u string) {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatalf("dbtest: pooler URL: %v", err)
	}
	deadline := time.Now().Add(poolerWait)
	for waited := false; ; waited = true {
		c, err := net.DialTimeout("tcp", parsed.Host, time.Second)
		if err == nil {
			c.Close()
			if waited {
				t.Logf("dbtest: the pooler at %s accepts connections again", parsed.Host)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("dbtest: the pooler at %s refused connections for %v (did it exit? scripts/with-postgres.sh restarts it and reports its log): %v", parsed.Host, poolerWait, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// PoolerURL returns the configured pooler's URL, or "" when none is.
func PoolerURL() string { return strings.TrimSpace(os.Getenv(EnvPoolerURL)) }

// NewDatabase is NewPooled without the pooler: a fresh, migrated database
// of its own (PooledURL is empty), for tests that need a new database
// rather than a schema, such as measurements on a never-analyzed one.
func NewDatabase(t testing.TB) Pooled {
	t.Helper()
	base := Require(t)
	admin := adminPool(t, base)
	name := schemaName(t)
	direct, err := WithDatabase(base, name)
	if err != nil {
		t.Skipf("database tests need URL data source names: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+pq.QuoteIdentifier(name)); err != nil {
		t.Fatalf("dbtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+pq.QuoteIdentifier(name)+" WITH (FORCE)"); err != nil {
			t.Errorf("dbtest: drop database %s: %v", name, err)
		}
	})
	d, err := db.Open(ctx, direct)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	defer d.Close()
	if err := db.Migrate(ctx, d); err != nil {
		t.Fatalf("dbtest: migrate database %s: %v", name, err)
	}
	return Pooled{Name: name, DirectURL: direct}
}

// WithDatabase returns the postgres:// URL dsn naming database name, with
// name as its application_name (the benchmarks' databases use it too).
func WithDatabase(dsn, name string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("%s is not a postgres:// URL", db.RedactDSN(dsn))
	}
	u.Path = "/" + name
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
