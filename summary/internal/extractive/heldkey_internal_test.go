package extractive

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestHeldKeyIsTheFirstNumberedMatch: the keyer's index answers what its
// linear search over a stem's numbered ledger keys answered — the lowest
// numbered key whose value is the finding's under the kind's canonical
// form — over seeded random ledgers (the seed is printed).
func TestHeldKeyIsTheFirstNumberedMatch(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	values := []string{"ORD-1", "ord 1", "#ORD1", "a@B.example", "A@b.example ", "$12.50", "12.50 $", "(415) 555-0199", "4155550199", "May 1", "may  1", "", "x"}
	kinds := []string{"id", "email", "amount", "phone", "flight", "date"}
	stems := []string{"order_id", "email", "amount", "date"}
	for range 300 {
		var known []Fact
		for range rng.IntN(12) {
			stem := stems[rng.IntN(len(stems))]
			key := stem
			if n := rng.IntN(5); n >= 2 {
				key = fmt.Sprintf("%s_%d", stem, n)
			}
			known = append(known, Fact{Key: key, Value: values[rng.IntN(len(values))]})
		}
		k := newKeyer(known, nil)
		for range 20 {
			kind, base, value := kinds[rng.IntN(len(kinds))], stems[rng.IntN(len(stems))], values[rng.IntN(len(values))]
			want, wantOK := "", false
			for _, nk := range k.numbered[base] {
				if canon(kind, k.known[nk.key]) == canon(kind, value) {
					want, wantOK = nk.key, true
					break
				}
			}
			if got, ok := k.heldKey(kind, base, value); got != want || ok != wantOK {
				t.Fatalf("seed %d: ledger %+v, heldKey(%q, %q, %q) = %q %v, want %q %v", seed, known, kind, base, value, got, ok, want, wantOK)
			}
		}
	}
}
