package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/strata-go/strata/memory/store"
)

func TestClassify(t *testing.T) {
	live := context.Background()
	cancelled, cancel := context.WithCancel(live)
	cancel()
	expired, cancel2 := context.WithTimeout(live, 0)
	defer cancel2()
	<-expired.Done()

	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "x"}}
	cases := []struct {
		name    string
		ctx     context.Context
		err     error
		outage  bool
		ctxErr  error
		keepsIn any // a target the result must still match with errors.Is / errors.As
	}{
		{"bad connection", live, driver.ErrBadConn, true, nil, driver.ErrBadConn},
		{"wrapped bad connection", live, fmt.Errorf("begin: %w", driver.ErrBadConn), true, nil, driver.ErrBadConn},
		{"dial error", live, refused, true, nil, nil},
		{"econnrefused", live, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true, nil, syscall.ECONNREFUSED},
		{"unexpected EOF", live, io.ErrUnexpectedEOF, true, nil, io.ErrUnexpectedEOF},
		{"statement timeout", live, &pq.Error{Code: "57014", Message: "canceling statement due to statement timeout"}, true, nil, nil},
		{"admin shutdown", live, &pq.Error{Code: "57P01"}, true, nil, nil},
		{"cannot connect now", live, &pq.Error{Code: "57P03"}, true, nil, nil},
		{"connection failure", live, &pq.Error{Code: "08006"}, true, nil, nil},
		{"too many connections", live, &pq.Error{Code: "53300"}, true, nil, nil},
		{"lock timeout", live, &pq.Error{Code: "55P03"}, true, nil, nil},
		{"text only", live, errors.New("driver: bad connection (wrapped by hand)"), true, nil, nil},
		{"call deadline", expired, &pq.Error{Code: "57014", Message: "canceling statement due to user request"}, true, context.DeadlineExceeded, nil},
		{"deadline from the driver", live, context.DeadlineExceeded, true, context.DeadlineExceeded, nil},
		{"caller cancelled", cancelled, &pq.Error{Code: "57014", Message: "canceling statement due to user request"}, false, context.Canceled, nil},
		{"caller cancelled, connection closed", cancelled, driver.ErrBadConn, false, context.Canceled, driver.ErrBadConn},
		{"unique violation", live, &pq.Error{Code: "23505"}, false, nil, nil},
		{"check violation", live, &pq.Error{Code: "23514"}, false, nil, nil},
		{"plain error", live, errors.New("boom"), false, nil, nil},
	}
	for _, c := range cases {
		got := classify(c.ctx, c.err)
		if !errors.Is(got, c.err) {
			t.Errorf("%s: the original error is not in the chain of %v", c.name, got)
		}
		if errors.Is(got, store.ErrUnavailable) != c.outage {
			t.Errorf("%s: classify = %v, outage %v, want %v", c.name, got, !c.outage, c.outage)
		}
		if c.ctxErr != nil && !errors.Is(got, c.ctxErr) {
			t.Errorf("%s: %v does not carry %v", c.name, got, c.ctxErr)
		}
		if target, ok := c.keepsIn.(error); ok && !errors.Is(got, target) {
			t.Errorf("%s: %v lost %v", c.name, got, target)
		}
		var pqErr *pq.Error
		if errors.As(c.err, &pqErr) && !errors.As(got, &pqErr) {
			t.Errorf("%s: *pq.Error not reachable through errors.As", c.name)
		}
	}
	if classify(live, nil) != nil {
		t.Error("classify(nil) != nil")
	}
	// Classifying twice does not wrap twice.
	once := classify(live, driver.ErrBadConn)
	if twice := classify(live, once); twice != once {
		t.Errorf("classify wrapped an already classified error again: %v", twice)
	}
}

func TestWithTimeouts(t *testing.T) {
	t.Setenv("PGCONNECT_TIMEOUT", "")
	t.Setenv("PGOPTIONS", "")
	def := openOptions{connectTimeout: DefaultConnectTimeout, statementTimeout: DefaultStatementTimeout}
	cases := []struct {
		dsn       string
		opt       openOptions
		want, not []string
	}{
		// The statement timeout is never a start-up parameter (a pooler
		// refuses it): the pool enforces it on the client.
		{"postgres://u@h/db?sslmode=disable", def, []string{"connect_timeout=5", "binary_parameters=yes", "sslmode=disable"}, []string{"statement_timeout"}},
		{"postgres://u@h/db?connect_timeout=2", def, []string{"connect_timeout=2"}, []string{"connect_timeout=5", "statement_timeout"}},
		{"postgres://u@h/db?statement_timeout=100", def, []string{"statement_timeout=100", "connect_timeout=5"}, []string{"30000"}},
		{"postgres://u@h/db?options=-c%20statement_timeout%3D100", def, []string{"connect_timeout=5"}, []string{"30000"}},
		{"postgres://u@h/db?binary_parameters=no", def, []string{"binary_parameters=no"}, []string{"binary_parameters=yes"}},
		{"host=h dbname=db", def, []string{"connect_timeout='5'", "binary_parameters='yes'"}, []string{"statement_timeout"}},
		{"host=h connect_timeout=9", def, []string{"connect_timeout=9"}, []string{"'5'"}},
		{"postgres://u@h/db", openOptions{connectTimeout: 1500 * time.Millisecond, statementTimeout: time.Microsecond}, []string{"connect_timeout=2"}, []string{"statement_timeout"}},
		{"postgres://u@h/db", openOptions{}, []string{"binary_parameters=yes"}, []string{"connect_timeout", "statement_timeout"}},
	}
	for _, c := range cases {
		got, _, err := withTimeouts(c.dsn, c.opt)
		if err != nil {
			t.Fatalf("withTimeouts(%q): %v", c.dsn, err)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("withTimeouts(%q) = %q, want it to contain %q", c.dsn, got, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(got, n) {
				t.Errorf("withTimeouts(%q) = %q, must not contain %q", c.dsn, got, n)
			}
		}
	}
	t.Setenv("PGCONNECT_TIMEOUT", "3")
	t.Setenv("PGOPTIONS", "-c statement_timeout=10")
	if got, _, _ := withTimeouts("postgres://u@h/db?binary_parameters=yes", def); got != "postgres://u@h/db?binary_parameters=yes" {
		t.Errorf("with both timeouts in the environment: %q, want the DSN unchanged", got)
	}
	if clientStatementTimeout("postgres://u@h/db", def) {
		t.Error("a statement_timeout in PGOPTIONS must leave the timeout to the server")
	}
	t.Setenv("PGOPTIONS", "")
	if !clientStatementTimeout("postgres://u@h/db", def) || clientStatementTimeout("postgres://u@h/db?statement_timeout=5", def) ||
		clientStatementTimeout("postgres://u@h/db", openOptions{}) {
		t.Error("clientStatementTimeout: want the client's bound exactly when a timeout is set and the deployment sets none")
	}
}
