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
	// sents memoises a message's narrative sentences with their scores:
	// a parity fold re-reads the whole transcript, and scoring its
	// sentences again on every fold was most of the summarizer's work.
	sents *simplelru.LRU[sentKey, []scoredSentence]
}

type sentKey struct {
	who string
	sum [sha256.Size]byte
}

// scoredSentence is one narrative sentence of a message and its score.
type scoredSentence struct {
	text  string
	score int
}

type scanKey struct {
	role llms.ChatMessageType
	sum  [sha256.Size]byte
}

func newScanMemo(size int) *scanMemo {
	lru, _ := simplelru.NewLRU[scanKey, []finding](size, nil) // fails only for size <= 0
	sents, _ := simplelru.NewLRU[sentKey, []scoredSentence](size, nil)
	return &scanMemo{lru: lru, sents: sents}
}

// sentences returns the narrative sentences of a message said by who
// ("User" or "Assistant") with their scores, memoised. Callers never
// mutate the result, so cached slices are shared.
func (c *scanMemo) sentences(content, who string) []scoredSentence {
	key := sentKey{who: who, sum: sha256.Sum256([]byte(content))}
	c.mu.Lock()
	out, ok := c.sents.Get(key)
	c.mu.Unlock()
	if ok {
		return out
	}
	for _, s := range messageSentences(content) {
		out = append(out, scoredSentence{text: s, score: scoreSentence(s, who, c.scan)})
	}
	c.mu.Lock()
	c.sents.Add(key, out)
	c.mu.Unlock()
	return out
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
