package catalog

import (
	"context"
	"fmt"
	"strings"
)

// Match is one conversation found by Search.
type Match struct {
	SessionID string
	Title     string
	// Score is Weight × Similarity + (1 − Weight) × Recency (see Ranking).
	Score float64
	// Similarity is the cosine similarity between the query's embedding and
	// the session's.
	Similarity float64
	// Recency is 1 for a session active just now, halving every half-life.
	Recency float64
	// Text is the exact text the session's embedding was computed from:
	// what the match is based on, to show or to explain it.
	Text string
}

// Search ranks userID's conversations by how well their documents match
// query, combined with how recently they were active, and returns at most
// limit matches (DefaultSearchLimit when limit <= 0) with a similarity of at
// least the minimum (WithMinSimilarity), best first. Only the user's own
// sessions are returned: every match's owner is checked against the message
// store. Use Decide (or Catalog.Decide) to tell one clear winner from a
// choice to put to the user.
//
// With the default embedder the match is lexical: a conversation is found
// through the words it shares with the query. Its candidates are re-scored
// exactly from their stored texts (TextScorer), so Similarity is the cosine
// of the bags of words, not of their hashed vectors.
func (c *Catalog) Search(ctx context.Context, userID, query string, limit int) ([]Match, error) {
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	query = strings.TrimSpace(query)
	if query == "" || c.emb == nil {
		return nil, nil
	}
	vec, err := c.embedQuery(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("catalog: search: embed query: %w", err)
	}
	if vec == nil {
		return nil, nil // a query without content words (lexical embedder)
	}
	rank := Ranking{Weight: c.weight, HalfLife: c.halfLife, Now: c.now()}
	q := Query{
		UserID: userID, Vector: vec, Model: c.model, Limit: limit + 4,
		MinSimilarity: c.minSim, Ranking: rank,
	}
	scorer, exact := c.emb.(TextScorer)
	if exact {
		// Re-scored from the texts below: take a wider, unfloored pool.
		q.Limit, q.MinSimilarity = max(4*limit, 20), -1
	}
	res, err := c.idx.Search(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("catalog: search: %w", err)
	}
	if exact {
		kept := res[:0]
		for _, r := range res {
			r.Similarity = scorer.Similarity(query, r.Doc.Text)
			if r.Similarity < c.minSim {
				continue
			}
			r.Score, r.Recency = rank.Score(r.Similarity, r.Doc.LastActivity)
			kept = append(kept, r)
		}
		res = kept
		SortScored(res)
	}
	out := make([]Match, 0, min(limit, len(res)))
	for _, r := range res {
		if len(out) == limit {
			break
		}
		owner, err := c.store.Owner(ctx, r.Doc.SessionID)
		if err != nil {
			return nil, fmt.Errorf("catalog: search: owner of %q: %w", r.Doc.SessionID, err)
		}
		if owner != userID {
			if owner == "" { // deleted: its document is left over
				_ = c.idx.Delete(ctx, r.Doc.SessionID)
			}
			continue
		}
		out = append(out, Match{
			SessionID: r.Doc.SessionID, Title: r.Doc.Title, Text: r.Doc.Text,
			Score: r.Score, Similarity: r.Similarity, Recency: r.Recency,
		})
	}
	return out, nil
}

// Decide applies the catalog's margin (WithMargin) to Search's matches; see
// the package function Decide.
func (c *Catalog) Decide(matches []Match) (winner *Match, ambiguous bool) {
	return Decide(matches, c.margin)
}

// Decide tells what to do with matches sorted best first (as Search returns
// them):
//
//   - no match: nil, false — nothing found;
//   - one match, or a best score that beats the second by at least margin:
//     the winner, false — switch to it;
//   - otherwise: nil, true — ask the user to choose among the matches
//     (Contenders tells which ones are close enough to offer).
func Decide(matches []Match, margin float64) (winner *Match, ambiguous bool) {
	switch {
	case len(matches) == 0:
		return nil, false
	case len(matches) == 1 || matches[0].Score-matches[1].Score >= margin:
		w := matches[0]
		return &w, false
	}
	return nil, true
}

// Contenders returns the leading matches whose score is within margin of
// the best one: the options to offer when Decide finds no clear winner.
func Contenders(matches []Match, margin float64) []Match {
	if len(matches) == 0 {
		return nil
	}
	n := 1
	for n < len(matches) && matches[0].Score-matches[n].Score < margin {
		n++
	}
	return matches[:n]
}
