package memorytest

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

func testConcurrentAppends(e *env) {
	const writers, batches = 8, 25
	alice := e.user("alice")
	id := e.id("s")
	if err := e.s.Create(e.ctx, id, alice); err != nil {
		e.t.Fatal(err)
	}
	type ack struct {
		res   store.AppendResult
		first string
	}
	acks := make([][]ack, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				first := fmt.Sprintf("w%d-b%d-0", w, b)
				res, err := e.s.Append(e.ctx, id, alice, user(first), assistant(fmt.Sprintf("w%d-b%d-1", w, b)))
				if err != nil {
					e.t.Errorf("writer %d, batch %d: %v", w, b, err)
					return
				}
				acks[w] = append(acks[w], ack{res, first})
			}
		}()
	}
	wg.Wait()
	if e.t.Failed() {
		return
	}
	tail := e.mustTail(id, alice)
	if tail.Total != 2*writers*batches || len(tail.Messages) != tail.Total {
		e.t.Fatalf("Total %d (%d messages), want %d", tail.Total, len(tail.Messages), 2*writers*batches)
	}
	pos := map[string]int{}
	for i, m := range tail.Messages {
		if i > 0 && m.Seq <= tail.Messages[i-1].Seq {
			e.t.Fatalf("seqs not strictly increasing at %d: %d after %d", i, m.Seq, tail.Messages[i-1].Seq)
		}
		pos[m.Content] = i
	}
	totals := map[int]bool{}
	for w := range writers {
		prev := -1
		for b, a := range acks[w] {
			i, ok := pos[a.first]
			switch {
			case !ok:
				e.t.Fatalf("acknowledged message %s is missing", a.first)
			case i+1 >= len(tail.Messages) || tail.Messages[i+1].Content != fmt.Sprintf("w%d-b%d-1", w, b):
				e.t.Fatalf("batch %s was split: it is followed by %q", a.first, contents(tail.Messages[i+1:min(i+2, len(tail.Messages))]))
			case i < prev:
				e.t.Fatalf("writer %d's batches are out of order", w)
			case a.res.Total != i+2:
				// Total is read atomically with the append: it is the
				// position just past the batch.
				e.t.Fatalf("batch %s ends at %d but its append reported Total %d", a.first, i+2, a.res.Total)
			case a.res.LastSeq != tail.Messages[i+1].Seq:
				e.t.Fatalf("batch %s ends at Seq %d but its append reported LastSeq %d", a.first, tail.Messages[i+1].Seq, a.res.LastSeq)
			}
			prev = i
			totals[a.res.Total] = true
		}
	}
	if len(totals) != writers*batches {
		e.t.Fatalf("%d distinct totals for %d appends", len(totals), writers*batches)
	}
}

// createRounds is how many times each kind of Create race is run.
const createRounds = 25

