package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/strata-go/strata/memory/store"
)

// Entry is one conversation in a listing.
type Entry struct {
	SessionID string
	// Title is the conversation's title: the pinned one (SetTitle), else
	// the generated one. Sessions not indexed yet get a provisional,
	// offline title made from their first user messages (see Indexed).
	Title string
	// Preview is the first user message cut to 50 characters plus "...",
	// or "Empty conversation".
	Preview      string
	MessageCount int
	LastActivity time.Time
	CreatedAt    time.Time
	// Indexed is false when the session has no document in the index yet:
	// Title is then provisional, and a background refresh is scheduled.
	Indexed bool
}

// Page is one page of a user's conversations, newest activity first.
type Page struct {
	Sessions []Entry
	// Total is the number of the user's sessions, whatever the page.
	Total int
}

// List returns a page of userID's conversations, most recently active first
// (ties by session id). limit <= 0 means no limit; a negative offset counts
// as 0, and an offset past the end gives an empty page with the right
// Total. Other users' sessions never appear; a shared session
// (memory.Config.SharedSessionPrefixes) appears in the listings of the
// users who wrote in it (and of the configured viewers,
// memory.Config.SharedSessionViewers), with the one title all its
// participants see, never in every user's: that needs a message store
// that records participants (store.ParticipantLister; without one, only
// the viewers list shared sessions).
//
// The page comes from the index in one query when it is a Lister, else from
// memory.Manager.Sessions with each session's document. Sessions whose
// document is missing, built from fewer messages than they now hold (by a
// quarter, or four messages), embedded by another embedder or without
// embedding are refreshed in the background; List itself never waits for
// a model.
func (c *Catalog) List(ctx context.Context, userID string, limit, offset int) (Page, error) {
	rows, total, err := c.sessions(ctx, userID, limit, max(offset, 0))
	if err != nil {
		return Page{}, err
	}
	p := Page{Total: total, Sessions: make([]Entry, 0, len(rows))}
	for _, r := range rows {
		e := Entry{
			SessionID: r.Info.SessionID, Preview: r.Info.Preview, MessageCount: r.Info.MessageCount,
			LastActivity: r.Info.LastActivity, CreatedAt: r.Info.CreatedAt,
		}
		own := c.owner(e.SessionID, userID)
		if r.Doc != nil {
			e.Title, e.Indexed = r.Doc.Title, true
		}
		if e.Title == "" && e.MessageCount > 0 {
			msgs, err := c.mgr.Messages(ctx, e.SessionID, own, 0, 4*firstTurns)
			if err != nil && !gone(err) { // a session deleted since the listing has no title
				return Page{}, fmt.Errorf("catalog: title of %q: %w", e.SessionID, err)
			}
			e.Title = sketchTitle(nil, firstUserMessages(msgs))
		}
		if c.stale(r, false) {
			c.schedule(e.SessionID, own, e.MessageCount)
		}
		p.Sessions = append(p.Sessions, e)
	}
	return p, nil
}

// sessions lists a page of the sessions userID lists, with their
// documents: their own and, when sessions are shared, the shared ones in
// their scope, merged newest activity first (ties by session id).
func (c *Catalog) sessions(ctx context.Context, userID string, limit, offset int) ([]Session, int, error) {
	scopes := c.scopes(userID)
	if len(scopes) == 1 {
		return c.sessionsOf(ctx, scopes[0], limit, offset)
	}
	want := 0 // every session of each owner
	if limit > 0 {
		want = offset + limit
	}
	var rows []Session
	total := 0
	for _, sc := range scopes {
		r, n, err := c.sessionsOf(ctx, sc, want, 0)
		if err != nil {
			return nil, 0, err
		}
		rows, total = append(rows, r...), total+n
	}
	slices.SortStableFunc(rows, func(a, b Session) int {
		if c := b.Info.LastActivity.Compare(a.Info.LastActivity); c != 0 {
			return c
		}
		return strings.Compare(a.Info.SessionID, b.Info.SessionID)
	})
	rows = rows[min(offset, len(rows)):]
	if limit > 0 && len(rows) > limit {
		rows = rows[:limit]
	}
	return rows, total, nil
}

// sessionsOf lists a page of the sessions of one scope with their
// documents: through the index when it is a Lister, else through the
// manager.
func (c *Catalog) sessionsOf(ctx context.Context, sc scope, limit, offset int) ([]Session, int, error) {
	userID := sc.owner
	if l, ok := c.idx.(Lister); ok {
		var rows []Session
		var total int
		var err error
		if sc.participant != "" {
			rows, total, err = l.ListParticipantSessions(ctx, sc.owner, sc.participant, limit, offset)
		} else {
			rows, total, err = l.ListSessions(ctx, sc.owner, limit, offset)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("catalog: list sessions of %q: %w", userID, err)
		}
		return rows, total, nil
	}
	var infos []store.SessionInfo
	var total int
	var err error
	if sc.participant != "" {
		infos, total, err = c.mgr.SharedSessions(ctx, sc.participant, limit, offset)
		if errors.Is(err, errors.ErrUnsupported) {
			return nil, 0, nil // the store records no participants: no shared session is listed
		}
	} else {
		infos, total, err = c.mgr.Sessions(ctx, sc.owner, limit, offset)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("catalog: list sessions of %q: %w", userID, err)
	}
	rows := make([]Session, 0, len(infos))
	for _, info := range infos {
		d, err := c.idx.Get(ctx, info.SessionID, userID)
		if err != nil {
			return nil, 0, fmt.Errorf("catalog: list sessions of %q: index: %w", userID, err)
		}
		if d != nil {
			d.Text, d.Embedding = "", nil
		}
		rows = append(rows, Session{Info: info, Doc: d})
	}
	return rows, total, nil
}

// stale reports whether a listed session's document needs a refresh. A
// document whose embedding failed is retried at most once a minute unless
// explicit.
func (c *Catalog) stale(r Session, explicit bool) bool {
	d, n := r.Doc, r.Info.MessageCount
	switch {
	case d == nil:
		return n > 0
	case d.Source == SourceTurns && n > d.MessageCount && (d.MessageCount == 0 || n >= d.MessageCount+max(4, d.MessageCount/4)):
		return true // grown since it was indexed, or never built from messages (a pinned title only)
	case c.emb != nil && d.Model != "" && d.Model != c.model:
		return true // embedded by another embedder
	case c.emb != nil && d.Model == "" && n > 0 && (explicit || time.Since(d.UpdatedAt) > retryEmbedding):
		return true // no embedding yet (an earlier attempt failed)
	}
	return false
}

// Reindex refreshes now, one after the other, every session of userID
// whose document is missing, stale, without embedding or embedded by
// another embedder, and returns how many it refreshed. Errors are joined;
// the other sessions are still refreshed.
func (c *Catalog) Reindex(ctx context.Context, userID string) (int, error) {
	rows, _, err := c.sessions(ctx, userID, 0, 0)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, r := range rows {
		if !c.stale(r, true) {
			continue
		}
		n++
		if err := c.refresh(ctx, r.Info.SessionID, c.owner(r.Info.SessionID, userID), r.Info.MessageCount); err != nil {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}
