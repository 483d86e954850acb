package memory

import (
	"context"
	"errors"

	"github.com/strata-go/strata/memory/store"
)

// deleteSession deletes the session for owner — its messages and summary,
// in one store call — and stops its fold, under the session's write lock:
// no fold of this process saves meanwhile, the bumped generation makes a
// fold still running discard its result, and a re-created session's first
// save waits until it is gone. The fold lease is left alone: it ends with
// the fold that holds it.
func (e *engine) deleteSession(ctx context.Context, sessionID, owner string) error {
	return e.rewrite(ctx, sessionID, func() error { return e.store.Delete(ctx, sessionID, owner) })
}

// replaceSession makes msgs (already validated) the whole history of the
// session for owner — a new incarnation, without the old one's summary —
// in one store call (store.Replacer), under the session's write lock, and
// stops its fold as deleteSession does.
func (e *engine) replaceSession(ctx context.Context, sessionID, owner string, msgs []store.Message) (res store.AppendResult, err error) {
	err = e.rewrite(ctx, sessionID, func() error {
		res, err = e.store.Replace(ctx, sessionID, owner, msgs...)
		return err
	})
	return res, err
}

// rewrite runs fn, a delete or a replace of the session, under its write
// lock and then stops its fold and forgets what the engine tracked of it:
// when fn succeeds, and when it fails after it may have changed the
// session (a composed store whose summary store failed after the messages
// went, see store.Compose), so that no fold saves a summary for what is
// gone. A refusal (ErrNotFound, ErrNotOwner) changes nothing.
func (e *engine) rewrite(ctx context.Context, sessionID string, fn func() error) error {
	e.mu.Lock()
	st := e.acquireLocked(sessionID)
	e.mu.Unlock()
	defer func() { e.mu.Lock(); e.releaseLocked(sessionID, st); e.mu.Unlock() }()
	st.write.Lock()
	defer st.write.Unlock()
	err := fn()
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrNotOwner) {
		return err
	}
	st.gen++
	e.cancelRun(sessionID)
	e.forgetBacklog(sessionID)
	if err != nil {
		return err
	}
	e.coolSucceed(sessionID)
	return nil
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
