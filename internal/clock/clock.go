// Package clock is the time source Strata's background machinery waits on:
// Real reads the system clock and arms real timers; Fake is moved by hand, so
// that tests of grace waits, cool-downs, fold waits and settle delays run in
// virtual time instead of sleeping.
package clock

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Clock tells the time and arms timers.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that fires once d has passed.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer, as time.Timer.
type Timer interface {
	// C delivers the time once the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
}

// Real is the system clock.
type Real struct{}

// Now implements Clock.
func (Real) Now() time.Time { return time.Now() }

// NewTimer implements Clock.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// Fake is a clock that moves only when Advance or Set moves it. Its timers
// fire when the clock reaches their deadline. The zero value is not usable:
// create one with NewFake.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	armed  chan struct{} // closed and replaced whenever a timer is armed
}

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake { return &Fake{now: start, armed: make(chan struct{})} }

// Now implements Clock.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer implements Clock. A timer of d <= 0 fires at once.
func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{f: f, at: f.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- f.now
		return t
	}
	f.timers = append(f.timers, t)
	close(f.armed)
	f.armed = make(chan struct{})
	return t
}

// Advance moves the clock forward by d, firing the timers it passes in
// deadline order.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	to := f.now.Add(d)
	f.mu.Unlock()
	f.Set(to)
}

// Set moves the clock to t (never backwards), firing the timers it passes
// in deadline order.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.Before(f.now) {
		return
	}
	sort.SliceStable(f.timers, func(i, j int) bool { return f.timers[i].at.Before(f.timers[j].at) })
	keep := f.timers[:0]
	for _, tm := range f.timers {
		if tm.at.After(t) {
			keep = append(keep, tm)
			continue
		}
		tm.c <- tm.at
	}
	clear(f.timers[len(keep):])
	f.timers = keep
	f.now = t
}

// AdvanceToNext moves the clock to the earliest armed timer's deadline,
// firing it (and any others due then); it reports false, and leaves the
// clock alone, when no timer is armed.
func (f *Fake) AdvanceToNext() bool {
	f.mu.Lock()
	if len(f.timers) == 0 {
		f.mu.Unlock()
		return false
	}
	next := f.timers[0].at
	for _, t := range f.timers[1:] {
		if t.at.Before(next) {
			next = t.at
		}
	}
	f.mu.Unlock()
	f.Set(next)
	return true
}

// Pending returns how many timers are armed and have not fired.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// Armed returns a channel closed the next time a timer is armed, for tests
// that advance the clock once something waits on it.
func (f *Fake) Armed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.armed
}

type fakeTimer struct {
	f  *Fake
	at time.Time
	c  chan time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	for i, tm := range t.f.timers {
		if tm == t {
			t.f.timers = append(t.f.timers[:i], t.f.timers[i+1:]...)
			return true
		}
	}
	return false
}

// WithTimeout is context.WithTimeout on c: the context ends with
// context.DeadlineExceeded once c has moved d past now. On Real it is
// context.WithTimeout itself.
func WithTimeout(parent context.Context, c Clock, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := c.(Real); ok {
		return context.WithTimeout(parent, d)
	}
	inner, cancel := context.WithCancel(parent)
	ctx := &timeoutCtx{Context: inner}
	t := c.NewTimer(d)
	stop := make(chan struct{})
	go func() {
		select {
		case <-t.C():
			ctx.fired.Store(true)
			cancel()
		case <-stop:
		case <-inner.Done():
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() { close(stop); t.Stop(); cancel() })
	}
}

// timeoutCtx reports context.DeadlineExceeded once its clock timer fired.
type timeoutCtx struct {
	context.Context
	fired atomic.Bool
}

func (c *timeoutCtx) Err() error {
	err := c.Context.Err()
	if err != nil && c.fired.Load() {
		return context.DeadlineExceeded
	}
	return err
}
