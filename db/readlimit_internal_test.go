package db

import "testing"

// The limit written into the load statements covers what was asked, reads
// at most 7 extra rows up to 256 (a chunked load of 38 reads 40, not 64),
// and yields few distinct statements whatever callers ask for.
func TestReadLimit(t *testing.T) {
	if readLimit(0) != 0 || readLimit(-3) != 0 {
		t.Fatalf("readLimit(0) = %d, readLimit(-3) = %d, want 0", readLimit(0), readLimit(-3))
	}
	distinct := map[int]bool{}
	for n := 1; n <= 200_000; n++ {
		l := readLimit(n)
		if l < n || (n <= 256 && l-n > 7) || (n > 256 && l >= 2*n) {
			t.Fatalf("readLimit(%d) = %d", n, l)
		}
		distinct[l] = true
	}
	if len(distinct) > 32+10 {
		t.Fatalf("%d distinct limits for 1..200 000", len(distinct))
	}
}
