package db

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/internal/backoff"
	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/summary"
)

// DefaultFoldLeaseTTL is the lease length TryLockFold uses when asked for a
// non-positive ttl.
const DefaultFoldLeaseTTL = 5 * time.Minute

// DefaultFoldLeaseSlice is how long a fold lease lives without renewal
// (see WithFoldLeaseSlice). A lease asked for longer is taken for one slice
// and renewed by its holder every third of a slice, up to the asked ttl, so
// the lease of a holder that crashed, or whose release could not reach the
// database, frees itself within one slice instead of after the whole ttl.
const DefaultFoldLeaseSlice = 15 * time.Second

// releaseTimeout bounds the release of a fold lease, which runs without a
// caller context and retries while the database is unreachable. A lease
// whose release fails expires on its own.
const releaseTimeout = 5 * time.Second

// takeLeaseSQL takes the session's fold lease for $2 microseconds with the
// holder token $3: it inserts the lease, or takes over one that has
// expired. The server's clock decides expiry, so replicas' clocks need not
// agree: the proposed expiry less $2 is the server's time, so the old
// lease has expired when the proposed expiry is at least $2 past it
// (written as a difference of the two: Citus accepts only immutable
// expressions in an ON CONFLICT condition, and adding an interval to a
// timestamptz is not one). No row comes back while another holder's lease
// is live.
const takeLeaseSQL = `
INSERT INTO strata_fold_leases AS l (session_id, holder, expires_at)
VALUES ($1, $3, clock_timestamp() + $2::bigint * interval '1 microsecond')
ON CONFLICT (session_id) DO UPDATE
   SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
 WHERE EXCLUDED.expires_at - l.expires_at >= $2::bigint * interval '1 microsecond'
RETURNING holder`

// renewLeaseSQL extends the lease by $3 microseconds from now, if it is
// still ours.
const renewLeaseSQL = `
UPDATE strata_fold_leases
   SET expires_at = now() + $3::bigint * interval '1 microsecond'
 WHERE session_id = $1 AND holder = $2`

// releaseLeaseSQL drops the lease only if it is still ours: after an
// expiry another holder may have taken it over.
const releaseLeaseSQL = `DELETE FROM strata_fold_leases WHERE session_id = $1 AND holder = $2`

// lease is one fold lease held by this process.
type lease struct {
	d       *sqlx.DB
	cache   *summaryCache // the message store's, which saveRelease fills; nil: none
	tails   *tailCache    // the message store's, whose tail saveRelease updates; nil: none
	slice   time.Duration
	session string
	token   string
	stop    chan struct{} // closed by release; nil when not renewed
	done    chan struct{} // closed when the renewer has stopped
	once    sync.Once
}

// tryLockFold implements store.FoldLocker for both stores over the
// strata_fold_leases table. A lease row, rather than an advisory lock,
// keeps no connection pinned while the summarizer runs, survives a
// connection reset, and expires by itself if its holder dies.
func tryLockFold(ctx context.Context, d *sqlx.DB, slice time.Duration, sessionID string, ttl time.Duration) (release func(), ok bool, err error) {
	l, ok, err := takeLease(ctx, d, slice, sessionID, ttl)
	if !ok {
		return nil, false, err
	}
	return l.release, true, nil
}

// takeLease takes the session's fold lease (see tryLockFold).
func takeLease(ctx context.Context, d *sqlx.DB, slice time.Duration, sessionID string, ttl time.Duration) (*lease, bool, error) {
	if !text.Storable(sessionID) {
		return nil, false, fmt.Errorf("db: fold lease: session id is not valid UTF-8 or contains a NUL byte")
	}
	if ttl <= 0 {
		ttl = DefaultFoldLeaseTTL
	}
	deadline := time.Now().Add(ttl)
	token, err := newToken()
	if err != nil {
		return nil, false, fmt.Errorf("db: fold lease for session %q: %w", sessionID, err)
	}
	l := &lease{d: d, slice: slice, session: sessionID, token: token}
	var holder string
	err = d.QueryRowxContext(ctx, takeLeaseSQL, sessionID, min(ttl, slice).Microseconds(), token).Scan(&holder)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		// The server may have taken the lease before the failure reached us
		// (typically: ctx cancelled while the INSERT committed). The token
		// is ours alone, so dropping it is always safe, and it keeps a
		// lease that nobody would release from blocking the session.
		l.release()
		return nil, false, fmt.Errorf("db: fold lease for session %q: %w", sessionID, classify(ctx, err))
	}
	if ttl > slice {
		l.stop, l.done = make(chan struct{}), make(chan struct{})
		go l.renew(deadline)
	}
	return l, true, nil
}

