package db

import (
	"context"
	"database/sql/driver"
	"net"
	"sync"
	"time"

	"github.com/lib/pq"
)

// connector is the driver.Connector of the pools Open makes: lib/pq's,
// dialing through boundedDialer when a reply bound is set. It keeps the
// data source name so that Migrate can open a connection of its own
// without the bound (a migration may legitimately run long).
type connector struct {
	*pq.Connector
	dsn string
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
// no bound).
func newConnector(dsn string, bound time.Duration) (*connector, error) {
	pc, err := pq.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	if bound > 0 {
		pc.Dialer(boundedDialer{bound: bound})
	}
	return &connector{Connector: pc, dsn: dsn}, nil
}

// boundedDialer dials connections whose every read and write waits at
// most bound for the server. lib/pq blocks in a read until the server
// answers: neither the caller's context (lib/pq then sends the server a
// cancel request, which a hung server never acts on) nor statement_timeout
// (enforced by that same server) can end the wait. The bound can.
type boundedDialer struct {
	bound time.Duration
	d     net.Dialer
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
	c, err := b.d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return &boundedConn{Conn: c, bound: b.bound}, nil
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
