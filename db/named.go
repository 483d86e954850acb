package db

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// namedStmt is a statement the server keeps prepared by name (SQL PREPARE)
// on each of its connections, run by EXECUTE over the simple query
// protocol: one round trip that neither parses nor plans the statement
// again once the server connection has it, on any pool, through any
// connection pooler. database/sql's prepared statements
// (WithPreparedStatements) need a client connection that stays on one
// server connection, which a transaction-mode pooler does not give; here
// the statement's name is its text's hash, so a server connection that
// has a statement of that name has this statement, whichever client
// prepared it, and one that does not (error 26000, before anything runs)
// is given it in the same round trip as the retried call: PREPARE and
// EXECUTE in one simple query, one implicit transaction, one server
// connection. PostgreSQL analyzes a prepared statement again when it runs
// under another search_path than the one it was planned under, so the
// tables it reads are always those of the caller's schema.
//
// The arguments are SQL literals (see literal), which the server parses
// as EXECUTE's parameters: no text of the caller becomes SQL.
type namedStmt struct {
	name    string
	text    string
	prepare string // PREPARE name(types) AS query;
}

// newNamedStmt is the named statement of query, whose parameters $1… have
// types (SQL type names).
func newNamedStmt(query string, types ...string) namedStmt {
	h := sha256.Sum256([]byte(strings.Join(types, ",") + "\x00" + query))
	name := "strata_" + hex.EncodeToString(h[:10])
	return namedStmt{name: name, text: query, prepare: "PREPARE " + name + "(" + strings.Join(types, ", ") + ") AS " + query + ";"}
}

// errNoSuchStatement is SQLSTATE 26000 (invalid_sql_statement_name): the
// server connection has no prepared statement of that name. Nothing ran.
const errNoSuchStatement = "26000"

// errStatementExists is SQLSTATE 42P05 (duplicate_prepared_statement):
// the PREPARE of a retried call reached a server connection that has the
// statement already (a pooler's other connection). Nothing ran.
const errStatementExists = "42P05"

// namedAttempts bounds the calls queryRow makes by name: behind a
// transaction-mode pooler a retried call may reach a server connection
// that has the statement (42P05) and the call after it one that has not
// (26000) again, while the pooler's connections are being given it.
const namedAttempts = 4

// queryRow runs the statement with args on a connection of d and scans
// its one row into dest, as QueryRowContext and Scan do (sql.ErrNoRows
// when none); see run.
func (n namedStmt) queryRow(ctx context.Context, d *sqlx.DB, args []any, dest ...any) error {
	conn, err := d.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return n.run(ctx, conn, args, func(q string, args ...any) error {
		return conn.QueryRowContext(ctx, q, args...).Scan(dest...)
	})
}

// query runs the statement with args on a connection of d, as
// QueryContext does; see run. release returns the connection to the pool,
// after rows are closed (nil on error).
func (n namedStmt) query(ctx context.Context, d *sqlx.DB, args []any) (rows *sql.Rows, release func(), err error) {
	conn, err := d.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	err = n.run(ctx, conn, args, func(q string, args ...any) error {
		var err error
		rows, err = conn.QueryContext(ctx, q, args...)
		return err
	})
	if err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	return rows, func() { _ = conn.Close() }, nil
}

// namedMemo is a driver connection that remembers the named statements
// its server connection was given (timedConn, the connections of a pool
// made by Open): the first call of a statement on it sends the PREPARE
// with the EXECUTE, so that a direct connection never sees a call refused
// (PostgreSQL logs each refusal, with its statement). Through a
// transaction-mode pooler the memory may be wrong either way; the
// refusals then correct it.
type namedMemo interface {
	hasNamed(name string) bool
	markNamed(name string)
}

// run calls call with EXECUTE of the statement with args as literals, on
// conn; when conn's driver connection does not remember the statement
// (namedMemo), with its PREPARE first, in the same round trip. A server
// connection without the statement refuses before anything runs (26000)
// and gets it in the retried call's round trip (PREPARE, then EXECUTE); a
// PREPARE that reaches one that has it (42P05, a pooler's other server
// connection) is followed by EXECUTE alone; one whose plan of it no
// longer matches its result type (0A000: a migration changed what it
// reads) gets it anew (DEALLOCATE, PREPARE, EXECUTE). Each of those
// refusals comes before anything ran. After namedAttempts calls the
// statement runs unnamed, with args as parameters (parsed and planned for
// this call, as any parameterized query). Other errors are returned as
// they are.
func (n namedStmt) run(ctx context.Context, conn *sql.Conn, args []any, call func(q string, args ...any) error) error {
	lits := make([]string, len(args))
	for i, a := range args {
		l, err := literal(a)
		if err != nil {
			return err
		}
		lits[i] = l
	}
	exec := "EXECUTE " + n.name + "(" + strings.Join(lits, ", ") + ")"
	q := exec
	memo, known := false, false
	_ = conn.Raw(func(dc any) error {
		if m, ok := dc.(namedMemo); ok {
			memo, known = true, m.hasNamed(n.name)
			if !known {
				q = n.prepare + " " + exec
			}
		}
		return nil
	})
	for attempt := range namedAttempts {
		err := call(q)
		switch {
		case err == nil || !isCode(err, errNoSuchStatement) && !isCode(err, errStatementExists) && !isCode(err, errPlanChanged):
			if memo && (!known || attempt > 0) && (err == nil || errors.Is(err, sql.ErrNoRows)) {
				// The server connection has it now: the next call on
				// this connection sends EXECUTE alone.
				_ = conn.Raw(func(dc any) error { dc.(namedMemo).markNamed(n.name); return nil })
			}
			return err
		case isCode(err, errNoSuchStatement):
			q = n.prepare + " " + exec
		case isCode(err, errStatementExists):
			q = exec
		default: // errPlanChanged
			q = "DEALLOCATE " + n.name + "; " + n.prepare + " " + exec
		}
	}
	return call(n.text, args...)
}

// errPlanChanged is SQLSTATE 0A000 (feature_not_supported), which a
// prepared statement's execution returns when what it reads changed its
// result type since it was prepared ("cached plan must not change result
// type"). Nothing ran.
const errPlanChanged = "0A000"

// literal is a as an SQL literal: a string quoted (pq.QuoteLiteral), an
// integer or a boolean as written, a time as PostgreSQL reads a
// timestamptz, nil (or a driver.Valuer's nil) as NULL.
func literal(a any) (string, error) {
	if v, ok := a.(driver.Valuer); ok {
		x, err := v.Value()
		if err != nil {
			return "", fmt.Errorf("db: named statement: %w", err)
		}
		a = x
	}
	switch v := a.(type) {
	case nil:
		return "NULL", nil
	case string:
		return pq.QuoteLiteral(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case int:
		return strconv.Itoa(v), nil
	case bool:
		return strconv.FormatBool(v), nil
	case time.Time:
		return pq.QuoteLiteral(string(pq.FormatTimestamp(v))), nil
	}
	return "", fmt.Errorf("db: named statement: no literal for a %T parameter", a)
}

// isCode reports whether err is a PostgreSQL error of SQLSTATE code.
func isCode(err error, code string) bool {
	var pqErr *pq.Error
	return err != nil && errors.As(err, &pqErr) && string(pqErr.Code) == code
}
