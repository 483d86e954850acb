package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/lib/pq"

	"github.com/strata-go/strata/memory/store"
)

// classify prepares a database error for the caller of a store method
// that ran with ctx:
//
//   - when ctx is done, its error joins the chain (lib/pq reports a
//     cancelled statement as SQLSTATE 57014, which alone would not say
//     that the caller cancelled it);
//   - a call the caller cancelled is returned as it is: nothing failed;
//   - an outage — the server unreachable, the connection broken, the
//     server shutting down, a statement or call timeout — is wrapped with
//     store.ErrUnavailable, so callers can tell "retry later" from a bad
//     request. The original error stays in the chain.
func classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w: %w", cerr, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, store.ErrUnavailable) || !isOutage(err) {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}

// isOutage reports whether err says that the database could not be reached
// or did not answer in time, rather than that it refused the request.
func isOutage(err error) bool {
	for _, target := range []error{
		context.DeadlineExceeded, // the call's deadline: the server did not answer in time
		driver.ErrBadConn,        // lib/pq: the connection broke or was closed
		sql.ErrConnDone,
		io.EOF, io.ErrUnexpectedEOF, // the server closed the connection mid-message
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
		syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	var netErr net.Error // dial failures, I/O timeouts, DNS failures
	if errors.As(err, &netErr) {
		return true
	}
	var pqErr *pq.Error
	if errors.As(err, &pqErr) {
		return outageCode(string(pqErr.Code))
	}
	// Some drivers and wrappers report a broken connection only in text.
	return strings.Contains(err.Error(), "bad connection")
}

// outageCode reports whether a SQLSTATE means an outage:
//
//	08xxx  connection exception (cannot connect, connection failure, …)
//	53xxx  insufficient resources (too many connections, disk full, …)
//	57xxx  operator intervention: 57014 query_canceled (statement_timeout
//	       when the caller did not cancel), 57P01 admin_shutdown,
//	       57P02 crash_shutdown, 57P03 cannot_connect_now, …
//	58xxx  system error (I/O error on the server)
//	25P03  idle_in_transaction_session_timeout
//	55P03  lock_not_available (lock_timeout expired)
func outageCode(code string) bool {
	if len(code) != 5 {
		return false
	}
	switch code[:2] {
	case "08", "53", "57", "58":
		return true
	}
	return code == "25P03" || code == "55P03"
}
