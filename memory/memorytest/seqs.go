package memorytest

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// testSeqPerSession: sequence numbers are counted per session, so that a
// user cannot count another user's writes from the gaps in their own.
// Two users append batches of random sizes (seeded, seed printed) to
// their own sessions, interleaved: each session's seqs are dense, and
// each append's LastSeq is the previous one plus its batch size. A
// session deleted and created again under its id, by another user, goes
// on above every number the id had, as do a replace, an import over the
// deleted id and an append after the newest message was forgotten, where
// the store offers them.
func testSeqPerSession(e *env) {
	seed := uint64(time.Now().UnixNano())
	e.t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0x5e9))
	alice, bob := e.user("alice"), e.user("bob")
	a, b := e.id("alice"), e.id("bob")
	e.mustCreate(a, alice)
	e.mustCreate(b, bob)
	last := map[string]int64{}
	// appendN appends n messages to id as who and checks that they follow
	// the session's previous ones without a gap.
	appendN := func(id, who string, n int) {
		e.t.Helper()
		msgs := make([]store.Message, n)
		for i := range msgs {
			msgs[i] = user(fmt.Sprintf("%s %d", who, rng.IntN(1000)))
		}
		res := e.mustAppend(id, who, msgs...)
		if prev, ok := last[id]; ok && res.LastSeq != prev+int64(n) {
			e.t.Fatalf("session %s: %d messages after seq %d end at seq %d: the seqs have a gap", id, n, prev, res.LastSeq)
		}
		last[id] = res.LastSeq
	}
	for range 40 {
		appendN(a, alice, 1+rng.IntN(3))
		for range rng.IntN(4) {
			appendN(b, bob, 1+rng.IntN(3))
		}
	}
	for _, s := range []struct{ id, who string }{{a, alice}, {b, bob}} {
		got := seqs(e.mustTail(s.id, s.who).Messages)
		for i := 1; i < len(got); i++ {
			if got[i] != got[i-1]+1 {
				e.t.Fatalf("session %s: seqs %v are not dense (another user's writes show)", s.id, got)
			}
		}
		if got[len(got)-1] != last[s.id] {
			e.t.Fatalf("session %s: newest seq %d, LastSeq %d", s.id, got[len(got)-1], last[s.id])
		}
	}

	// above checks that a new incarnation's first seq is above every
	// number the id had, and records its newest.
	above := func(what string, res store.AppendResult, id, who string) {
		e.t.Helper()
		got := seqs(e.mustTail(id, who).Messages)
		if len(got) == 0 || got[0] <= last[id] || res.LastSeq != got[len(got)-1] {
			e.t.Fatalf("%s: seqs %v (LastSeq %d), want all above %d, the id's greatest so far", what, got, res.LastSeq, last[id])
		}
		last[id] = res.LastSeq
	}
	if err := e.s.Delete(e.ctx, a, alice); err != nil {
		e.t.Fatal(err)
	}
	e.mustCreate(a, bob)
	above("re-created by another user", e.mustAppend(a, bob, user("again")), a, bob)
	appendN(a, bob, 2)

	{
		f := e.s
		if err := f.Forget(e.ctx, a, bob, []int64{last[a]}, func(*summary.Summary, int64, []store.Message) *summary.Summary { return nil }); err != nil {
			e.t.Fatalf("Forget: %v", err)
		}
		if res := e.mustAppend(a, bob, user("after forget")); res.LastSeq <= last[a] {
			e.t.Fatalf("an append after seq %d was forgotten got seq %d", last[a], res.LastSeq)
		} else {
			last[a] = res.LastSeq
		}
	}
	{
		r := e.s
		res, err := r.Replace(e.ctx, a, bob, user("replaced 1"), user("replaced 2"))
		if err != nil {
			e.t.Fatalf("Replace: %v", err)
		}
		above("replace", res, a, bob)
	}
	{
		imp := e.s
		if err := e.s.Delete(e.ctx, a, bob); err != nil {
			e.t.Fatal(err)
		}
		res, err := imp.Import(e.ctx, a, alice, []store.Message{user("imported 1"), user("imported 2")}, nil)
		if err != nil {
			e.t.Fatalf("Import: %v", err)
		}
		above("import over a deleted id", res, a, alice)
		appendN(a, alice, 1)
	}
	// Bob's session was untouched by all of that.
	appendN(b, bob, 1)
}
