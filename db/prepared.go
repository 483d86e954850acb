package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/jmoiron/sqlx"
)

// statements are the statements a MessageStore prepares under a name when
// WithPreparedStatements is given; each field is nil otherwise, and the
// statement is then sent unnamed.
type statements struct {
	load, held, append *preparedStmt
}

func newStatements(d *sqlx.DB, prepare bool) *statements {
	if !prepare {
		return &statements{}
	}
	return &statements{load: &preparedStmt{d: d.DB, query: loadSQL}, held: &preparedStmt{d: d.DB, query: heldSQL},
		append: &preparedStmt{d: d.DB, query: appendSQL}}
}

// preparedStmt is one statement prepared on first use as a database/sql
// Stmt, which prepares it again on each pooled connection it runs on (the
// server parses and plans it once per connection). A failed preparation is
// tried again by the next call.
type preparedStmt struct {
	d     *sql.DB
	query string
	mu    sync.Mutex
	st    *sql.Stmt
}

// get returns the prepared statement, preparing it first if need be.
func (p *preparedStmt) get(ctx context.Context) (*sql.Stmt, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.st == nil {
		st, err := p.d.PrepareContext(ctx, p.query)
		if err != nil {
			return nil, err
		}
		p.st = st
	}
	return p.st, nil
}

// query runs q, or its prepared statement p when there is one.
func (s *MessageStore) query(ctx context.Context, p *preparedStmt, q string, args ...any) (*sql.Rows, error) {
	if p == nil {
		return s.d.QueryContext(ctx, q, args...)
	}
	st, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// errNotRerun is the error of a statement that database/sql tried to run
// a second time, on another connection, after the driver reported the
// first one broken (see onceArg).
var errNotRerun = errors.New("the connection broke while the statement ran; it is not run again")

// onceArg is an argument that lets its statement run once. database/sql
// runs a prepared statement again on another connection when the driver
// reports driver.ErrBadConn, which lib/pq also does when the connection
// drops after the server committed; an append run again would be stored
// twice. database/sql converts the arguments anew for each attempt: the
// second conversion fails with errNotRerun, and the statement is not sent
// again. (Without a prepared statement, Append runs on a *sql.Conn, which
// never re-runs a statement.)
type onceArg struct {
	v    string
	used atomic.Bool
}

// Value implements driver.Valuer.
func (a *onceArg) Value() (driver.Value, error) {
	if a.used.Swap(true) {
		return nil, errNotRerun
	}
	return a.v, nil
}
