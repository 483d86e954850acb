package summary

import (
	"crypto/sha256"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/tmc/langchaingo/llms"
)

// scanMemoSize bounds the extractive summarizer's memo of scanned messages.
const scanMemoSize = 20_000

// scanMemo is a bounded, goroutine-safe memo of scan results keyed by role
// and a hash of the text.
type scanMemo struct {
	mu  sync.Mutex
	lru *simplelru.LRU[scanKey, []finding]
}

type scanKey struct {
	role llms.ChatMessageType
	sum  [sha256.Size]byte
}

func newScanMemo(size int) *scanMemo {
	lru, _ := simplelru.NewLRU[scanKey, []finding](size, nil) // fails only for size <= 0
	return &scanMemo{lru: lru}
}

// scan returns scan(text, role), memoised. Findings are never mutated by
// callers, so cached slices are shared.
func (c *scanMemo) scan(text string, role llms.ChatMessageType) []finding {
	key := scanKey{role: role, sum: sha256.Sum256([]byte(text))}
	c.mu.Lock()
	f, ok := c.lru.Get(key)
	c.mu.Unlock()
	if ok {
		return f
	}
	f = scan(text, role)
	c.mu.Lock()
	c.lru.Add(key, f)
	c.mu.Unlock()
	return f
}
