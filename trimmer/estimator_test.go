package trimmer

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestEstimateScript(t *testing.T) {
	tests := []struct {
		name string
		text string
		want int
	}{
		{"empty", "", 0},
		{"one latin char is at least 1", "a", 1},
		{"latin /4", "abcdefgh", 2},
		{"latin rounds down", "abcdefghijk", 2},
		{"100 latin chars", strings.Repeat("a", 100), 25},
		{"CJK 2/3 rounded", "你好世界", 3}, // (2·4+1)/3
		{"one CJK char", "你", 1},
		{"30 CJK chars", strings.Repeat("漢", 30), 20},
		{"hiragana", "ひらがな", 3},
		{"katakana", "カタカナ", 3},
		{"hangul syllables", "안녕하세요", 3}, // (2·5+1)/3
		{"emoji one each", "😀🚀🎉", 3},
		{"dingbats are emoji", "☀✂", 2},
		{"variation selector is emoji", "\uFE0F", 1},
		{"other /3", "привет", 2},
		{"latin-1 accents are other", "éèêàùç", 2},
		{"mixed sums the classes", "hello 世界 😀", 1 + 1 + 1},  // latin 7/4, cjk (2·2+1)/3, emoji 1
		{"mixed with other", "abcd ДОМ 日本 👍", 1 + 1 + 1 + 1}, // latin 7/4, other 3/3, cjk 5/3, emoji
		{"invalid UTF-8 counts as other", "\xff\xfe\xfd", 1},
		{"zero-width joiner is other", "\u200d\u200d\u200d", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := EstimateScript(tc.text); got != tc.want {
				t.Fatalf("EstimateScript(%q) = %d, want %d", tc.text, got, tc.want)
			}
		})
	}
}

// The blocks arc-reactor counted as "other" (1/3 token) now count as CJK
// (2/3): three characters give 2 tokens instead of 1.
func TestEstimateScriptExtendedCJK(t *testing.T) {
	ranges := []struct {
		name   string
		lo, hi rune
	}{
		{"CJK extension A", 0x3400, 0x4DBF},
		{"Hangul Jamo", 0x1100, 0x11FF},
		{"Hangul compatibility Jamo", 0x3130, 0x318F},
		{"Hangul Jamo extended-A", 0xA960, 0xA97F},
		{"Hangul Jamo extended-B", 0xD7B0, 0xD7FF},
		{"CJK compatibility ideographs", 0xF900, 0xFAFF},
		{"CJK symbols and punctuation", 0x3000, 0x303F},
		{"CJK extension B and later", 0x20000, 0x2FA1F},
		{"half-width and full-width forms", 0xFF00, 0xFFEF},
	}
	for _, r := range ranges {
		t.Run(r.name, func(t *testing.T) {
			for _, c := range []rune{r.lo, (r.lo + r.hi) / 2, r.hi} {
				text := strings.Repeat(string(c), 3)
				if got := EstimateScript(text); got != 2 {
					t.Errorf("EstimateScript(3 × U+%04X) = %d, want 2", c, got)
				}
			}
			// Just outside the block the class changes (unless a
			// neighbouring CJK block starts there).
			for _, c := range []rune{r.lo - 1, r.hi + 1} {
				if !cjkOrEmoji(c) && EstimateScript(strings.Repeat(string(c), 3)) != 1 {
					t.Errorf("U+%04X outside the CJK class counted as CJK", c)
				}
			}
		})
	}
}

func cjkOrEmoji(r rune) bool {
	s := string(r)
	return EstimateScript(s+s+s) != 1
}

func TestCachedEstimatorMatchesUncached(t *testing.T) {
	est := NewEstimator()
	texts := []string{
		"", "a", "hello world", "你好世界", "😀", "hello 世界 😀 привет",
		strings.Repeat("a", 100),
		strings.Repeat("b", 2000),  // longest inline key
		strings.Repeat("c", 2001),  // first hashed key
		strings.Repeat("d", 50000), // large
		strings.Repeat("漢", 2000),  // 6000 bytes: hashed
		strings.Repeat("é", 1000),  // exactly 2000 bytes
	}
	for _, text := range texts {
		want := EstimateScript(text)
		for i := range 3 { // miss, then hits
			if got := est.Estimate(text); got != want {
				t.Fatalf("call %d: Estimate(%d bytes) = %d, want %d", i, len(text), got, want)
			}
		}
	}
	if got := est.Estimate(""); got != 0 {
		t.Fatalf(`Estimate("") = %d`, got)
	}
	if n := est.(*cachedEstimator).len(); n != len(texts)-1 {
		t.Fatalf("cache holds %d entries, want %d (empty text is not cached)", n, len(texts)-1)
	}
}

