package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// Entry is one conversation in a listing.
type Entry struct {
	SessionID string
	// Title is the conversation's title. Sessions not indexed yet get a
	// provisional, offline title made from their first user message (and a
	// background refresh, see Indexed).
	Title string
	// Preview is the first user message cut to 50 characters plus "...",
	// or "Empty conversation" (the reference's listing rule).
	Preview      string
	MessageCount int
	LastActivity time.Time
	CreatedAt    time.Time
	// Indexed is false when the session has no document in the index yet:
	// Title is then provisional.
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
// as 0 and an offset past the end gives an empty page with the right Total.
// Other users' sessions never appear.
//
// Sessions without a document, without summary and grown by a quarter
// since they were indexed, or embedded by another embedder are refreshed in
// the background (unless WithoutLazyRefresh); List itself never waits for a
// model. Sessions with a summary are refreshed after each fold (Observer).
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
		if r.Doc != nil {
			e.Title, e.Indexed = r.Doc.Title, true
		}
		if e.Title == "" {
			if e.Title, err = c.provisionalTitle(ctx, r.Info); err != nil {
				return Page{}, err
			}
		}
		if c.lazy && c.stale(r, false) {
			c.schedule(r.Info.SessionID)
		}
		p.Sessions = append(p.Sessions, e)
	}
	return p, nil
}

// sessions lists a page of a user's sessions with their documents, through
// the index when it is a Lister, else through the store.
func (c *Catalog) sessions(ctx context.Context, userID string, limit, offset int) ([]Session, int, error) {
	if l, ok := c.idx.(Lister); ok {
		rows, total, err := l.ListSessions(ctx, userID, limit, offset)
		if err != nil {
			return nil, 0, fmt.Errorf("catalog: list sessions of %q: %w", userID, err)
		}
		return rows, total, nil
	}
	sl, ok := c.store.(memory.SessionLister)
	if !ok {
		return nil, 0, ErrListingUnsupported
	}
	infos, total, err := sl.Sessions(ctx, userID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("catalog: list sessions of %q: %w", userID, err)
	}
	rows := make([]Session, 0, len(infos))
	for _, info := range infos {
		d, err := c.idx.Get(ctx, info.SessionID)
		if err != nil {
			return nil, 0, fmt.Errorf("catalog: list sessions of %q: index: %w", userID, err)
		}
		if d != nil && d.UserID != "" && d.UserID != info.UserID {
			d = nil // left over from a deleted session of another user
		}
		if d != nil {
			d.Text, d.Embedding = "", nil
		}
		rows = append(rows, Session{Info: info, Doc: d})
	}
	return rows, total, nil
}

// stale reports whether a listed session's document needs a refresh.
// Documents whose embedding failed are retried at most once a minute unless
// explicit.
func (c *Catalog) stale(r Session, explicit bool) bool {
	d := r.Doc
	switch {
	case d == nil:
		return r.Info.MessageCount > 0
	case d.Source == SourceTurns && r.Info.MessageCount >= d.MessageCount+max(4, d.MessageCount/4):
		return true // grown by a quarter (or 4 messages) since it was indexed
	case c.emb != nil && d.Model != "" && d.Model != c.model:
		return true // embedded by another embedder
	case c.emb != nil && d.Model == "" && (explicit || c.now().Sub(d.UpdatedAt) > time.Minute):
		return true // no embedding yet (an earlier attempt failed)
	}
	return false
}

// provisionalTitle titles a session that has no document yet, offline, from
// its first user messages.
func (c *Catalog) provisionalTitle(ctx context.Context, info memory.SessionInfo) (string, error) {
	if info.MessageCount == 0 {
		return "", nil
	}
	first, _, err := c.firstUserMessages(ctx, info.SessionID)
	if err != nil {
		return "", fmt.Errorf("catalog: title of %q: %w", info.SessionID, err)
	}
	return summary.Title(nil, first), nil
}

// Reindex refreshes, now, every session of userID whose document is
// missing, stale, without embedding or embedded by another embedder (after
// WithEmbedder changed), and returns how many it refreshed. Errors are
// joined; the other sessions are still refreshed.
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
		if err := c.Refresh(ctx, r.Info.SessionID); err != nil {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}
