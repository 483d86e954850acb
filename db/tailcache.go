package db

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

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
//
// The stamp also covers the session's summary: writes is the session's
// summary_writes (every save or delete of the summary alone raises it;
// the summary's other writers change the epoch or the erasures) and sum
// the identity of the summary the same read found, so a session row with
// this stamp proves that summary still stored (see heldSQL).
//
// want is the number of messages the load asked for; a tail an append
// extends (extended) keeps at most that many when it held all of them.
type cachedTail struct {
	epoch, counter, erasures, after int64
	writes                          int64
	sum                             summaryIdent
	limit, want                     int64
	// msgs are the messages, oldest first; their array's capacity past
	// them belongs to the one entry extended from this one (see
	// extended), which grown marks as taken.
	msgs  []store.Message
	size  int64
	grown atomic.Bool
}

// summaryIdent is the identity of a session's stored summary as one read
// found it: none (ok false), or its epoch, version and update time, which
// name one written state of the row (a save raises the version within an
// epoch, a new epoch restarts it), with its cursor and creation time.
type summaryIdent struct {
	ok                   bool
	epoch, version, upTo int64
	createdAt, updatedAt time.Time
}

// identOf is the identity of the summary whose columns a load read (sr;
// none when its cursor is NULL).
func identOf(sr *loadSummaryCols) summaryIdent {
	if !sr.UpToSeq.Valid {
		return summaryIdent{}
	}
	return summaryIdent{ok: true, epoch: sr.Epoch.Int64, version: sr.Version.Int64, upTo: sr.UpToSeq.Int64,
		createdAt: sr.CreatedAt.Time, updatedAt: sr.UpdatedAt.Time}
}

// equal reports whether i and o name the same written summary.
func (i summaryIdent) equal(o summaryIdent) bool {
	return i.ok == o.ok && i.epoch == o.epoch && i.version == o.version && i.upTo == o.upTo &&
		i.createdAt.Equal(o.createdAt) && i.updatedAt.Equal(o.updatedAt)
}

