package db

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq" // registers the "postgres" driver
)

// Pool limits applied by Open. They suit a service replica talking to one
// PostgreSQL server; change them on the returned pool (d.SetMaxOpenConns,
// …) when a deployment needs others.
const (
	DefaultMaxOpenConns    = 20
	DefaultMaxIdleConns    = 10
	DefaultConnMaxLifetime = 30 * time.Minute
	DefaultConnMaxIdleTime = 5 * time.Minute
)

// Open connects to PostgreSQL through lib/pq, applies the default pool
// limits and pings the server with ctx. dsn is a URL
// (postgres://user:pass@host:5432/db?sslmode=disable) or a key=value
// connection string. Errors name the data source with its password
// redacted.
//
// Open does not run migrations; call Migrate once at start-up.
func Open(ctx context.Context, dsn string) (*sqlx.DB, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, errors.New("db: open: empty data source name")
	}
	d, err := sqlx.Open("postgres", dsn)
	if err != nil {
		return nil, fmt.Errorf("db: open %s: %w", RedactDSN(dsn), err)
	}
	d.SetMaxOpenConns(DefaultMaxOpenConns)
	d.SetMaxIdleConns(DefaultMaxIdleConns)
	d.SetConnMaxLifetime(DefaultConnMaxLifetime)
	d.SetConnMaxIdleTime(DefaultConnMaxIdleTime)
	if err := d.PingContext(ctx); err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("db: open %s: %w", RedactDSN(dsn), err)
	}
	return d, nil
}

var kvPassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)`)

// RedactDSN returns dsn with its password replaced by "xxxxx", for logs and
// error messages. It handles URLs (including a password query parameter) and
// key=value connection strings.
func RedactDSN(dsn string) string {
	if strings.Contains(dsn, "://") {
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
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("db: parse %s: %w", RedactDSN(dsn), err)
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
