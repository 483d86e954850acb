package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"sync"
	"time"

	"github.com/lib/pq"
)

// connector is the driver.Connector of the pools Open makes: lib/pq's,
// dialing through boundedDialer when a reply bound is set, and bounding
// every statement by a client-side timeout when one is set (timedConn).
// It keeps the data source name so that Migrate can open a connection of
// its own without the bound (a migration may legitimately run long).
type connector struct {
	*pq.Connector
	dsn string
	// timeout bounds every statement on the client (0: none); see timedConn.
	timeout time.Duration
}

// Connect implements driver.Connector.
func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	slot := &dialSlot{}
	cn, err := c.Connector.Connect(context.WithValue(ctx, dialSlotKey{}, slot))
	if err != nil || c.timeout <= 0 {
		return cn, err
	}
	return &timedConn{conn: cn.(pqConn), timeout: c.timeout, sock: slot.get()}, nil
}

// dialSlotKey is the context key under which Connect receives, from
// boundedDialer, the socket of the connection it opens (dialSlot).
type dialSlotKey struct{}

// dialSlot holds the socket boundedDialer dialed last for one Connect.
type dialSlot struct {
	mu   sync.Mutex
	sock *boundedConn
}

func (s *dialSlot) set(c *boundedConn) {
	s.mu.Lock()
	s.sock = c
	s.mu.Unlock()
}

func (s *dialSlot) get() *boundedConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sock
}

// Driver implements driver.Connector. Its result lets Migrate recognize a
// pool made by Open.
func (c *connector) Driver() driver.Driver { return &pgDriver{c: c} }

// pgDriver is the driver.Driver of a connector.
type pgDriver struct{ c *connector }

// Open implements driver.Driver; database/sql calls Connect instead for
// pools made from a connector.
func (d *pgDriver) Open(string) (driver.Conn, error) { return d.c.Connect(context.Background()) }

// newConnector returns the connector of dsn whose connections fail any
// read or write that waits longer than bound for the server (bound <= 0:
// no bound) and cancel any statement that runs longer than timeout
// (timeout <= 0: none), dialing with dial (nil: a net.Dialer).
func newConnector(dsn string, bound, timeout time.Duration, dial dialFunc) (*connector, error) {
	pc, err := pq.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	if bound > 0 || dial != nil {
		pc.Dialer(boundedDialer{bound: bound, dial: dial})
	}
	return &connector{Connector: pc, dsn: dsn, timeout: timeout}, nil
}

// pqConn is what database/sql uses of a lib/pq connection.
type pqConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.QueryerContext
	driver.ExecerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	driver.NamedValueChecker
}

// timedConn is a lib/pq connection whose every statement is cancelled when
// it runs longer than timeout: the statement's context gets that deadline,
// and lib/pq, when a context ends, sends the server a cancel request (which
// connection poolers such as PgBouncer forward to the server connection
// running it) and drops the connection. This is the pool's statement
// timeout. It is enforced by the client rather than by PostgreSQL's
// statement_timeout because a transaction-mode pooler refuses that setting
// as a start-up parameter and gives each transaction whichever server
// connection is free, so a session-level SET would not stay with the
// client either.
type timedConn struct {
	conn    pqConn
	timeout time.Duration
	// sock is the connection's socket when boundedDialer dialed it (nil
	// otherwise): ResetSession checks that the server has not ended it.
	sock *boundedConn
	// named are the named statements given to the server connection (see
	// namedMemo); used by one goroutine at a time, as the connection is.
	named map[string]bool
}

// hasNamed implements namedMemo.
func (c *timedConn) hasNamed(name string) bool { return c.named[name] }

// markNamed implements namedMemo. A connection remembers at most the few
// statements Strata names (see namedStmt).
func (c *timedConn) markNamed(name string) {
	if c.named == nil {
		c.named = map[string]bool{}
	}
	c.named[name] = true
}

var _ pqConn = (*timedConn)(nil)

// bound derives the statement's context.
func (c *timedConn) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

// timedOut wraps err, the failure of a statement run under sctx (derived
// from ctx by bound), with the timeout when that is what ended it.
func (c *timedConn) timedOut(ctx, sctx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && errors.Is(sctx.Err(), context.DeadlineExceeded) {
		return &statementTimeoutError{timeout: c.timeout, err: err}
	}
	return err
}

