package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"

	"github.com/golang-migrate/migrate/v4"
	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/memory/store"
)

// TailSQL is the Tail statement reading n messages, for the external
// tests, which inspect its cost. It takes ($1 session, $2 user).
func TailSQL(n int) string {
	return fmt.Sprintf(`SELECT * FROM strata_tail($1, $2, %d, false, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`, n)
}

// SnapshotSQL is the Snapshot statement reading n messages, for the
// external tests, which inspect its cost. It takes ($1 session, $2 user,
// $3..$5 the epoch, version and updated_at of the summary the caller holds,
// or NULL).
func SnapshotSQL(n int) string {
	return fmt.Sprintf(`SELECT * FROM strata_tail($1, $2, %d, false, true, $3, $4, $5, NULL, NULL, NULL, NULL, NULL)`, n)
}

// SnapshotAfterSQL is the SnapshotAfterSummary statement reading n
// messages, for the external tests, as SnapshotSQL.
func SnapshotAfterSQL(n int) string {
	return fmt.Sprintf(`SELECT * FROM strata_tail($1, $2, %d, true, true, $3, $4, $5, NULL, NULL, NULL, NULL, NULL)`, n)
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

// HeldLoads returns how many loads s answered from the tails it holds
// without strata_load, and how many appends extended a held tail.
func HeldLoads(s *MessageStore) (loads, extended int64) { return s.held.Load(), s.extended.Load() }

// AppendAsOlderBuild appends msgs as a build before schema version 18
// does: strata_append's result read by the four columns it had (total,
// epoch, last_seq, owner). It works on every version from 9 on, for the
// tests of older versions and of older replicas on a newer schema.
func AppendAsOlderBuild(ctx context.Context, d *sqlx.DB, sessionID, userID string, msgs ...store.Message) (store.AppendResult, error) {
	b, err := newBatch(msgs)
	if err != nil {
		return store.AppendResult{}, err
	}
	var (
		total, epoch, last sql.NullInt64
		owner              sql.NullString
	)
	err = d.QueryRowContext(ctx, `SELECT total, epoch, last_seq, owner FROM strata_append($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		appendArgs(sessionID, userID, b)...).Scan(&total, &epoch, &last, &owner)
	if err != nil {
		return store.AppendResult{}, err
	}
	if !total.Valid {
		return store.AppendResult{}, fmt.Errorf("append to %q as %q: owner %v: %w", sessionID, userID, owner, store.ErrNotFound)
	}
	return store.AppendResult{Total: int(total.Int64), LastSeq: last.Int64, Epoch: epoch.Int64}, nil
}

// HeldSQL is heldSQL, the first statement of a load whose tail the store
// holds, for the tests of its plan. It takes ($1 session, $2 user, $3, $4
// the held summary's epoch and version or -1, $5 whether the summary is
// wanted).
const HeldSQL = heldSQL

// HeldOwner runs the held load's check (heldStmt, a named statement the
// server keeps prepared) for session on d and returns the owner it read.
func HeldOwner(ctx context.Context, d *sqlx.DB, session string) (string, error) {
	var owner sql.NullString
	var a, b, c, e, f int64
	err := heldStmt.queryRow(ctx, d, []any{session}, &owner, &a, &b, &c, &e, &f)
	return owner.String, err
}

// HeldStmtName is the name under which the server keeps heldStmt.
var HeldStmtName = heldStmt.name

// Literal is literal: a parameter as the SQL literal a named statement's
// EXECUTE passes.
func Literal(a any) (string, error) { return literal(a) }

// HeldTail is the tail entry s holds for session, nil when none (opaque
// to the external tests, for LoadHeldFrom).
func HeldTail(s *MessageStore, session string) any {
	if t := s.tails.get(session); t != nil {
		return t
	}
	return nil
}

// LoadHeldFrom answers SnapshotAfterSummary(ctx, session, user, n) as a
// load that took held (an entry HeldTail returned) from the cache before
// its statement does, and reports whether the statement alone answered it
// (no second read).
func LoadHeldFrom(ctx context.Context, s *MessageStore, session, user string, n int, held any) (store.Tail, bool, error) {
	t, _, hit, err := s.loadHeld(ctx, "load", true, true, session, user, n, held.(*cachedTail), s.cache.get(session))
	return t, hit, err
}