// testConcurrentCreates races Creates of one id: exactly one contender
// wins, every other gets ErrSessionExists, and appends racing with them
// never make the session. In the "distinct users" rounds every contender
// is another user and, once its Create returned, appends a message of its
// own: only the winner's lands. In the "same user" rounds every contender
// is the same user, and still only one Create succeeds. In every round,
// intruders that never create append to the id meanwhile: each is refused
// with ErrNotFound (before the winner's Create) or ErrNotOwner (after).
func testConcurrentCreates(e *env) {
	const contenders, intruders = 8, 4
	for _, mode := range []string{"distinct users", "same user"} {
		for r := range createRounds {
			id := e.id(fmt.Sprintf("contended-%s-%d", strings.ReplaceAll(mode, " ", "-"), r))
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				winners []string
			)
			start := make(chan struct{})
			for c := range contenders {
				u := e.user("owner")
				if mode == "distinct users" {
					u = e.user(fmt.Sprintf("user%d", c))
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					err := e.s.Create(e.ctx, id, u)
					switch {
					case err == nil:
						mu.Lock()
						winners = append(winners, u)
						mu.Unlock()
					case !errors.Is(err, store.ErrSessionExists):
						e.t.Errorf("%s, round %d: Create by contender %d: %v, want nil or ErrSessionExists", mode, r, c, err)
						return
					}
					if mode != "distinct users" {
						return
					}
					// The session exists now, whoever made it: a winner's
					// append lands, a loser's is refused as another user's.
					_, err = e.s.Append(e.ctx, id, u, user(u))
					switch won := err == nil; {
					case err != nil && !errors.Is(err, memory.ErrNotOwner):
						e.t.Errorf("%s, round %d: Append by contender %d after its Create: %v, want nil or ErrNotOwner", mode, r, c, err)
					case won && !slices.Contains(snapshot(&mu, &winners), u):
						e.t.Errorf("%s, round %d: contender %d lost the Create but its Append was stored", mode, r, c)
					}
				}()
			}
			for i := range intruders {
				u := e.user(fmt.Sprintf("intruder%d", i))
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for range 3 {
						_, err := e.s.Append(e.ctx, id, u, user(u))
						if !notMine(err) {
							e.t.Errorf("%s, round %d: Append by %s, who never created the session: %v, want ErrNotFound or ErrNotOwner", mode, r, u, err)
						}
						runtime.Gosched()
					}
				}()
			}
			close(start)
			wg.Wait()
			if len(winners) != 1 {
				e.t.Fatalf("%s, round %d: %d Creates succeeded (%q), want exactly one", mode, r, len(winners), winners)
			}
			owner := winners[0]
			tail := e.mustTail(id, owner)
			if mode == "distinct users" {
				e.wantContents(fmt.Sprintf("%s, round %d: session", mode, r), tail.Messages, owner)
			} else if tail.Total != 0 {
				e.t.Fatalf("%s, round %d: session holds %d messages, want 0", mode, r, tail.Total)
			}
			if err := e.s.Delete(e.ctx, id, owner); err != nil {
				e.t.Fatal(err)
			}
		}
		if e.t.Failed() {
			return
		}
	}
}

// snapshot returns a copy of *winners read under mu.
func snapshot(mu *sync.Mutex, winners *[]string) []string {
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(*winners)
}

// raceReport collects what went wrong in the rounds of the ownership race.
type raceReport struct {
	leaks      int      // alice's messages returned to bob
	lost       int      // acknowledged alice messages that disappeared
	violations []string // every breach of the contract, leaks and losses included
	// How bob's reads of a session he did not hold were refused, to show
	// in the log how much the two sides overlapped.
	notFound, notOwner int
}

func (r *raceReport) add(format string, args ...any) {
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

func testOwnershipRace(e *env) {
	rounds := 1000
	if testing.Short() {
		rounds = 100
	}
	alice, bob := e.user("alice"), e.user("bob")
	var total raceReport
	for r := range rounds {
		id := e.id(fmt.Sprintf("race-%d", r))
		var a, b raceReport
		start := make(chan struct{})
		var wg sync.WaitGroup
		var aliceOwns, bobOwns bool
		var acked []string
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			aliceOwns, acked = raceAlice(e, &a, r, id, alice)
		}()
		go func() {
			defer wg.Done()
			<-start
			bobOwns = raceBob(e, &b, r, id, bob, alice)
		}()
		close(start)
		wg.Wait()
		// Once both are done, alice finds exactly the messages acknowledged
		// to her since her last delete, or no session of hers.
		tail, err := e.s.Tail(e.ctx, id, alice, all)
		switch {
		case aliceOwns && err != nil:
			a.lost += len(acked)
			a.add("round %d: alice's final Tail: %v, holding %d acknowledged messages", r, err, len(acked))
		case aliceOwns:
			if got := contents(tail.Messages); !slices.Equal(got, acked) {
				a.lost += countMissing(acked, got)
				a.add("round %d: alice's session holds %q, want %q", r, got, acked)
			}
		case !errors.Is(err, store.ErrNotFound) && !errors.Is(err, memory.ErrNotOwner):
			a.add("round %d: final Tail by alice, who holds no session: %+v, %v; want ErrNotFound or ErrNotOwner", r, tail, err)
		}
		// Clean up, so that a shared database keeps little of the race.
		if aliceOwns {
			_ = e.s.Delete(e.ctx, id, alice)
		}
		if bobOwns {
			_ = e.s.Delete(e.ctx, id, bob)
		}
		total.leaks += a.leaks + b.leaks
		total.lost += a.lost + b.lost
		total.notFound += b.notFound
		total.notOwner += b.notOwner
		total.violations = append(total.violations, a.violations...)
		total.violations = append(total.violations, b.violations...)
	}
	e.t.Logf("%d rounds: bob's reads were refused %d times with ErrNotFound and %d times with ErrNotOwner",
		rounds, total.notFound, total.notOwner)
	if total.leaks != 0 || total.lost != 0 || len(total.violations) != 0 {
		shown := total.violations[:min(len(total.violations), 10)]
		e.t.Fatalf("in %d rounds: bob read alice's text %d times, %d acknowledged alice messages were lost, %d violations; first ones:\n%s",
			rounds, total.leaks, total.lost, len(total.violations), strings.Join(shown, "\n"))
	}
}

