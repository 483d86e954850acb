package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Pool limits applied by Open. They suit a service replica talking to one
// PostgreSQL server; change them on the returned pool (d.SetMaxOpenConns,
// …) when a deployment needs others. The pool keeps as many idle
// connections as it may open: a busy replica that closed the connections
// above a lower idle limit would reconnect for every burst, and each
// connection costs SCRAM's deliberately slow key derivation on both sides;
// idle connections still close after DefaultConnMaxIdleTime.
const (
	DefaultMaxOpenConns    = 20
	DefaultMaxIdleConns    = DefaultMaxOpenConns
	DefaultConnMaxLifetime = 30 * time.Minute
	DefaultConnMaxIdleTime = 5 * time.Minute
)

// Timeouts Open sets on every connection of the pool, unless configured
// otherwise (see Open).
const (
	// DefaultConnectTimeout bounds establishing one connection: the TCP
	// connect and the start-up handshake (lib/pq's connect_timeout). A
	// server that accepts connections but never answers fails within it.
	DefaultConnectTimeout = 5 * time.Second
	// DefaultStatementTimeout bounds every statement: one that runs longer
	// is cancelled on the server and fails with an error wrapping
	// store.ErrUnavailable.
	DefaultStatementTimeout = 30 * time.Second
)

// OpenOption configures Open.
type OpenOption func(*openOptions)

type openOptions struct {
	connectTimeout   time.Duration
	statementTimeout time.Duration
	dial             dialFunc // nil: a net.Dialer (the tests set one)
}

// WithConnectTimeout sets the connect timeout Open applies to every
// connection (default DefaultConnectTimeout); lib/pq counts it in whole
// seconds, so it is rounded up to one. d <= 0 sets none: connecting then
// waits as long as the context allows.
func WithConnectTimeout(d time.Duration) OpenOption {
	return func(o *openOptions) { o.connectTimeout = d }
}

// WithStatementTimeout sets the statement timeout Open applies to every
// statement on the pool (default DefaultStatementTimeout; see Open).
// d <= 0 sets none: the server's own statement_timeout applies.
func WithStatementTimeout(d time.Duration) OpenOption {
	return func(o *openOptions) { o.statementTimeout = d }
}

// Open connects to PostgreSQL through lib/pq, applies the default pool
// limits and pings the server with ctx. dsn is a URL
// (postgres://user:pass@host:5432/db?sslmode=disable) or a key=value
// connection string. Without an sslmode (in dsn or PGSSLMODE) it connects
// as psql and JDBC do, with sslmode=prefer: TLS when the server offers it,
// else plain. Errors name the data source with its password
// redacted; when the server cannot be reached they wrap
// store.ErrUnavailable.
//
// The pool works through a connection pooler in transaction mode
// (PgBouncer's pool_mode = transaction, Supabase's or a managed service's
// pooler) as it does directly. A pooler hands each transaction whichever
// server connection is free, so nothing may outlive a transaction on a
// server connection, and it refuses most start-up parameters. Open
// therefore:
//
//   - turns on lib/pq's binary_parameters (unless dsn sets it): a statement
//     with arguments is then sent as one unnamed statement, parsed, bound
//     and executed in one round trip. Without it lib/pq parses in one round
//     trip and binds in a second, which a pooler may route to another server
//     connection, running there whatever unnamed statement that connection
//     last parsed. Strata's stores prepare no named statements either (a
//     named statement lives on one server connection) unless
//     WithPreparedStatements asks them to. Only []byte
//     arguments change encoding (they are sent in binary), and the stores
//     pass none;
//   - bounds statements on the client, not with a start-up parameter: see
//     below.
//
// Every connection of the pool gets a connect timeout
// (DefaultConnectTimeout, or WithConnectTimeout), passed as lib/pq's
// connect_timeout, and every statement a statement timeout
// (DefaultStatementTimeout, or WithStatementTimeout): a statement that runs
// longer is cancelled — lib/pq sends the server a cancel request, which a
// pooler forwards to the server connection running it — and fails with an
// error wrapping store.ErrUnavailable. Statements of a transaction are
// bounded one by one. A value the deployment already gives wins: when dsn
// mentions connect_timeout or statement_timeout (also inside its options
// parameter), or the environment sets PGCONNECT_TIMEOUT or a
// statement_timeout in PGOPTIONS, Open leaves that setting to the driver
// and the server (a pooler then refuses a statement_timeout start-up
// parameter, and Open's error says so).
//
// When Open sets the statement timeout itself, it also bounds how long a
// connection waits for the server: a read or write that waits longer than
// the statement timeout plus the connect timeout (DefaultConnectTimeout
// when none is set) fails, and the connection is dropped. A server that
// still accepts data but no longer answers — hung, or behind a network
// that silently drops its replies — then fails calls as an outage instead
// of blocking them forever, which a cancel request (handled by that same
// server) cannot do. Statements of the pool's users that need longer must
// not run on it; Migrate runs on a connection of its own without the bound
// and without a statement timeout.
//
// A pooler that refuses a start-up parameter fails Open with an error that
// names the parameter and the fix.
//
// Open does not run migrations; call Migrate once at start-up, over a
// direct connection to the server (see Migrate).
func Open(ctx context.Context, dsn string, opts ...OpenOption) (*sqlx.DB, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, errors.New("db: open: empty data source name")
	}
	o := openOptions{connectTimeout: DefaultConnectTimeout, statementTimeout: DefaultStatementTimeout}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	full, params, err := withTimeouts(withPreferredTLS(dsn), o)
	if err != nil {
		return nil, err
	}
	var bound, timeout time.Duration
	if clientStatementTimeout(dsn, o) {
		grace := o.connectTimeout
		if _, ok := params["connect_timeout"]; !ok || grace <= 0 {
			grace = DefaultConnectTimeout
		}
		timeout = o.statementTimeout
		bound = o.statementTimeout + grace
	}
	c, err := newConnector(full, bound, timeout, o.dial)
	if err != nil {
		return nil, fmt.Errorf("db: open %s: %w", RedactDSN(dsn), redactURLError(err, dsn))
	}
	d := sqlx.NewDb(sql.OpenDB(c), "postgres")
	d.SetMaxOpenConns(DefaultMaxOpenConns)
	d.SetMaxIdleConns(DefaultMaxIdleConns)
	d.SetConnMaxLifetime(DefaultConnMaxLifetime)
	d.SetConnMaxIdleTime(DefaultConnMaxIdleTime)
	if err := d.PingContext(ctx); err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("db: open %s: %w%s", RedactDSN(dsn), classify(ctx, err), startupParamHint(err))
	}
	return d, nil
}

