package trimmer

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/strata-go/strata/internal/text"
)

// Estimator turns a text into a token count. Implementations must be pure
// (the same text always gives the same count), must not return negative
// numbers, and must be safe for concurrent use when the Trimmer that holds
// them is shared.
type Estimator interface {
	Estimate(text string) int
}

// EstimatorFunc adapts a plain function to the Estimator interface, e.g.
// EstimatorFunc(func(s string) int { return len(s) / 4 }).
type EstimatorFunc func(string) int

// Estimate calls f(text).
func (f EstimatorFunc) Estimate(text string) int { return f(text) }

// Cache limits of the memoising estimator: bounded, so a long-running process
// that prices many distinct texts keeps a fixed memory footprint.
const (
	// EstimatorCacheSize is the number of texts a cached estimator remembers.
	EstimatorCacheSize = 50_000
	// EstimatorCacheTTL is how long an entry survives without being read.
	EstimatorCacheTTL = 5 * time.Minute
)

// EstimateScript is the uncached script-aware estimate behind NewEstimator:
// ⌊latin/4⌋ + ⌊(2·cjk+1)/3⌋ + emoji + ⌊other/3⌋, at least 1 for a non-empty
// text and 0 for "", counting code points. Latin is U+0000–U+007F. CJK is
// Han (unified, extensions A and B+, compatibility), Hiragana, Katakana,
// Hangul (syllables and all Jamo blocks), CJK symbols and punctuation, and
// half/full-width forms. Emoji is U+1F300–U+1FAFF, U+2600–U+27BF and
// U+FE00–U+FE0F. Everything else, invalid UTF-8 included, is "other".
// The classes are internal/text's (text.Class), which the budget's
// calibration shares.
func EstimateScript(s string) int {
	if s == "" {
		return 0
	}
	var t text.Tally
	t.Add(s)
	c := t.Chars
	var latin, cjk int
	for cl, n := range c {
		switch cl := text.Class(cl); {
		case cl.ASCII():
			latin += n
		case cl.CJK():
			cjk += n
		}
	}
	emoji, other := c[text.ClassEmoji], c[text.ClassOther]
	return max(1, latin/4+(2*cjk+1)/3+emoji+other/3)
}

// NewEstimator returns the default estimator: EstimateScript memoised in a
// bounded cache (EstimatorCacheSize entries, each dropped after
// EstimatorCacheTTL without a read). It is safe for concurrent use; share
// one instance to share its cache.
func NewEstimator() Estimator {
	return NewCachedEstimator(EstimatorFunc(EstimateScript))
}

// NewCachedEstimator memoises est in a bounded, goroutine-safe cache with the
// same limits as NewEstimator. est must be pure. The empty text is passed
// straight to est and never cached. An estimator that is already cached is
// returned as is.
func NewCachedEstimator(est Estimator) Estimator {
	if c, ok := est.(*cachedEstimator); ok {
		return c
	}
	return newCachedEstimator(est, EstimatorCacheSize, EstimatorCacheTTL, time.Now)
}

// cachedEstimator is a sharded LRU with an idle timeout. It does not use
// golang-lru's expirable cache on purpose: that one starts a goroutine per
// cache that can never be stopped, which leaks every cache ever built and
// trips goroutine-leak checks in callers' tests. Expiry is applied lazily
// instead: a stale entry is a miss, and each insert first drops stale entries
// from the cold end of its shard (entries sit in last-access order, so the
// stale ones are all there).
//
// A text is keyed by two independently seeded 64-bit hashes of it rather
// than by the text itself: the key is small and cheap to compare, the cache
// pins no caller's string, and two texts share a key with probability about
// 2^-128 per pair (the seeds are random per cache, so inputs cannot be
// crafted to collide). Many loads price their windows at once through one
// manager's estimator, so the cache is split into shards by key, each with
// its own lock; recency is then kept per shard.
type cachedEstimator struct {
	est    Estimator
	ttl    time.Duration
	now    func() time.Time
	seeds  [2]maphash.Seed
	shards []cacheShard
}

type cacheShard struct {
	mu  sync.Mutex
	lru *simplelru.LRU[cacheKey, *cacheEntry]
}

type cacheKey [2]uint64

type cacheEntry struct {
	tokens   int
	deadline time.Time
}

// cacheShards is the number of shards of a cache of at least
// minShardedSize entries; smaller caches are one exact LRU.
const (
	cacheShards    = 16
	minShardedSize = 1_024
)

func newCachedEstimator(est Estimator, size int, ttl time.Duration, now func() time.Time) *cachedEstimator {
	n := 1
	if size >= minShardedSize {
		n = cacheShards
	}
	c := &cachedEstimator{est: est, ttl: ttl, now: now, seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, shards: make([]cacheShard, n)}
	for i := range c.shards {
		lru, err := simplelru.NewLRU[cacheKey, *cacheEntry](size/n, nil)
		if err != nil {
			panic("trimmer: invalid estimator cache size") // unreachable: sizes are constants > 0
		}
		c.shards[i].lru = lru
	}
	return c
}

// Estimate returns the memoised count, computing it outside the lock on a
// miss (two goroutines may both compute the same text; both get the same
// answer because est is pure).
func (c *cachedEstimator) Estimate(text string) int {
	if text == "" {
		return c.est.Estimate(text)
	}
	key := c.keyFor(text)
	sh := &c.shards[key[0]%uint64(len(c.shards))]
	if n, ok := sh.lookup(key, c.now(), c.ttl); ok {
		return n
	}
	n := c.est.Estimate(text)
	sh.store(key, n, c.now(), c.ttl)
	return n
}

func (c *cachedEstimator) keyFor(text string) cacheKey {
	return cacheKey{maphash.String(c.seeds[0], text), maphash.String(c.seeds[1], text)}
}

func (sh *cacheShard) lookup(key cacheKey, now time.Time, ttl time.Duration) (int, bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.lru.Get(key)
	if !ok {
		return 0, false
	}
	if now.After(e.deadline) {
		sh.lru.Remove(key)
		return 0, false
	}
	e.deadline = now.Add(ttl)
	return e.tokens, true
}

func (sh *cacheShard) store(key cacheKey, tokens int, now time.Time, ttl time.Duration) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.dropExpired(now)
	sh.lru.Add(key, &cacheEntry{tokens: tokens, deadline: now.Add(ttl)})
}

// dropExpired removes stale entries from the least recently used end.
func (sh *cacheShard) dropExpired(now time.Time) {
	for {
		_, e, ok := sh.lru.GetOldest()
		if !ok || !now.After(e.deadline) {
			return
		}
		sh.lru.RemoveOldest()
	}
}

// len reports the number of cached entries (tests only).
func (c *cachedEstimator) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += sh.lru.Len()
		sh.mu.Unlock()
	}
	return n
}