func countMissing(want, got []string) int {
	n := 0
	for _, w := range want {
		if !slices.Contains(got, w) {
			n++
		}
	}
	return n
}

// notMine reports whether err is how an operation on a session its caller
// does not hold must fail.
func notMine(err error) bool {
	return errors.Is(err, store.ErrNotFound) || errors.Is(err, memory.ErrNotOwner)
}

// raceAlice is alice's side of a round: she creates id, appends, reads,
// deletes, and writes again, creating the session anew when her append
// finds it missing (as the manager does). Bob may have created the id
// first; then alice's operations are refused until he deletes it. She
// returns whether she holds the session at the end and the messages
// acknowledged to her since her last delete.
func raceAlice(e *env, rep *raceReport, r int, id, alice string) (owns bool, acked []string) {
	// create creates the session; success means alice holds it, empty.
	create := func() {
		switch err := e.s.Create(e.ctx, id, alice); {
		case err == nil:
			owns, acked = true, nil
		case owns:
			rep.add("round %d: alice's Create of an id she holds: %v, want ErrSessionExists", r, err)
		case !errors.Is(err, store.ErrSessionExists):
			rep.add("round %d: alice's Create: %v, want nil or ErrSessionExists", r, err)
		}
		runtime.Gosched()
	}
	// write appends texts, first creating the session when the append finds
	// none. An acknowledged append means alice holds the session, and a
	// refusal is only allowed while she does not.
	write := func(texts ...string) {
		msgs := make([]store.Message, len(texts))
		for i, text := range texts {
			msgs[i] = user(text)
		}
		_, err := e.s.Append(e.ctx, id, alice, msgs...)
		if errors.Is(err, store.ErrNotFound) && !owns {
			runtime.Gosched()
			create()
			_, err = e.s.Append(e.ctx, id, alice, msgs...)
		}
		switch {
		case err == nil && !owns:
			rep.add("round %d: alice's append to a session she never created was stored", r)
		case err == nil:
			acked = append(acked, texts...)
		case owns:
			rep.lost += len(acked)
			rep.add("round %d: alice's append to her own session failed: %v", r, err)
			owns, acked = false, nil
		case !notMine(err):
			rep.add("round %d: alice's append to a session she does not hold: %v, want ErrNotFound or ErrNotOwner", r, err)
		}
		runtime.Gosched()
	}
	if r%2 == 0 {
		create()
	} else {
		write()
	}
	text := func(n string) string { return fmt.Sprintf("alice-%d-%s", r, n) }
	write(text("1"))
	write(text("2a"), text("2b"))

	tail, err := e.s.Tail(e.ctx, id, alice, all)
	switch {
	case owns && err != nil:
		rep.lost += len(acked)
		rep.add("round %d: alice's Tail of her own session: %v", r, err)
		owns, acked = false, nil
	case owns && !slices.Equal(contents(tail.Messages), acked):
		rep.lost += countMissing(acked, contents(tail.Messages))
		rep.add("round %d: alice's session holds %q, want %q", r, contents(tail.Messages), acked)
	case !owns && !notMine(err):
		rep.add("round %d: alice's Tail of a session she does not hold: %+v, %v", r, tail, err)
	}
	runtime.Gosched()

	switch err := e.s.Delete(e.ctx, id, alice); {
	case owns && err != nil:
		rep.lost += len(acked)
		rep.add("round %d: alice's Delete of her own session: %v", r, err)
		owns, acked = false, nil
	case owns:
		owns, acked = false, nil
	case !notMine(err):
		rep.add("round %d: alice's Delete of a session she does not hold: %v, want ErrNotFound or ErrNotOwner", r, err)
	}
	runtime.Gosched()

	write(text("3"))
	write(text("4"))
	return owns, acked
}