// QueryContext implements driver.QueryerContext; the statement's deadline
// lasts until its rows are closed.
func (c *timedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	sctx, cancel := c.bound(ctx)
	rows, err := c.conn.QueryContext(sctx, query, args)
	if err != nil {
		err = c.timedOut(ctx, sctx, err)
		cancel()
		return nil, err
	}
	return &timedRows{Rows: rows, c: c, ctx: ctx, sctx: sctx, cancel: cancel}, nil
}

// ExecContext implements driver.ExecerContext.
func (c *timedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	sctx, cancel := c.bound(ctx)
	defer cancel()
	res, err := c.conn.ExecContext(sctx, query, args)
	return res, c.timedOut(ctx, sctx, err)
}

// BeginTx implements driver.ConnBeginTx. The statements of the transaction
// are bounded one by one, as PostgreSQL's statement_timeout bounds them;
// the transaction itself gets the caller's context, which lib/pq watches
// until it ends.
func (c *timedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.conn.BeginTx(ctx, opts)
}

// PrepareContext implements driver.ConnPrepareContext: the statement runs
// under the same bound as the others (timedStmt). Strata's stores prepare
// nothing unless WithPreparedStatements is given (see Open).
func (c *timedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &timedStmt{Stmt: st, c: c}, nil
}

// timedStmt is a prepared statement of a timedConn, bounded as its
// connection's statements are.
type timedStmt struct {
	driver.Stmt
	c *timedConn
}

// QueryContext implements driver.StmtQueryContext; the statement's
// deadline lasts until its rows are closed.
func (s *timedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := s.Stmt.(driver.StmtQueryContext)
	if !ok {
		return nil, errors.New("db: the driver's prepared statement cannot take a context")
	}
	sctx, cancel := s.c.bound(ctx)
	rows, err := q.QueryContext(sctx, args)
	if err != nil {
		err = s.c.timedOut(ctx, sctx, err)
		cancel()
		return nil, err
	}
	return &timedRows{Rows: rows, c: s.c, ctx: ctx, sctx: sctx, cancel: cancel}, nil
}

// ExecContext implements driver.StmtExecContext.
func (s *timedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	e, ok := s.Stmt.(driver.StmtExecContext)
	if !ok {
		return nil, errors.New("db: the driver's prepared statement cannot take a context")
	}
	sctx, cancel := s.c.bound(ctx)
	defer cancel()
	res, err := e.ExecContext(sctx, args)
	return res, s.c.timedOut(ctx, sctx, err)
}

// Prepare implements driver.Conn.
func (c *timedConn) Prepare(query string) (driver.Stmt, error) { return c.conn.Prepare(query) }

// Close implements driver.Conn.
func (c *timedConn) Close() error { return c.conn.Close() }

// Begin implements driver.Conn.
func (c *timedConn) Begin() (driver.Tx, error) { return c.conn.Begin() } //nolint:staticcheck // driver.Conn requires it

// Ping implements driver.Pinger.
func (c *timedConn) Ping(ctx context.Context) error {
	sctx, cancel := c.bound(ctx)
	defer cancel()
	return c.timedOut(ctx, sctx, c.conn.Ping(sctx))
}

// ResetSession implements driver.SessionResetter. database/sql calls it
// before it hands a pooled connection out again: a connection whose
// server ended it while it sat idle (a restart, a failover,
// pg_terminate_backend, an idle timeout) is reported broken
// (driver.ErrBadConn), so that database/sql discards it and takes another
// before any statement runs. This matters for the statements that are
// never re-run on another connection (an append, see MessageStore.Append):
// without the check the first of them after a restart would fail on each
// dead pooled connection.
func (c *timedConn) ResetSession(ctx context.Context) error {
	if c.sock != nil && c.sock.endedByServer() {
		return driver.ErrBadConn
	}
	return c.conn.ResetSession(ctx)
}

// IsValid implements driver.Validator.
func (c *timedConn) IsValid() bool { return c.conn.IsValid() }

// CheckNamedValue implements driver.NamedValueChecker.
func (c *timedConn) CheckNamedValue(nv *driver.NamedValue) error { return c.conn.CheckNamedValue(nv) }

