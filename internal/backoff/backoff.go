// Package backoff is Strata's one exponential backoff: a delay that starts
// at a base and doubles up to a ceiling, without jitter, so that a fake
// clock in tests sees the same waits every run. Fold locks, fold
// cool-downs and lease releases all wait by it.
package backoff

import (
	"time"
)

// Delay is the delay after n consecutive failures (n >= 1): base doubled
// n-1 times, at most ceiling. n < 1 reads as 1; a base <= 0 gives 0.
func Delay(base, ceiling time.Duration, n int) time.Duration {
	if base <= 0 {
		return 0
	}
	d := base
	for i := 1; i < n && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}

// Exp is an exponential backoff in progress: each Next is the delay
// before the next retry, Base first, then each twice the one before, at
// most Ceiling. The zero value waits 0.
type Exp struct {
	// Base is the first delay.
	Base time.Duration
	// Ceiling bounds every delay.
	Ceiling time.Duration
	n       int
}

// Next returns the delay before the next retry and counts it.
func (b *Exp) Next() time.Duration {
	d := Delay(b.Base, b.Ceiling, b.n+1)
	if d < b.Ceiling {
		b.n++ // past the ceiling the count stops growing
	}
	return d
}
