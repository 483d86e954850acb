package db

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/jmoiron/sqlx"
)

// stmtCache holds the prepared statements of a store's hot paths (append,
// load), prepared on first use. A prepared statement costs one round trip
// per call; lib/pq sends an unprepared query with arguments in two (parse
// and describe, then bind and execute). database/sql prepares a statement
// again on each pooled connection it runs on, and after a reconnect.
//
// A statement that fails to prepare (the server is down) is not cached:
// the next call tries again.
type stmtCache struct {
	d  *sqlx.DB
	mu sync.Mutex
	m  map[string]*sqlx.Stmt
}

func newStmtCache(d *sqlx.DB) *stmtCache { return &stmtCache{d: d, m: map[string]*sqlx.Stmt{}} }

// get returns the prepared form of query, preparing it with ctx when it is
// not cached yet.
func (c *stmtCache) get(ctx context.Context, query string) (*sqlx.Stmt, error) {
	c.mu.Lock()
	st, ok := c.m[query]
	c.mu.Unlock()
	if ok {
		return st, nil
	}
	// Prepared outside the lock, so that a slow server holds up only the
	// callers that need this statement; a concurrent twin is discarded.
	st, err := c.d.PreparexContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.m[query]; ok {
		_ = st.Close()
		return prev, nil
	}
	c.m[query] = st
	return st, nil
}

// exec runs query, prepared, with args.
func (c *stmtCache) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}
