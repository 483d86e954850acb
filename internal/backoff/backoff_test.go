package backoff

import (
	"reflect"
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, c := range []struct {
		base, ceiling time.Duration
		n             int
		want          time.Duration
	}{
		{100 * ms, time.Second, 0, 100 * ms},
		{100 * ms, time.Second, 1, 100 * ms},
		{100 * ms, time.Second, 2, 200 * ms},
		{100 * ms, time.Second, 4, 800 * ms},
		{100 * ms, time.Second, 5, time.Second},
		{100 * ms, time.Second, 1 << 30, time.Second},  // never overflows
		{3 * time.Second, time.Second, 1, time.Second}, // a base above the ceiling is capped
		{0, time.Second, 3, 0},
		{-ms, time.Second, 3, 0},
	} {
		if got := Delay(c.base, c.ceiling, c.n); got != c.want {
			t.Errorf("Delay(%v, %v, %d) = %v, want %v", c.base, c.ceiling, c.n, got, c.want)
		}
	}
}

func TestExp(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	b := Exp{Base: 20 * ms, Ceiling: 100 * ms}
	var got []time.Duration
	for range 7 {
		got = append(got, b.Next())
	}
	want := []time.Duration{20 * ms, 40 * ms, 80 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Next = %v, want %v", got, want)
	}
	var zero Exp
	if d := zero.Next(); d != 0 {
		t.Fatalf("zero Exp waits %v", d)
	}
}
