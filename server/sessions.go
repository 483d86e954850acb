package server

import (
	"context"
	"errors"
	"time"

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/memory/store"
)

// This file holds the server's reads and writes of session data that are
// not a single manager call: titles, listings and search, which go through
// the conversation catalogue when there is one.

// title returns the session's title as the catalogue has it: the one
// given at creation, else a generated one ("" without a catalogue).
func (s *Server) title(ctx context.Context, id, user string) (string, error) {
	if s.cat == nil {
		return "", nil
	}
	return s.cat.Title(ctx, id, user)
}

// setTitle gives a session of user the title chosen at its creation: the
// catalogue pins it (refreshes keep it) until the session is deleted.
func (s *Server) setTitle(ctx context.Context, id, user, title string) error {
	return s.cat.SetTitle(ctx, id, user, title)
}

// list returns a page of user's sessions, newest activity first, and how
// many sessions the user has: from the catalogue, with titles, or from the
// manager without.
func (s *Server) list(ctx context.Context, user string, limit, offset int) ([]listEntry, int, error) {
	var out []listEntry
	if s.cat != nil {
		page, err := s.cat.List(ctx, user, limit, offset)
		if err != nil {
			return nil, 0, err
		}
		for _, e := range page.Sessions {
			out = append(out, listEntry{ID: e.SessionID, Title: e.Title, Preview: e.Preview,
				MessageCount: e.MessageCount, CreatedAt: listTime(e.CreatedAt), LastActivity: listTime(e.LastActivity)})
		}
		return out, page.Total, nil
	}
	infos, total, err := s.mgr.Sessions(ctx, user, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	for _, in := range infos {
		out = append(out, listEntry{ID: in.SessionID, Preview: in.Preview, MessageCount: in.MessageCount,
			CreatedAt: listTime(in.CreatedAt), LastActivity: listTime(in.LastActivity)})
	}
	return out, total, nil
}

// search finds user's sessions by what they were about. Sessions without
// a document yet (short, never folded, never listed) or with a stale one
// are indexed first, within reindexTimeout; the rest is searched as it is.
// A store outage met while indexing fails the search (rather than miss
// the sessions it could not index); other indexing failures are logged.
func (s *Server) search(ctx context.Context, user, q string, limit int) (catalog.Results, error) {
	rctx, cancel := context.WithTimeout(ctx, reindexTimeout)
	defer cancel()
	if _, err := s.cat.Reindex(rctx, user); err != nil && ctx.Err() == nil {
		if errors.Is(err, store.ErrUnavailable) && rctx.Err() == nil {
			return catalog.Results{}, err
		}
		s.log.WarnContext(ctx, "strata serve: reindex before search", "user_id", user, "error", err)
	}
	return s.cat.Search(ctx, user, q, limit)
}

// listTime is a listing's time as JSON can write it (store.NormalTime): a
// session imported before out-of-range times were refused must not break
// its user's listing.
func listTime(t time.Time) time.Time {
	n, _ := store.NormalTime(t)
	return n
}
