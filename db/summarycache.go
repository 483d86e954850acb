package db

import (
	"sync"
	"time"

	"github.com/strata-go/strata/summary"
)

// DefaultSummaryCacheSessions is how many sessions' decoded summaries a
// MessageStore keeps by default (see WithSummaryCache).
const DefaultSummaryCacheSessions = 1024

// summaryCache keeps the decoded summaries the load path (Snapshot) read
// last, one per session, at most max sessions; beyond that an arbitrary
// entry makes room. A load passes the stored summary's identity (epoch,
// version, updated_at) it holds to its statement, which then returns the
// summary's columns only when the stored one differs: an unchanged summary
// is neither sent again nor decoded again.
//
// The identity is safe against reuse: within an epoch every save raises
// version, and a summary deleted and saved again restarts at version 1 with
// a new updated_at (the saving transaction's start), so two different
// summaries of a session never share all three.
type summaryCache struct {
	max int
	mu  sync.Mutex
	m   map[string]*cachedSummary
}

// cachedSummary is one decoded summary; it is never modified once cached.
type cachedSummary struct {
	epoch, version int64
	updatedAt      time.Time
	narrative      string
	ledger         ledger
}

// is reports whether cs (nil: none) is the summary id names.
func (cs *cachedSummary) is(id summaryIdent) bool {
	return cs != nil && id.ok && cs.epoch == id.epoch && cs.version == id.version && cs.updatedAt.Equal(id.updatedAt)
}

// summary is the summary of session cs holds, stored as id says (its
// cursor, epoch, version and times).
func (cs *cachedSummary) summary(session string, id summaryIdent) *summary.Summary {
	sm := &summary.Summary{
		SessionID: session,
		Narrative: cs.narrative,
		UpToSeq:   id.upTo,
		Epoch:     id.epoch,
		Version:   id.version,
		CreatedAt: keptTime(id.createdAt),
		UpdatedAt: keptTime(id.updatedAt),
	}
	cs.ledger.fill(sm)
	return sm
}

func newSummaryCache(max int) *summaryCache {
	return &summaryCache{max: max, m: map[string]*cachedSummary{}}
}

// get returns the cached summary of session, or nil.
func (c *summaryCache) get(session string) *cachedSummary {
	if c.max <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[session]
}

// put caches cs as session's summary.
func (c *summaryCache) put(session string, cs *cachedSummary) {
	if c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[session]; !ok && len(c.m) >= c.max {
		for k := range c.m { // an arbitrary entry
			delete(c.m, k)
			break
		}
	}
	c.m[session] = cs
}

// drop forgets session's summary.
func (c *summaryCache) drop(session string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, session)
}