// renew keeps the lease alive, one slice at a time, until release, the
// deadline, or the lease is found taken over.
func (l *lease) renew(deadline time.Time) {
	defer close(l.done)
	tick := time.NewTicker(l.slice / 3)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.slice/3)
		res, err := l.d.ExecContext(ctx, renewLeaseSQL, l.session, l.token, min(remaining, l.slice).Microseconds())
		cancel()
		if err != nil {
			continue // the database is unreachable: try again next tick
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return // expired and taken over
		}
	}
}

// release stops the renewal and deletes the lease if it is still ours,
// retrying while the database is unreachable, for at most releaseTimeout.
// It is safe to call more than once, and does nothing after a saveRelease
// that released the lease.
func (l *lease) release() {
	l.once.Do(func() {
		l.stopRenewal()
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		retry := backoff.Exp{Base: 25 * time.Millisecond, Ceiling: time.Second}
		for {
			if _, err := l.d.ExecContext(ctx, releaseLeaseSQL, l.session, l.token); err == nil {
				return
			}
			select {
			case <-time.After(retry.Next()):
			case <-ctx.Done():
				return // the lease expires by itself
			}
		}
	})
}

// stopRenewal stops the renewal, if any, and waits for it to end.
func (l *lease) stopRenewal() {
	if l.stop != nil {
		close(l.stop)
		<-l.done
	}
}

// saveRelease saves sm as SummaryStore.Save does and releases the lease,
// in one statement (saveReleaseSQL), provided the lease is still this
// holder's: when another holder took it over after it expired, nothing is
// saved or released and the error wraps summary.ErrStale (that holder folds
// the session now). When the lease is held it is released whatever the
// save's outcome (Save's errors: summary.ErrSessionGone, summary.ErrStale),
// and release does nothing afterwards. On any other error (the statement
// did not run or did not commit) the lease stays with its holder, for
// release to delete.
func (l *lease) saveRelease(ctx context.Context, sm summary.Summary) error {
	if err := checkSummary(sm); err != nil {
		return err
	}
	if sm.SessionID != l.session {
		return fmt.Errorf("db: save summary of session %q under the fold lease of session %q", sm.SessionID, l.session)
	}
	facts, err := encodeLedger(sm)
	if err != nil {
		return fmt.Errorf("db: save summary of session %q: %w", sm.SessionID, err)
	}
	held, gone, saved, err := saveJournaled(ctx, l.d, l.cache, l.tails, sm, facts, l.token)
	if err != nil {
		return saveResult(ctx, sm, false, false, err)
	}
	if !held {
		return fmt.Errorf("db: save summary of session %q: fold lease taken over by another holder: %w", sm.SessionID, summary.ErrStale)
	}
	l.once.Do(l.stopRenewal) // released by the statement
	return saveResult(ctx, sm, gone, saved, nil)
}

func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// TryLockFold implements store.Store with a lease row in
// strata_fold_leases: ok is true when this call took the session's lease,
// false while another holder (in this or another process) has a live one.
// The lease lasts at most ttl (DefaultFoldLeaseTTL when ttl <= 0); beyond
// one lease slice (WithFoldLeaseSlice) it is renewed in the background
// while held, so a holder that dies frees it within one slice. release
// deletes it if it is still this caller's, and is safe to call more than
// once. save stores a summary as SaveSummary does and releases the lease
// in the same statement and commit, one write instead of two, provided
// the lease is still the caller's; it refuses (an error wrapping
// summary.ErrStale, nothing written) when another holder took the lease
// over after it expired. A save that journals (store.WithJournalEdit) and
// writes appends the record in the same statement when it is one record
// (store.WithJournalRecord), and leaves the summary in the store's summary cache (WithSummaryCache),
// under the identity of the row it wrote. After a save that returned nil,
// summary.ErrSessionGone or summary.ErrStale for a newer stored summary,
// the lease is released and release does nothing; after any other error
// release must still be called. The message store and the summary store
// share the lease table (SummaryStore.TryLockFold). Deleting the session
// leaves the lease alone: only its holder's release or its expiry ends
// it.
func (s *MessageStore) TryLockFold(ctx context.Context, sessionID string, ttl time.Duration) (release func(), save func(context.Context, summary.Summary) error, ok bool, err error) {
	l, ok, err := takeLease(ctx, s.d, s.opt.leaseSlice, sessionID, ttl)
	if !ok {
		return nil, nil, false, err
	}
	l.cache, l.tails = s.cache, s.tails
	return l.release, l.saveRelease, true, nil
}