// startupParamHint explains a connection refused because of a start-up
// parameter (PgBouncer: "unsupported startup parameter: NAME"), "" for any
// other error.
func startupParamHint(err error) string {
	var pqErr *pq.Error
	if !isPoolerRefusal(err) || !errors.As(err, &pqErr) {
		return ""
	}
	name := strings.TrimSpace(pqErr.Message[strings.LastIndex(pqErr.Message, ":")+1:])
	return fmt.Sprintf(" (a connection pooler refused the start-up parameter %q: remove it from the data source name "+
		"and from PGOPTIONS — Strata bounds statements on the client and needs no start-up parameter — "+
		"or add it to the pooler's ignore_startup_parameters)", name)
}

// clientStatementTimeout reports whether the pool bounds statements on the
// client: a statement timeout is configured and neither dsn nor PGOPTIONS
// sets statement_timeout (the deployment's own value then applies on the
// server).
func clientStatementTimeout(dsn string, o openOptions) bool {
	return o.statementTimeout > 0 && !strings.Contains(dsn, "statement_timeout") &&
		!strings.Contains(os.Getenv("PGOPTIONS"), "statement_timeout")
}

// withTimeouts adds connect_timeout to dsn, unless the data source name or
// the environment already sets it, and binary_parameters=yes, unless dsn
// sets it (see Open), and returns the parameters it added. The statement
// timeout is not a connection parameter: the pool enforces it on the
// client (see timedConn).
func withTimeouts(dsn string, o openOptions) (string, map[string]string, error) {
	params := map[string]string{}
	if o.connectTimeout > 0 && !strings.Contains(dsn, "connect_timeout") && os.Getenv("PGCONNECT_TIMEOUT") == "" {
		secs := (o.connectTimeout + time.Second - 1) / time.Second
		params["connect_timeout"] = strconv.FormatInt(int64(secs), 10)
	}
	if !strings.Contains(dsn, "binary_parameters") {
		params["binary_parameters"] = "yes"
	}
	if len(params) == 0 {
		return dsn, params, nil
	}
	full, err := WithDSNParams(dsn, params)
	return full, params, err
}

// redactURLError replaces the URL that a *url.Error in err's chain quotes,
// password included, by dsn redacted.
func redactURLError(err error, dsn string) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		urlErr.URL = RedactDSN(dsn)
	}
	return err
}

var urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

var kvPassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)`)

// RedactDSN returns dsn with its password replaced by "xxxxx", for logs and
// error messages. It handles URLs (including a password query parameter) and
// key=value connection strings.
func RedactDSN(dsn string) string {
	// A URL starts with its scheme; a key=value string with a key, so one
	// whose password contains "://" is still key=value. (Any scheme counts:
	// a mistaken mysql:// URL is reported, redacted, by the caller.)
	if urlScheme.MatchString(dsn) {
		u, err := url.Parse(dsn)
		if err != nil {
			return "<unparsable data source name>"
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	return kvPassword.ReplaceAllString(dsn, "${1}xxxxx")
}

// Option configures a store made by NewMessageStore or NewSummaryStore.
type Option func(*options)

type options struct {
	logger        *slog.Logger
	leaseSlice    time.Duration
	summaryCached int
	tailCached    int
	tailBytes     int64
	prepared      bool
}

// WithTailCache sets how many sessions' tails a MessageStore keeps for its
// loads, and their size in all (defaults DefaultTailCacheSessions and
// DefaultTailCacheBytes; sessions <= 0 or maxBytes <= 0 keeps none). A
// load of a session whose tail this store holds first checks it by one
// plain primary-key statement against the stored session and, when the
// session's stamp is unchanged, answers from it under that statement's
// snapshot; otherwise it names the held tail to its load statement, which
// checks it under its own snapshot and sends only the messages stored
// after it or, when the session's messages were otherwise changed (an
// erasure, a replace, a delete and re-creation), the whole tail again. The
// store's own appends extend the tail it holds. A held tail is never
// returned without the database's check.
func WithTailCache(sessions int, maxBytes int64) Option {
	return func(o *options) { o.tailCached, o.tailBytes = sessions, maxBytes }
}

// WithPreparedStatements makes a MessageStore run its load statements (the
// held tail's check and the load) and its append statement as named
// prepared statements (database/sql's Stmt, prepared once on each pooled
// connection), which saves the server parsing and
// planning them on every call. Off by default: use it only on a direct
// connection to PostgreSQL, through a pooler in session mode, or through
// PgBouncer 1.21 or later with max_prepared_statements set. Through a
// pooler in transaction mode without that support (PgBouncer 1.20 and
// earlier), each statement may run on a server connection the statement
// was never prepared on — or on one where another client's statement has
// the same name.
func WithPreparedStatements() Option {
	return func(o *options) { o.prepared = true }
}

// WithSummaryCache sets how many sessions' decoded summaries a
// MessageStore keeps for its loads (default DefaultSummaryCacheSessions;
// n <= 0 keeps none). A load of a session whose summary has not changed
// since this store last read it, or saved it through its fold lease (a
// fold's last save), then neither transfers nor decodes it again. The memory it takes grows with the summaries' size: at most n
// summaries' narratives and facts.
func WithSummaryCache(n int) Option {
	return func(o *options) { o.summaryCached = n }
}

// WithLogger sets the logger for warnings such as undecodable facts
// (default slog.Default()). A nil logger keeps the default.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithFoldLeaseSlice sets how long a fold lease (TryLockFold) lives
// between renewals by its holder (default DefaultFoldLeaseSlice): the
// longest a crashed holder can keep other replicas from folding its
// session. Values below 30ms are raised to 30ms.
func WithFoldLeaseSlice(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.leaseSlice = max(d, 30*time.Millisecond)
		}
	}
}

func buildOptions(opts []Option) options {
	o := options{logger: slog.Default(), leaseSlice: DefaultFoldLeaseSlice, summaryCached: DefaultSummaryCacheSessions,
		tailCached: DefaultTailCacheSessions, tailBytes: DefaultTailCacheBytes}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithDSNParams sets connection parameters (search_path, application_name,
// …) on a URL or key=value connection string.
func WithDSNParams(dsn string, params map[string]string) (string, error) {
	// A URL starts with its scheme; a key=value string with a key, so one
	// whose password contains "://" is still key=value. (Any scheme counts:
	// a mistaken mysql:// URL is reported, redacted, by the caller.)
	if urlScheme.MatchString(dsn) {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("db: parse %s: %w", RedactDSN(dsn), redactURLError(err, dsn))
		}
		q := u.Query()
		for k, v := range params {
			q.Set(k, v)
		}
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	var sb strings.Builder
	sb.WriteString(dsn)
	for k, v := range params {
		fmt.Fprintf(&sb, " %s='%s'", k, strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v))
	}
	return sb.String(), nil
}