// timedRows are the rows of a timedConn query: closing them ends the
// statement's deadline.
type timedRows struct {
	driver.Rows
	c         *timedConn
	ctx, sctx context.Context
	cancel    context.CancelFunc
}

// Next implements driver.Rows.
func (r *timedRows) Next(dest []driver.Value) error {
	err := r.Rows.Next(dest)
	if err != nil && err != io.EOF {
		return r.c.timedOut(r.ctx, r.sctx, err)
	}
	return err
}

// Close implements driver.Rows.
func (r *timedRows) Close() error {
	err := r.Rows.Close()
	r.cancel()
	return err
}

// ColumnTypeDatabaseTypeName implements driver.RowsColumnTypeDatabaseTypeName.
func (r *timedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

// ColumnTypeScanType implements driver.RowsColumnTypeScanType.
func (r *timedRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}

// dialFunc opens a connection to address, as net.Dialer.DialContext.
type dialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// boundedDialer dials connections whose every read and write waits at
// most bound for the server (bound <= 0: as long as the driver's own
// deadlines allow), through dial when set, else d. lib/pq blocks in a read until the server
// answers: neither the caller's context (lib/pq then sends the server a
// cancel request, which a hung server never acts on) nor statement_timeout
// (enforced by that same server) can end the wait. The bound can.
type boundedDialer struct {
	bound time.Duration
	d     net.Dialer
	dial  dialFunc
}

// Dial implements pq.Dialer.
func (b boundedDialer) Dial(network, address string) (net.Conn, error) {
	return b.DialContext(context.Background(), network, address)
}

// DialTimeout implements pq.Dialer.
func (b boundedDialer) DialTimeout(network, address string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return b.DialContext(ctx, network, address)
}

// DialContext implements pq.DialerContext.
func (b boundedDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	dial := b.dial
	if dial == nil {
		dial = b.d.DialContext
	}
	c, err := dial(ctx, network, address)
	if err != nil {
		return nil, err
	}
	if b.bound <= 0 {
		return c, nil
	}
	bc := &boundedConn{Conn: c, bound: b.bound}
	if slot, ok := ctx.Value(dialSlotKey{}).(*dialSlot); ok {
		slot.set(bc)
	}
	return bc, nil
}

// boundedConn sets a deadline of now + bound before every read and write.
// A deadline the driver sets itself (lib/pq bounds the start-up handshake
// by the connect timeout) applies when it is earlier.
type boundedConn struct {
	net.Conn
	bound time.Duration

	mu              sync.Mutex
	readAt, writeAt time.Time // the driver's own deadlines; zero: none
}

// Read implements net.Conn.
func (c *boundedConn) Read(p []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(c.deadline(&c.readAt)); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

// Write implements net.Conn.
func (c *boundedConn) Write(p []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(c.deadline(&c.writeAt)); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// endedByServer reports whether the server has ended this idle
// connection: its socket holds the end of the stream or bytes no request
// asked for (PostgreSQL's "terminating connection" message). It looks
// without reading or waiting (peerEnded); it is called only between
// statements, when the server owes nothing.
func (c *boundedConn) endedByServer() bool { return peerEnded(c.Conn) }

func (c *boundedConn) deadline(own *time.Time) time.Time {
	d := time.Now().Add(c.bound)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !own.IsZero() && own.Before(d) {
		return *own
	}
	return d
}

// SetDeadline implements net.Conn.
func (c *boundedConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.readAt, c.writeAt = t, t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

// SetReadDeadline implements net.Conn.
func (c *boundedConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.readAt = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

// SetWriteDeadline implements net.Conn.
func (c *boundedConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.writeAt = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

// statementTimeoutError is the failure of a statement that timedConn
// cancelled. Its chain holds the driver's error (SQLSTATE 57014, or the
// broken connection), which classify reports as an outage.
type statementTimeoutError struct {
	timeout time.Duration
	err     error
}

func (e *statementTimeoutError) Error() string {
	return fmt.Sprintf("statement cancelled after the statement timeout (%v): %v", e.timeout, e.err)
}

func (e *statementTimeoutError) Unwrap() error { return e.err }
