package extractive

import (
	"hash/maphash"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/tmc/langchaingo/llms"
)

// scanMemoSize bounds the extractive summarizer's memo of scanned messages.
const scanMemoSize = 20_000

// scanMemo is a bounded, goroutine-safe memo of scan results keyed by role
// and a hash of the text.
type scanMemo struct {
	// seeds key the memo's hashes of a text (textSum): two maphash seeds,
	// random per memo, so that which texts collide is not fixed in
	// advance (maphash is not a cryptographic hash; SHA-256, which
	// keyed the memo before, costs several times as much per text).
	seeds [2]maphash.Seed
	mu    sync.Mutex
	lru   *simplelru.LRU[scanKey, []finding]
	// sents memoises a message's narrative sentences with their scores:
	// a parity fold re-reads the whole transcript, and scoring its
	// sentences again on every fold was most of the summarizer's work.
	sents *simplelru.LRU[sentKey, []scoredSentence]
	// scores memoises the score of a sentence by its text: an incremental
	// fold scores the carried narrative's sentences, which were scored
	// when their message was folded.
	scores *simplelru.LRU[sentKey, scoredSentence]
}

type sentKey struct {
	who string
	sum textSum
}

// textSum is a 128-bit hash of a text: two 64-bit maphash sums under the
// memo's independent seeds, so two given texts share one with a
// probability of about 2⁻¹²⁸. A memo entry found under a text's sum is
// taken as that text's.
type textSum [2]uint64

// sum is text's textSum under the memo's seeds.
func (c *scanMemo) sum(text string) textSum {
	return textSum{maphash.String(c.seeds[0], text), maphash.String(c.seeds[1], text)}
}

// scoredSentence is one narrative sentence of a message, its score and
// its shape (sentenceShape); aim: said by the user, it states an aim
// (isAim).
type scoredSentence struct {
	text, shape string
	score       int
	aim         bool
}

// scored is text, said by who, with its findings, as a scoredSentence.
func scored(text, who string, found []finding) scoredSentence {
	return scoredSentence{text: text, shape: sentenceShape(text), score: scoreSentence(text, who, found), aim: who == "User" && isAim(text)}
}

type scanKey struct {
	role llms.ChatMessageType
	sum  textSum
}

func newScanMemo(size int) *scanMemo {
	lru, _ := simplelru.NewLRU[scanKey, []finding](size, nil) // fails only for size <= 0
	sents, _ := simplelru.NewLRU[sentKey, []scoredSentence](size, nil)
	scores, _ := simplelru.NewLRU[sentKey, scoredSentence](size, nil)
	return &scanMemo{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, lru: lru, sents: sents, scores: scores}
}

// whoRole is the role of a narrative speaker's messages.
func whoRole(who string) llms.ChatMessageType {
	if who == "User" {
		return llms.ChatMessageTypeHuman
	}
	return llms.ChatMessageTypeAI
}

// sentences returns the narrative sentences of a message said by who
// ("User" or "Assistant") with their scores, memoised. The message is
// scanned once (the scan the facts use, memoised too) and each sentence
// is scored with the findings in its span. Callers never mutate the
// result, so cached slices are shared.
func (c *scanMemo) sentences(content, who string) []scoredSentence {
	key := sentKey{who: who, sum: c.sum(content)}
	c.mu.Lock()
	out, ok := c.sents.Get(key)
	c.mu.Unlock()
	if ok {
		return out
	}
	found := c.scan(content, whoRole(who))
	for _, s := range messageSentences(content) {
		out = append(out, scored(s.text, who, within(found, s.start, s.end)))
	}
	c.mu.Lock()
	c.sents.Add(key, out)
	for _, s := range out {
		c.scores.Add(sentKey{who: who, sum: c.sum(s.text)}, s)
	}
	c.mu.Unlock()
	return out
}

// sentence returns one narrative sentence said by who ("User",
// "Assistant" or "" for a sentence without a speaker) scored: as it was
// in its message when that is remembered, else from a scan of the
// sentence alone.
func (c *scanMemo) sentence(text, who string) scoredSentence {
	key := sentKey{who: who, sum: c.sum(text)}
	c.mu.Lock()
	sc, ok := c.scores.Get(key)
	c.mu.Unlock()
	if ok {
		return sc
	}
	sc = scored(text, who, c.scan(text, whoRole(who)))
	c.mu.Lock()
	c.scores.Add(key, sc)
	c.mu.Unlock()
	return sc
}

// scan returns scan(text, role), memoised. Findings are never mutated by
// callers, so cached slices are shared.
func (c *scanMemo) scan(text string, role llms.ChatMessageType) []finding {
	key := scanKey{role: role, sum: c.sum(text)}
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
