package db_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/internal/testutil"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

// testTimeout bounds every store call of a test.
const testTimeout = 2 * time.Minute

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

type fixture struct {
	d        *sqlx.DB
	schema   dbtest.Schema
	messages *db.MessageStore
	sums     *db.SummaryStore
	logs     *testutil.Buffer
}

// newFixture gives the test a fresh migrated schema and both stores, with
// a logger that records what the stores log.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	return newFixtureOn(t, dbtest.NewSchema(t))
}

// newFixtureOn is newFixture on the migrated schema s.
func newFixtureOn(t testing.TB, s dbtest.Schema) *fixture {
	t.Helper()
	d := dbtest.Open(t, s.URL)
	logs := &testutil.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return &fixture{
		d:        d,
		schema:   s,
		messages: db.NewMessageStore(d, db.WithLogger(logger)),
		sums:     db.NewSummaryStore(d, db.WithLogger(logger)),
		logs:     logs,
	}
}

func user(s string) store.Message { return store.Message{Role: store.RoleUser, Content: s} }
func assistant(s string) store.Message {
	return store.Message{Role: store.RoleAssistant, Content: s}
}

// mustAppend appends, first creating the session for userID when it is
// missing (as memory.Manager.Append does), and fails the test on error.
func mustAppend(t testing.TB, ctx context.Context, s memory.MessageStore, session, userID string, msgs ...store.Message) store.AppendResult {
	t.Helper()
	ensureSession(t, ctx, s, session, userID)
	res, err := s.Append(ctx, session, userID, msgs...)
	if err != nil {
		t.Fatalf("Append(%q, %q): %v", session, userID, err)
	}
	return res
}

// allMessages reads a session's whole history through Range, as its
// owner.
func allMessages(t testing.TB, ctx context.Context, s memory.MessageStore, session, owner string) []store.Message {
	t.Helper()
	msgs, err := s.Range(ctx, session, owner, 0, 1<<62, 0)
	if err != nil {
		t.Fatalf("Range(%q, %q): %v", session, owner, err)
	}
	return msgs
}

// sessionRow reads a session's row in strata_sessions: owner ("" for a
// tombstone), epoch, whether it is a tombstone, and whether it exists.
func sessionRow(t testing.TB, ctx context.Context, d *sqlx.DB, session string) (owner string, epoch int64, deleted, exists bool) {
	t.Helper()
	var r struct {
		Owner   sql.NullString `db:"user_id"`
		Epoch   int64          `db:"epoch"`
		Deleted bool           `db:"deleted"`
	}
	err := d.GetContext(ctx, &r, `SELECT user_id, epoch, deleted_at IS NOT NULL AS deleted FROM strata_sessions WHERE session_id = $1`, session)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, false, false
	}
	if err != nil {
		t.Fatalf("read session row %q: %v", session, err)
	}
	return r.Owner.String, r.Epoch, r.Deleted, true
}

// countRows counts rows of table matching session_id.
func countRows(t testing.TB, ctx context.Context, d *sqlx.DB, table, session string) int {
	t.Helper()
	var n int
	if err := d.GetContext(ctx, &n, "SELECT count(*) FROM "+table+" WHERE session_id = $1", session); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// ensureSession creates session for userID unless it exists already
// (whoever owns it).
func ensureSession(t testing.TB, ctx context.Context, s memory.MessageStore, session, userID string) {
	t.Helper()
	if err := s.Create(ctx, session, userID); err != nil && !errors.Is(err, store.ErrSessionExists) {
		t.Fatalf("Create(%q, %q): %v", session, userID, err)
	}
}

// msgLease is a message store's fold lease without its save: the lease
// as a summary store (store.FoldLocker) has it.
type msgLease struct{ s *db.MessageStore }

// leaseOf is s's fold lease as a store.FoldLocker.
func leaseOf(s *db.MessageStore) store.FoldLocker { return msgLease{s} }

func (l msgLease) TryLockFold(ctx context.Context, sessionID string, ttl time.Duration) (func(), bool, error) {
	release, _, ok, err := l.s.TryLockFold(ctx, sessionID, ttl)
	return release, ok, err
}
