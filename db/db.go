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
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
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
	// DefaultStatementTimeout bounds every statement on the server
	// (PostgreSQL's statement_timeout). A statement cut short fails with
	// an error wrapping store.ErrUnavailable.
	DefaultStatementTimeout = 30 * time.Second
)

// OpenOption configures Open.
type OpenOption func(*openOptions)

type openOptions struct {
	connectTimeout   time.Duration
	statementTimeout time.Duration
}

// WithConnectTimeout sets the connect timeout Open applies to every
// connection (default DefaultConnectTimeout); lib/pq counts it in whole
// seconds, so it is rounded up to one. d <= 0 sets none: connecting then
// waits as long as the context allows.
func WithConnectTimeout(d time.Duration) OpenOption {
	return func(o *openOptions) { o.connectTimeout = d }
}

// WithStatementTimeout sets the statement_timeout Open applies to every
// connection (default DefaultStatementTimeout), rounded up to whole
// milliseconds. d <= 0 sets none: the server's own setting applies.
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
// Every connection of the pool gets a connect timeout
// (DefaultConnectTimeout, or WithConnectTimeout) and a statement timeout
// (DefaultStatementTimeout, or WithStatementTimeout), passed as the
// connection parameters connect_timeout and statement_timeout. A value
// the deployment already gives wins over both: when dsn mentions
// connect_timeout or statement_timeout (also inside its options
// parameter), or the environment sets PGCONNECT_TIMEOUT or a
// statement_timeout in PGOPTIONS, Open leaves that setting alone.
//
// When Open sets the statement timeout itself, it also bounds how long a
// connection waits for the server: a read or write that waits longer than
// the statement timeout plus the connect timeout (DefaultConnectTimeout
// when none is set) fails, and the connection is dropped. A server that
// still accepts data but no longer answers — hung, or behind a network
// that silently drops its replies — then fails calls as an outage instead
// of blocking them forever, which neither the server's statement_timeout
// nor a cancelled context can do. Statements of the pool's users that
// need longer must not run on it; Migrate runs on a connection of its own
// without the bound and without a statement timeout.
//
// Open does not run migrations; call Migrate once at start-up.
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
	var bound time.Duration
	if _, ok := params["statement_timeout"]; ok {
		grace := o.connectTimeout
		if _, ok := params["connect_timeout"]; !ok || grace <= 0 {
			grace = DefaultConnectTimeout
		}
		bound = o.statementTimeout + grace
	}
	c, err := newConnector(full, bound)
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
		return nil, fmt.Errorf("db: open %s: %w", RedactDSN(dsn), classify(ctx, err))
	}
	return d, nil
}

// withTimeouts adds connect_timeout and statement_timeout to dsn, each
// unless the data source name or the environment already sets it, and
// returns the parameters it added.
func withTimeouts(dsn string, o openOptions) (string, map[string]string, error) {
	params := map[string]string{}
	if o.connectTimeout > 0 && !strings.Contains(dsn, "connect_timeout") && os.Getenv("PGCONNECT_TIMEOUT") == "" {
		secs := (o.connectTimeout + time.Second - 1) / time.Second
		params["connect_timeout"] = strconv.FormatInt(int64(secs), 10)
	}
	if o.statementTimeout > 0 && !strings.Contains(dsn, "statement_timeout") && !strings.Contains(os.Getenv("PGOPTIONS"), "statement_timeout") {
		ms := (o.statementTimeout + time.Millisecond - 1) / time.Millisecond
		params["statement_timeout"] = strconv.FormatInt(int64(ms), 10)
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
	logger     *slog.Logger
	leaseSlice time.Duration
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
	o := options{logger: slog.Default(), leaseSlice: DefaultFoldLeaseSlice}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// validID reports whether s can be stored in a TEXT column: valid UTF-8
// without NUL bytes. An id that fails it can never name a stored session.
func validID(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// cleanText makes s storable in a TEXT column by replacing invalid UTF-8
// and removing NUL bytes.
func cleanText(s string) string {
	if validID(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
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
