package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/strata-go/strata/memory/store"
)

// deleteSession deletes the session for owner from the message store and
// then the summary store, and stops its fold, under the session's write
// lock: no fold of this process saves between the messages going and the
// summary going, the bumped generation makes a fold still running discard
// its result, and a re-created session's first save waits until both are
// gone. The fold lease is left alone: it ends with the fold that holds it.
func (e *engine) deleteSession(ctx context.Context, sessionID, owner string) error {
	e.mu.Lock()
	st := e.acquireLocked(sessionID)
	e.mu.Unlock()
	defer func() { e.mu.Lock(); e.releaseLocked(sessionID, st); e.mu.Unlock() }()
	st.write.Lock()
	defer st.write.Unlock()
	if err := e.store.Delete(ctx, sessionID, owner); err != nil {
		return err
	}
	st.gen++
	e.cancelRun(sessionID)
	e.forgetBacklog(sessionID)
	if e.sums != nil && !e.storeKeepsSummaries() {
		if err := e.sums.Delete(ctx, sessionID); err != nil {
			return fmt.Errorf("summary: %w", err)
		}
	}
	e.cool.succeed(sessionID)
	return nil
}

// storeKeepsSummaries reports whether the message store keeps the summary
// store's summaries beside its sessions (store.SnapshotReader's
// ReadsSummariesOf): its Delete and Replace then remove the session's
// summary in the same atomic step, and the manager must not delete it
// again by id — by then another replica may have re-created the session
// and stored the new incarnation's summary.
func (e *engine) storeKeepsSummaries() bool {
	sr, ok := e.store.(store.SnapshotReader)
	return ok && sr.ReadsSummariesOf(e.sums)
}

// replaceSession makes msgs (already validated) the whole history of the
// session for owner, under the session's write lock, and stops its fold as
// deleteSession does. With a store.Replacer the store does it in one atomic
// step; without, it is a delete then an append under the write lock (see
// store.Replacer for what that fallback does not cover). The old summary
// belongs to the old incarnation: it is removed.
func (e *engine) replaceSession(ctx context.Context, sessionID, owner string, msgs []store.Message) (store.AppendResult, error) {
	e.mu.Lock()
	st := e.acquireLocked(sessionID)
	e.mu.Unlock()
	defer func() { e.mu.Lock(); e.releaseLocked(sessionID, st); e.mu.Unlock() }()
	st.write.Lock()
	defer st.write.Unlock()
	var res store.AppendResult
	var err error
	if r, ok := e.store.(store.Replacer); ok {
		res, err = r.Replace(ctx, sessionID, owner, msgs...)
	} else {
		res, err = e.replaceFallback(ctx, sessionID, owner, msgs)
	}
	if err != nil {
		return store.AppendResult{}, err
	}
	st.gen++
	e.cancelRun(sessionID)
	e.forgetBacklog(sessionID)
	if e.sums != nil && !e.storeKeepsSummaries() {
		if err := e.sums.Delete(ctx, sessionID); err != nil {
			return res, fmt.Errorf("summary: %w", err)
		}
	}
	e.cool.succeed(sessionID)
	return res, nil
}

// replaceFallback replaces a session's history with a store that is no
// store.Replacer: delete (a missing session is fine), create, append.
func (e *engine) replaceFallback(ctx context.Context, sessionID, owner string, msgs []store.Message) (store.AppendResult, error) {
	if err := e.store.Delete(ctx, sessionID, owner); err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.AppendResult{}, err
	}
	if err := e.store.Create(ctx, sessionID, owner); err != nil {
		return store.AppendResult{}, err
	}
	return e.store.Append(ctx, sessionID, owner, msgs...)
}

// exclusive runs fn with the session to itself as far as folds go: its
// running fold is cancelled, the cross-process fold lock (when the stores
// have one) is held, no fold of this process saves a summary meanwhile,
// and none that began before saves one after (the generation is bumped).
// Erasure and import rewrite a session's summary under it, so that no fold
// works from what they replace.
func (e *engine) exclusive(ctx context.Context, sessionID string, fn func() error) error {
	e.mu.Lock()
	st := e.acquireLocked(sessionID)
	e.mu.Unlock()
	defer func() { e.mu.Lock(); e.releaseLocked(sessionID, st); e.mu.Unlock() }()
	e.cancelRun(sessionID)
	release, _, err := e.lock(ctx, sessionID)
	if err != nil {
		return err
	}
	defer release()
	st.write.Lock()
	defer st.write.Unlock()
	st.gen++
	err = fn()
	e.forgetBacklog(sessionID)
	return err
}
