package db

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/golang-migrate/migrate/v4"
	"github.com/jmoiron/sqlx"
)

// TailSQL is the Tail statement reading n messages, for the external
// tests, which inspect its cost. It takes ($1 session, $2 user).
func TailSQL(n int) string {
	return fmt.Sprintf(`SELECT * FROM strata_load($1, $2, %d, false, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`, n)
}

// SnapshotSQL is the Snapshot statement reading n messages, for the
// external tests, which inspect its cost. It takes ($1 session, $2 user,
// $3..$5 the epoch, version and updated_at of the summary the caller holds,
// or NULL).
func SnapshotSQL(n int) string {
	return fmt.Sprintf(`SELECT * FROM strata_load($1, $2, %d, false, true, $3, $4, $5, NULL, NULL, NULL, NULL, NULL)`, n)
}

// SnapshotAfterSQL is the SnapshotAfterSummary statement reading n
// messages, for the external tests, as SnapshotSQL.
func SnapshotAfterSQL(n int) string {
	return fmt.Sprintf(`SELECT * FROM strata_load($1, $2, %d, true, true, $3, $4, $5, NULL, NULL, NULL, NULL, NULL)`, n)
}

// MigrateTo migrates d up or down to version, for the tests of a
// migration's handling of existing data.
func MigrateTo(ctx context.Context, d *sqlx.DB, version uint) error {
	return withMigrate(ctx, d, "migrate to", func(m *migrate.Migrate) error {
		if err := m.Migrate(version); err != nil && !errors.Is(err, migrate.ErrNoChange) {
			return err
		}
		return nil
	})
}

// WithDialer makes Open's connections with dial instead of a net.Dialer,
// for the tests that run Open against a server made of an in-memory
// connection (net.Pipe) inside a testing/synctest bubble.
func WithDialer(dial func(ctx context.Context, network, address string) (net.Conn, error)) OpenOption {
	return func(o *openOptions) { o.dial = dial }
}

// TailCacheUsage returns how many tails s holds and their counted size.
func TailCacheUsage(s *MessageStore) (entries int, bytes int64) { return s.tails.usage() }

// ErrNotRerun is errNotRerun, for the tests of prepared appends.
var ErrNotRerun = errNotRerun
