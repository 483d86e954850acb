package db

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/strata-go/strata/memory/store"
)

// tailMsgs are messages with seqs from..from+n-1 whose contents name the
// branch that wrote them.
func tailMsgs(branch string, from int64, n int) []store.Message {
	out := make([]store.Message, n)
	for i := range out {
		seq := from + int64(i)
		out[i] = store.Message{Seq: seq, Role: store.RoleUser, Content: fmt.Sprintf("%s-%d", branch, seq), UserID: "u"}
	}
	return out
}

// keptTail is what extended must keep of held followed by added, worked
// out on plain copies: the newest limit messages, or all up to want when
// the tail held every message after its cursor.
func keptTail(t *cachedTail, held, added []store.Message) []store.Message {
	all := append(slices.Clone(held), added...)
	keep := len(all)
	if t.limit != tailAll {
		keep = min(keep, int(t.limit))
	} else {
		keep = min(keep, int(t.want))
	}
	return all[len(all)-keep:]
}

// TestTailExtendedRandom extends cached tails at random — mostly the
// newest entry, as one writer's appends do, sometimes an older one again,
// as when a concurrent load replaced the entry (another branch of
// messages) — and checks after every step that every entry made so far
// still holds exactly the messages it held when made, that each new one
// holds what its tail should keep, and that sizes add up: an extension
// that shares its predecessor's array never overwrites what another entry
// shows.
func TestTailExtendedRandom(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	for round := range 50 {
		want := 1 + rng.IntN(12)
		start := rng.IntN(want + 3) // fewer than want: a tail of all the messages
		type entry struct {
			t    *cachedTail
			msgs []store.Message // a copy of what it held when made
		}
		first := newCachedTail(tailMsgs("r", 1, start), tailStamp{epoch: 1, counter: int64(start), erasures: 0}, 0, want)
		entries := []entry{{first, slices.Clone(first.msgs)}}
		inPlace := 0
		for step := range 200 {
			var from entry
			if rng.IntN(5) == 0 {
				from = entries[rng.IntN(len(entries))]
			} else {
				from = entries[len(entries)-1]
			}
			added := tailMsgs(fmt.Sprintf("b%d", step), from.t.counter+1, 1+rng.IntN(3))
			grownBefore := from.t.grown.Load()
			n := from.t.extended(from.t.counter+int64(len(added)), slices.Clone(added))
			if n == nil {
				t.Fatalf("round %d step %d: extension refused", round, step)
			}
			if !grownBefore && from.t.grown.Load() {
				inPlace++
			}
			if exp := keptTail(from.t, from.msgs, added); !slices.EqualFunc(n.msgs, exp, func(a, b store.Message) bool { return a.Content == b.Content && a.Seq == b.Seq }) {
				t.Fatalf("round %d step %d: extended holds %v, want %v", round, step, contents(n.msgs), contents(exp))
			}
			var size int64
			for i := range n.msgs {
				size += messageSize(&n.msgs[i])
			}
			if n.size != size {
				t.Fatalf("round %d step %d: size %d, counted %d", round, step, n.size, size)
			}
			entries = append(entries, entry{n, slices.Clone(n.msgs)})
			for i, e := range entries {
				if !slices.EqualFunc(e.t.msgs, e.msgs, func(a, b store.Message) bool { return a.Content == b.Content && a.Seq == b.Seq }) {
					t.Fatalf("round %d step %d: entry %d now holds %v, made with %v", round, step, i, contents(e.t.msgs), contents(e.msgs))
				}
			}
		}
		if inPlace == 0 {
			t.Fatalf("round %d: no extension shared its predecessor's array", round)
		}
	}
}

// contents are the contents of msgs, in order.
func contents(msgs []store.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Content
	}
	return out
}

// TestTailExtendedRace reads entries, as loads do (newest, then a copy of
// each message), while a writer extends the newest entry in place and,
// now and then, an older entry again: run with -race, a write into an
// array that a reader's entry shows is reported.
func TestTailExtendedRace(t *testing.T) {
	c := newTailCache(8, 1<<20)
	c.putRead("s", newCachedTail(tailMsgs("r", 1, 4), tailStamp{epoch: 1, counter: 4, erasures: 0}, 0, 10))
	var mu sync.Mutex
	var olds []*cachedTail
	done := make(chan struct{})
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				held := c.get("s")
				if r%2 == 1 {
					mu.Lock()
					if len(olds) > 0 {
						held = olds[i%len(olds)]
					}
					mu.Unlock()
				}
				msgs := held.newest(0, 10)
				for j := range msgs {
					m := msgs[j].Clone()
					if want := fmt.Sprint(m.Seq); len(m.Content) < len(want) {
						t.Errorf("message %d reads %q", m.Seq, m.Content)
					}
				}
			}
		})
	}
	for i := range 2000 {
		held := c.get("s")
		if i%7 == 0 {
			mu.Lock()
			if len(olds) > 0 {
				held = olds[len(olds)-1]
			}
			mu.Unlock()
		}
		added := tailMsgs(fmt.Sprintf("w%d", i), held.counter+1, 1+i%2)
		if n := held.extended(held.counter+int64(len(added)), added); n != nil {
			c.swap("s", c.get("s"), n)
			mu.Lock()
			olds = append(olds, held)
			if len(olds) > 16 {
				olds = olds[1:]
			}
			mu.Unlock()
		}
	}
	close(done)
	wg.Wait()
}

// TestTailPutReadKeepsNewer: a load's tail replaces the entry held unless
// the entry is newer — same incarnation and erasures, a larger counter (an
// append that committed after the load's snapshot extended it) — so the
// tail appends extend is never set back by a read that raced them; an
// entry of another incarnation or erasure count, or an older one, is
// replaced.
func TestTailPutReadKeepsNewer(t *testing.T) {
	read := newCachedTail(tailMsgs("r", 1, 4), tailStamp{epoch: 1, counter: 4, erasures: 0}, 0, 10)
	for _, c := range []struct {
		name     string
		held     *cachedTail
		replaced bool
	}{
		{"none", nil, true},
		{"extended past the read", newCachedTail(tailMsgs("r", 1, 6), tailStamp{epoch: 1, counter: 6, erasures: 0}, 0, 10), false},
		{"same counter", newCachedTail(tailMsgs("r", 1, 4), tailStamp{epoch: 1, counter: 4, erasures: 0}, 0, 10), true},
		{"older", newCachedTail(tailMsgs("r", 1, 3), tailStamp{epoch: 1, counter: 3, erasures: 0}, 0, 10), true},
		{"other incarnation", newCachedTail(tailMsgs("r", 1, 6), tailStamp{epoch: 2, counter: 6, erasures: 0}, 0, 10), true},
		{"other erasures", newCachedTail(tailMsgs("r", 1, 6), tailStamp{epoch: 1, counter: 6, erasures: 1}, 0, 10), true},
	} {
		tc := newTailCache(8, 1<<20)
		if c.held != nil {
			tc.swap("s", nil, c.held)
		}
		tc.putRead("s", read)
		if got := tc.get("s"); (got == read) != c.replaced {
			t.Errorf("%s: held %p after putRead, read %p, held before %p; want replaced %v", c.name, got, read, c.held, c.replaced)
		}
		if _, bytes := tc.usage(); bytes != tc.get("s").size {
			t.Errorf("%s: cache counts %d bytes, its entry %d", c.name, bytes, tc.get("s").size)
		}
	}
}
