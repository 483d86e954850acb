package memory

import (
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/strata-go/strata/internal/backoff"
)

// cooldowns remembers, per session, when folding may be tried again after
// consecutive failures (exponential backoff). Bounded, so sessions that fail
// once and go quiet do not accumulate.
type cooldowns struct {
	base, max time.Duration
	now       func() time.Time
	mu        sync.Mutex
	entries   *lru.Cache[string, cooldown]
}

type cooldown struct {
	failures int
	until    time.Time
}

const maxCooldownEntries = 10_000

func newCooldowns(base, maxDelay time.Duration, now func() time.Time) *cooldowns {
	c, _ := lru.New[string, cooldown](maxCooldownEntries) // only fails for size <= 0
	return &cooldowns{base: base, max: maxDelay, now: now, entries: c}
}

// ready reports whether the session may be folded now.
func (c *cooldowns) ready(sessionID string) bool {
	if c.base <= 0 {
		return true
	}
	e, ok := c.entries.Peek(sessionID)
	return !ok || !c.now().Before(e.until)
}

// fail records a failed fold and pushes the next try back.
func (c *cooldowns) fail(sessionID string) {
	if c.base <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, _ := c.entries.Get(sessionID)
	e.failures++
	e.until = c.now().Add(backoff.Delay(c.base, c.max, e.failures))
	c.entries.Add(sessionID, e)
}

// succeed clears the session's backoff.
func (c *cooldowns) succeed(sessionID string) { c.entries.Remove(sessionID) }
