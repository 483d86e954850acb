package catalog

import (
	"context"

	"github.com/strata-go/strata/memory"
)

// erased rebuilds the session's document at once after an erasure
// (memory.Manager.Forget or ForgetFact, announced as a FoldEvent with
// Erased set), from the session as it is now, reusing nothing of the
// document it replaces but a pinned title: its title, text and embedding
// may carry what was erased. A refresh that read the session before the
// erasure writes nothing after it in the in-memory index; the PostgreSQL
// index's document is reset by the erasure's own transaction, and a refresh
// running meanwhile is followed by another fresh rebuild. Failures are
// logged.
func (c *Catalog) erased(ctx context.Context, ev memory.FoldEvent) {
	sessionID, userID := ev.SessionID, c.owner(ev.SessionID, ev.UserID)
	// A background refresh running now may have read the session before
	// the erasure: it runs once more afterwards, rebuilding afresh too.
	c.mu.Lock()
	if j := c.jobs[sessionID]; j != nil {
		j.userID, j.again, j.fresh = userID, true, true
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.refreshTimeout)
	defer cancel()
	if err := c.rebuild(ctx, sessionID, userID); err != nil {
		c.log.Warn("strata: catalog rebuild after an erasure failed", "session_id", sessionID, "error", err)
	}
}

// rebuild writes the session's document afresh from the session as it is
// now, whatever the stored document's version, keeping only a pinned title.
func (c *Catalog) rebuild(ctx context.Context, sessionID, userID string) error {
	if c.mem != nil {
		t := c.mem.fence()
		defer c.mem.unfence(t)
		return c.buildFrom(ctx, sessionID, userID, 0, true, func(d Doc) error {
			c.mem.replace(d, t)
			return nil
		})
	}
	return c.buildFrom(ctx, sessionID, userID, 0, true, func(d Doc) error { return c.idx.Upsert(ctx, d) })
}

// replace writes d in place of the session's document whatever its
// version, keeping a pinned title, unless the session was deleted after
// fence t opened; every write fenced before this call is dropped, since it
// may hold erased content.
func (x *memoryIndex) replace(d Doc, t uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.deletedSince(d.SessionID, t) {
		return
	}
	old, had := x.docs[d.SessionID]
	x.clock++
	if len(x.open) > 0 {
		x.tombs[d.SessionID] = x.clock
	}
	if had && old.UserID == d.UserID && old.Pinned {
		d.Title, d.Pinned = old.Title, true
	}
	x.docs[d.SessionID] = d
}
