package db

import (
	"math"
	"sync"

	"github.com/strata-go/strata/memory/store"
)

// DefaultTailCacheSessions is how many sessions' tails a MessageStore
// keeps by default (see WithTailCache).
const DefaultTailCacheSessions = 1024

// DefaultTailCacheBytes bounds by default the size of the tails a
// MessageStore keeps, all sessions together (see WithTailCache): 32 MiB,
// counted as the messages' text and JSON columns plus a fixed overhead per
// message.
const DefaultTailCacheBytes = 32 << 20

// tailEntryOverhead is what a cached message is counted for beside its
// text and JSON columns (its struct, slice slot and time).
const tailEntryOverhead = 160

// tailAll is the limit of a cached tail that holds every message after its
// cursor (the read returned fewer than it asked for).
const tailAll = math.MaxInt32

// tailCache keeps the tail the load path read last for each session, at
// most max sessions and maxBytes in all; beyond either an arbitrary entry
// makes room, and a tail larger than maxBytes alone is not kept. A load
// passes the stamp of the tail it holds (cachedTail) to its statement
// (loadSQL), which compares it with the session's under the one snapshot
// of its read and then sends only the messages after the held ones, none
// when nothing was stored since: a session's stamp changes whenever its
// stored messages do (see cachedTail), so a stamp that still matches
// proves the held messages are the stored ones. Nothing here is trusted
// without that check: an entry is only ever a candidate the database
// confirms or replaces in the same statement.
type tailCache struct {
	max      int
	maxBytes int64
	mu       sync.Mutex
	m        map[string]*cachedTail
	bytes    int64
}

// cachedTail is the tail of one session as one load read it, with the
// stamp the database checks. It is never modified once cached.
//
// The stamp is the session's epoch (a replace or the revival of a deleted
// session draws a new one), its seq counter (every append and import
// raises it, under the session row's lock, and seqs are assigned from it
// in commit order) and its erasures (every Forget, and every rewrite of
// stored messages, raises it). after is the cursor the messages were read
// after (the summary's, or 0) and limit how many of the newest messages
// after it they are, tailAll when they are all of them.
type cachedTail struct {
	epoch, counter, erasures, after int64
	limit                           int64
	msgs                            []store.Message // oldest first
	size                            int64
}

func newTailCache(max int, maxBytes int64) *tailCache {
	return &tailCache{max: max, maxBytes: maxBytes, m: map[string]*cachedTail{}}
}

// get returns the cached tail of session, or nil.
func (c *tailCache) get(session string) *cachedTail {
	if c.max <= 0 || c.maxBytes <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[session]
}

// put caches t as session's tail (a tail too large for the cache drops
// the session's entry instead).
func (c *tailCache) put(session string, t *cachedTail) {
	if c.max <= 0 || c.maxBytes <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[session]; ok {
		c.bytes -= old.size
		delete(c.m, session)
	}
	if t.size > c.maxBytes {
		return
	}
	for k, v := range c.m { // arbitrary entries
		if len(c.m) < c.max && c.bytes+t.size <= c.maxBytes {
			break
		}
		c.bytes -= v.size
		delete(c.m, k)
	}
	c.m[session] = t
	c.bytes += t.size
}

// drop forgets session's tail.
func (c *tailCache) drop(session string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[session]; ok {
		c.bytes -= old.size
		delete(c.m, session)
	}
}

// usage returns the number of cached tails and their counted size.
func (c *tailCache) usage() (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m), c.bytes
}

// messageSize is what m is counted for in a tailCache.
func messageSize(m *store.Message) int64 {
	n := tailEntryOverhead + len(m.Content) + len(m.ToolCallID) + len(m.Name) + len(m.UserID)
	for _, tc := range m.ToolCalls {
		n += 64 + len(tc.ID) + len(tc.Type)
		if tc.FunctionCall != nil {
			n += len(tc.FunctionCall.Name) + len(tc.FunctionCall.Arguments)
		}
	}
	for k, v := range m.Metadata {
		n += 32 + len(k) + len(v)
	}
	return int64(n)
}

// newest returns the newest n of t's messages with a seq above after,
// shared with the cache: they are not to be changed or handed out.
func (t *cachedTail) newest(after int64, n int) []store.Message {
	i := len(t.msgs)
	for i > 0 && len(t.msgs)-i < n && t.msgs[i-1].Seq > after {
		i--
	}
	return t.msgs[i:]
}

// newCachedTail is the cache entry of a tail read with stamp (epoch,
// counter, erasures) after the cursor after, asking for n messages: msgs,
// oldest first, which it keeps (the caller no longer changes or hands
// them out).
func newCachedTail(msgs []store.Message, epoch, counter, erasures, after int64, n int) *cachedTail {
	t := &cachedTail{epoch: epoch, counter: counter, erasures: erasures, after: after, limit: int64(n), msgs: msgs}
	if len(msgs) < n {
		t.limit = tailAll
	}
	for i := range msgs {
		t.size += messageSize(&msgs[i])
	}
	return t
}