// raceBob is bob's side of a round: in one round out of four he first
// creates id and writes a message of his own to it, then he reads,
// appends to and deletes it repeatedly. Every read and delete must
// succeed while he holds the session, and fail with ErrNotFound or
// ErrNotOwner otherwise; no read may ever return alice's text, and no
// append of his may land while he does not hold the session (it would
// have created one, or written into alice's). He returns whether he
// holds the session at the end.
func raceBob(e *env, rep *raceReport, r int, id, bob, alice string) (owns bool) {
	mine := fmt.Sprintf("bob-%d", r)
	if r%4 == 3 {
		switch err := e.s.Create(e.ctx, id, bob); {
		case err == nil:
			owns = true
		case !errors.Is(err, store.ErrSessionExists):
			rep.add("round %d: bob's Create: %v, want nil or ErrSessionExists", r, err)
		}
		runtime.Gosched()
		if owns {
			if _, err := e.s.Append(e.ctx, id, bob, user(mine)); err != nil {
				rep.add("round %d: bob's append to the session he created: %v", r, err)
				owns = false
			}
			runtime.Gosched()
		}
	}
	// read checks what one read returned.
	read := func(what string, msgs []store.Message, err error) {
		for _, m := range msgs {
			if m.UserID == alice || strings.HasPrefix(m.Content, "alice-") {
				rep.leaks++
			}
		}
		switch {
		case owns && err != nil:
			rep.add("round %d: bob's %s of his own session: %v", r, what, err)
			owns = false
		case owns && !slices.Equal(contents(msgs), []string{mine}):
			rep.add("round %d: bob's %s of his own session = %q, want [%s]", r, what, contents(msgs), mine)
		case !owns && errors.Is(err, store.ErrNotFound):
			rep.notFound++
		case !owns && errors.Is(err, memory.ErrNotOwner):
			rep.notOwner++
		case !owns:
			rep.add("round %d: bob's %s of a session he does not hold = %q, %v; want ErrNotFound or ErrNotOwner", r, what, contents(msgs), err)
		}
		runtime.Gosched()
	}
	for range 3 {
		if !owns {
			switch _, err := e.s.Append(e.ctx, id, bob, user(fmt.Sprintf("bob-%d-intruder", r))); {
			case err == nil:
				rep.add("round %d: bob's append to a session he does not hold was stored", r)
			case !notMine(err):
				rep.add("round %d: bob's append to a session he does not hold: %v, want ErrNotFound or ErrNotOwner", r, err)
			}
			runtime.Gosched()
		}
		tail, err := e.s.Tail(e.ctx, id, bob, all)
		read("Tail", tail.Messages, err)
		msgs, err := e.s.Range(e.ctx, id, bob, 0, math.MaxInt64, 0)
		read("Range", msgs, err)
		switch err := e.s.Delete(e.ctx, id, bob); {
		case owns && err != nil:
			rep.add("round %d: bob's Delete of his own session: %v", r, err)
		case owns:
			owns = false
		case !notMine(err):
			rep.add("round %d: bob's Delete of a session he does not hold: %v, want ErrNotFound or ErrNotOwner", r, err)
		}
		runtime.Gosched()
	}
	return owns
}
