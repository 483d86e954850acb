package catalog

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Match is one conversation found by a search.
type Match struct {
	SessionID string
	Title     string
	// Score is Weight × Similarity + (1 − Weight) × Recency (see Query).
	Score float64
	// Similarity is the cosine similarity between the query's embedding and
	// the session's (with the lexical embedder: between their bags of
	// words, exactly).
	Similarity float64
	// Recency is 1 for a session active just now, halving every half-life.
	Recency float64
	// Text is the exact text the session's embedding was computed from:
	// what the match is based on, to show or to explain it.
	Text string
	// LastActivity is the session's last activity, which Recency is
	// computed from.
	LastActivity time.Time
}

// Results is what Search found, and what to do about it.
type Results struct {
	// Matches are the matches, best first.
	Matches []Match
	// Best is the clear winner: the only match, or the best one when its
	// score beats the second's by at least the margin (WithThresholds).
	// Switch to it. nil when nothing matched or when no match stands out.
	Best *Match
	// Ambiguous is true when there are matches but no clear winner: ask
	// the user to choose among Contenders.
	Ambiguous bool
	// Contenders, when Ambiguous, are the leading matches whose score is
	// within the margin of the best one: the options to offer.
	Contenders []Match
}

// Search ranks userID's conversations by how well their documents match
// query, combined with how recently they were active, and returns at most
// limit matches (5 when limit <= 0) with a similarity of at least the
// minimum (WithThresholds), best first, with the decision they support
// (see Results). Only the user's own sessions, and the shared sessions
// (memory.Config.SharedSessionPrefixes) the user wrote in — every shared
// session for a configured viewer — are returned, as List shows them: the
// index filters by owner (and a Lister by participant), and the matches of
// an index that does not see sessions (not a Lister) are re-checked
// through the manager.
//
// With the default embedder the match is lexical: a conversation is found
// through the words it shares with the query. Its candidates are re-scored
// exactly from their stored texts, so Similarity is the cosine of the bags
// of words, not of their hashed vectors.
func (c *Catalog) Search(ctx context.Context, userID, query string, limit int) (Results, error) {
	if limit <= 0 {
		limit = searchLimit
	}
	query = strings.TrimSpace(query)
	if query == "" || c.emb == nil {
		return Results{}, nil
	}
	vec, err := c.embedQuery(ctx, query)
	if err != nil {
		return Results{}, fmt.Errorf("catalog: search: embed query: %w", err)
	}
	if vec == nil {
		return Results{}, nil // a query without content words (lexical embedder)
	}
	q := Query{
		Vector: vec, Model: c.model, Limit: limit + 4, MinSimilarity: c.minSim,
		Weight: c.weight, HalfLife: c.halfLife, Now: time.Now(),
	}
	scorer, exact := c.emb.(textScorer)
	if exact {
		// Re-scored from the texts below: take a wider, unfloored pool.
		q.Limit, q.MinSimilarity = max(4*limit, 20), -1 // cosine similarities are >= -1
	}
	var ms []Match
	for _, sc := range c.scopes(userID) {
		q.UserID, q.Participant = sc.owner, sc.participant
		found, err := c.idx.Search(ctx, q)
		if err != nil {
			return Results{}, fmt.Errorf("catalog: search: %w", err)
		}
		if sc.participant != "" && !c.trusted && len(found) > 0 {
			if found, err = c.took(ctx, sc, found); err != nil {
				return Results{}, fmt.Errorf("catalog: search: %w", err)
			}
		}
		ms = append(ms, found...)
	}
	sortMatches(ms)
	if exact {
		kept := ms[:0]
		for _, m := range ms {
			m.Similarity = scorer.similarity(query, m.Text)
			if m.Similarity < c.minSim {
				continue
			}
			q.score(&m)
			kept = append(kept, m)
		}
		ms = kept
		sortMatches(ms)
	}
	out := make([]Match, 0, min(limit, len(ms)))
	for _, m := range ms {
		if len(out) == limit {
			break
		}
		if !c.trusted {
			// The index may not have seen a delete yet: read, never act.
			if err := c.probe(ctx, m.SessionID, userID); gone(err) {
				continue
			} else if err != nil {
				return Results{}, fmt.Errorf("catalog: search: %w", err)
			}
		}
		out = append(out, m)
	}
	return decide(out, c.margin), nil
}

// took keeps the matches of sessions in sc, the shared sessions a user
// wrote in, for an index that cannot tell (not a Lister).
func (c *Catalog) took(ctx context.Context, sc scope, ms []Match) ([]Match, error) {
	rows, _, err := c.sessionsOf(ctx, sc, 0, 0)
	if err != nil {
		return nil, err
	}
	in := make(map[string]bool, len(rows))
	for _, r := range rows {
		in[r.Info.SessionID] = true
	}
	kept := ms[:0]
	for _, m := range ms {
		if in[m.SessionID] {
			kept = append(kept, m)
		}
	}
	return kept, nil
}

// decide tells what to do with matches sorted best first: nothing found;
// one clear winner (the only match, or one whose score beats the second's
// by at least margin); or a choice among the contenders within margin of
// the best.
func decide(matches []Match, margin float64) Results {
	r := Results{Matches: matches}
	switch {
	case len(matches) == 0:
	case len(matches) == 1 || matches[0].Score-matches[1].Score >= margin:
		w := matches[0]
		r.Best = &w
	default:
		n := 1
		for n < len(matches) && matches[0].Score-matches[n].Score < margin {
			n++
		}
		r.Ambiguous, r.Contenders = true, matches[:n]
	}
	return r
}