// cursor is the cursor a load reading after the summary uses in a
// session of epoch: the summary's when it belongs to that epoch, else 0.
func (i summaryIdent) cursor(epoch int64) int64 {
	if i.ok && i.epoch == epoch {
		return i.upTo
	}
	return 0
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

// putRead caches t, the tail a load read, as session's tail unless the
// entry held is newer: of the same session incarnation and erasures, with
// a larger counter — an append that committed after the read's snapshot
// extended the entry meanwhile (see MessageStore.extendTail), and
// replacing it with the older read would leave every later append unable
// to extend it and the next load unable to use it.
func (c *tailCache) putRead(session string, t *cachedTail) {
	if c.max <= 0 || c.maxBytes <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[session]; old != nil && old.epoch == t.epoch && old.erasures == t.erasures && old.counter > t.counter {
		return
	}
	c.putLocked(session, t)
}

// putLocked is put with c.mu held.
func (c *tailCache) putLocked(session string, t *cachedTail) {
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

// swap caches t (nil: none) as session's tail only if old is still its entry, and
// reports whether it did: an entry a concurrent load or append replaced
// meanwhile is kept.
func (c *tailCache) swap(session string, old, t *cachedTail) bool {
	if c.max <= 0 || c.maxBytes <= 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[session] != old {
		return false
	}
	if t == nil {
		if old == nil {
			return true
		}
		c.bytes -= old.size
		delete(c.m, session)
		return true
	}
	c.putLocked(session, t)
	return true
}

// heldAfterSave gives session's tail the summary part of the stamp a save
// of its summary left: writes, the session's summary_writes after the
// save, and sum, the summary's identity then, both read under the session
// row's lock the save held, so no other write of the summary comes
// between them. The rest of the tail's stamp (epoch, seq counter,
// erasures) is as true, or as stale, as it was, for the next load to
// check. A tail read after the save (summary_writes not below writes)
// keeps its own.
func (c *tailCache) heldAfterSave(session string, writes int64, sum summaryIdent) {
	if c.max <= 0 || c.maxBytes <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m[session]
	if old == nil || old.writes >= writes {
		return
	}
	c.m[session] = old.restamped(writes, sum)
}

// restamped is t with the summary part of its stamp replaced (writes, sum):
// the same messages, shared, without t's spare capacity, which stays t's
// to give (see extended).
func (t *cachedTail) restamped(writes int64, sum summaryIdent) *cachedTail {
	return &cachedTail{epoch: t.epoch, counter: t.counter, erasures: t.erasures, writes: writes, sum: sum,
		after: t.after, limit: t.limit, want: t.want, msgs: t.msgs[:len(t.msgs):len(t.msgs)], size: t.size}
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
	return t.msgs[i:len(t.msgs):len(t.msgs)]
}

// tailStamp is what a load read of a session's stamp: its epoch, seq
// counter, erasures and summary_writes, and its summary's identity.
type tailStamp struct {
	epoch, counter, erasures, writes int64
	sum                              summaryIdent
}

// newCachedTail is the cache entry of a tail read with stamp st after the
// cursor after, asking for n messages: msgs, oldest first, which it keeps
// (the caller no longer changes or hands them out).
func newCachedTail(msgs []store.Message, st tailStamp, after int64, n int) *cachedTail {
	t := &cachedTail{epoch: st.epoch, counter: st.counter, erasures: st.erasures, writes: st.writes, sum: st.sum,
		after: after, limit: int64(n), want: int64(n), msgs: msgs}
	if len(msgs) < n {
		t.limit = tailAll
	}
	t.count()
	return t
}

// count sets t's size from its messages.
func (t *cachedTail) count() {
	t.size = 0
	for i := range t.msgs {
		t.size += messageSize(&t.msgs[i])
	}
}

// extended is t followed by added, the messages an append stored right
// after t's (their seqs follow t's counter, under t's epoch and erasures),
// as the cache entry of the new counter; nil when added do not follow t.
// It keeps what a tail of t's limit needs: the newest limit messages, or,
// when t held all the messages after its cursor, all of them up to the
// number its load asked for, beyond which it holds the newest that many.
// added are kept as they are (the caller no longer changes them).
//
// An append costs what it adds, not the tail's length: the first
// extension of t writes added into the spare capacity of t's array, after
// t's messages, which no reader of t looks at (t.msgs ends before it), and
// shares the array; only when the array is full, or t was extended before
// (its spare capacity is another entry's), are the kept messages copied
// into a new array with room for as many again. An array so holds at
// most twice the messages its newest entry keeps.
func (t *cachedTail) extended(counter int64, added []store.Message) *cachedTail {
	if len(added) == 0 || counter-int64(len(added)) != t.counter || added[0].Seq != t.counter+1 {
		return nil
	}
	n := &cachedTail{epoch: t.epoch, counter: counter, erasures: t.erasures, writes: t.writes, sum: t.sum,
		after: t.after, limit: t.limit, want: t.want}
	total := len(t.msgs) + len(added)
	keep := int64(total)
	if t.limit != tailAll {
		keep = min(keep, t.limit)
	} else if keep > t.want {
		keep, n.limit = t.want, t.want
	}
	skip := total - int(keep)
	if skip <= len(t.msgs) && cap(t.msgs)-len(t.msgs) >= len(added) && t.grown.CompareAndSwap(false, true) {
		// In place: t's spare capacity is claimed by this extension alone.
		all := append(t.msgs, added...)
		n.msgs = all[skip:]
		n.size = t.size
		for i := range t.msgs[:skip] {
			n.size -= messageSize(&t.msgs[i])
		}
		for i := range added {
			n.size += messageSize(&added[i])
		}
		return n
	}
	n.msgs = make([]store.Message, 0, 2*keep)
	if skip < len(t.msgs) {
		n.msgs = append(n.msgs, t.msgs[max(skip, 0):]...)
	}
	n.msgs = append(n.msgs, added[max(len(added)-int(keep), 0):]...)
	n.count()
	return n
}
