package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

func fired(t Timer) bool {
	select {
	case <-t.C():
		return true
	default:
		return false
	}
}

func TestFakeTimersFireWhenTheClockReachesThem(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(start)
	a, b, stopped := f.NewTimer(time.Second), f.NewTimer(time.Minute), f.NewTimer(time.Second)
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop reports whether it stopped the timer")
	}
	if f.Pending() != 2 {
		t.Fatalf("pending = %d, want 2", f.Pending())
	}
	f.Advance(999 * time.Millisecond)
	if fired(a) || fired(b) {
		t.Fatal("a timer fired before its deadline")
	}
	f.Advance(time.Millisecond)
	if !fired(a) || fired(b) || fired(stopped) {
		t.Fatal("after 1s: want only the 1s timer fired")
	}
	if !f.AdvanceToNext() || !fired(b) || !f.Now().Equal(start.Add(time.Minute)) {
		t.Fatalf("AdvanceToNext: now %s", f.Now())
	}
	if f.AdvanceToNext() {
		t.Fatal("AdvanceToNext with no timer armed moved the clock")
	}
	if !fired(f.NewTimer(0)) {
		t.Fatal("a zero timer fires at once")
	}
}

func TestWithTimeoutOnFakeClock(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	armed := f.Armed()
	ctx, cancel := WithTimeout(context.Background(), f, time.Second)
	defer cancel()
	<-armed
	if ctx.Err() != nil {
		t.Fatal("ended before the clock moved")
	}
	f.Advance(time.Second)
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", ctx.Err())
	}
	ctx2, cancel2 := WithTimeout(context.Background(), f, time.Second)
	cancel2()
	if !errors.Is(ctx2.Err(), context.Canceled) {
		t.Fatalf("cancelled: err = %v", ctx2.Err())
	}
}
