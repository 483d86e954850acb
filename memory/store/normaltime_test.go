package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/strata-go/strata/memory/store"
)

// NormalTime keeps times as both stores do (UTC, cut to the microsecond,
// never rounded into the next year) and refuses what not both keep or
// JSON cannot write, giving the nearest time inside; Validate refuses a
// message with such a CreatedAt.
func TestNormalTime(t *testing.T) {
	est := time.FixedZone("EST", -5*3600)
	for _, c := range []struct {
		in   time.Time
		want string
		ok   bool
	}{
		{time.Date(9999, 12, 31, 23, 59, 59, 999_999_900, time.UTC), "9999-12-31T23:59:59.999999Z", true},
		{time.Date(9999, 12, 31, 18, 59, 59, 999_999_000, est), "9999-12-31T23:59:59.999999Z", true},
		{time.Date(9999, 12, 31, 23, 0, 0, 0, est), "9999-12-31T23:59:59.999999Z", false},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), "9999-12-31T23:59:59.999999Z", false},
		{time.Date(0, 6, 1, 0, 0, 0, 0, time.UTC), "0001-01-01T00:00:00Z", false},
		{time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC), "0001-01-01T00:00:00.000001Z", true},
		{time.Date(2026, 1, 2, 3, 4, 5, 123_456_789, est), "2026-01-02T08:04:05.123456Z", true},
	} {
		got, ok := store.NormalTime(c.in)
		if s := got.Format(time.RFC3339Nano); s != c.want || ok != c.ok || got.Location() != time.UTC {
			t.Errorf("NormalTime(%s) = %s, %v; want %s, %v", c.in, s, ok, c.want, c.ok)
		}
		err := store.Message{Role: store.RoleUser, Content: "x", CreatedAt: c.in}.Validate(0)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, store.ErrInvalidMessage)) {
			t.Errorf("Validate with CreatedAt %s: %v", c.in, err)
		}
	}
	if got, ok := store.NormalTime(time.Time{}); !got.IsZero() || !ok {
		t.Errorf("the zero time: %s, %v", got, ok)
	}
}