// Texts that differ in one byte, or only in length, get their own entries,
// and a long text is cached like a short one.
func TestCachedEstimatorKeysDoNotCollide(t *testing.T) {
	c := newCachedEstimator(EstimatorFunc(func(s string) int { return len(s) }), 100, time.Hour, time.Now)
	long := strings.Repeat("x", 3000)
	texts := []string{long, long[:2999], long[:2999] + "y", "a", "aa", "b"}
	for _, text := range texts {
		if got := c.Estimate(text); got != len(text) {
			t.Fatalf("Estimate(%d bytes) = %d", len(text), got)
		}
	}
	for _, text := range texts { // hits
		if got := c.Estimate(text); got != len(text) {
			t.Fatalf("cached Estimate(%d bytes) = %d", len(text), got)
		}
	}
	if n := c.len(); n != len(texts) {
		t.Fatalf("cache holds %d entries, want %d", n, len(texts))
	}
}

type countingEstimator struct{ calls atomic.Int64 }

func (c *countingEstimator) Estimate(s string) int { c.calls.Add(1); return len(s) }

func TestCachedEstimatorIdleExpiry(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(0, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	inner := &countingEstimator{}
	c := newCachedEstimator(inner, 10, time.Minute, clock)
	c.Estimate("a")
	advance(50 * time.Second)
	c.Estimate("a") // hit: refreshes the idle timer
	advance(50 * time.Second)
	c.Estimate("a") // still a hit: 50 s idle
	if got := inner.calls.Load(); got != 1 {
		t.Fatalf("estimated %d times, want 1", got)
	}
	advance(61 * time.Second)
	c.Estimate("a") // expired: recomputed
	if got := inner.calls.Load(); got != 2 {
		t.Fatalf("estimated %d times after expiry, want 2", got)
	}

	// Stale entries are swept from the cold end on insert.
	c.Estimate("b")
	advance(2 * time.Minute)
	c.Estimate("c")
	if n := c.len(); n != 1 {
		t.Fatalf("cache holds %d entries after expiry sweep, want 1", n)
	}
}

func TestCachedEstimatorBounded(t *testing.T) {
	c := newCachedEstimator(&countingEstimator{}, 100, time.Hour, time.Now)
	for i := range 1000 {
		c.Estimate(fmt.Sprint("text ", i))
	}
	if n := c.len(); n != 100 {
		t.Fatalf("cache holds %d entries, want 100", n)
	}
}

func TestNewCachedEstimatorDoesNotDoubleWrap(t *testing.T) {
	est := NewEstimator()
	if NewCachedEstimator(est) != est {
		t.Fatal("an already cached estimator was wrapped again")
	}
	inner := &countingEstimator{}
	c := NewCachedEstimator(inner)
	c.Estimate("abc")
	c.Estimate("abc")
	if got := c.Estimate(""); got != 0 {
		t.Fatalf(`Estimate("") = %d`, got)
	}
	if got := inner.calls.Load(); got != 2 { // "abc" once, "" passed through
		t.Fatalf("inner called %d times, want 2", got)
	}
}

func TestCachedEstimatorConcurrent(t *testing.T) {
	est := newCachedEstimator(EstimatorFunc(EstimateScript), 64, time.Minute, time.Now)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				text := fmt.Sprintf("%d 世界 %s", (i+g)%200, strings.Repeat("x", i%7*500))
				if got, want := est.Estimate(text), EstimateScript(text); got != want {
					t.Errorf("Estimate = %d, want %d", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestEstimatorFunc(t *testing.T) {
	var e Estimator = EstimatorFunc(func(s string) int { return len(s) / 2 })
	if got := e.Estimate("abcd"); got != 2 {
		t.Fatalf("Estimate = %d", got)
	}
}
