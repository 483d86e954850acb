package memorytest

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/strata-go/strata/memory/store"
)

// testParticipants: a store.ParticipantLister records the authors of a
// session's messages other than its owner, in the same step as the write,
// and lists the sessions of an owner a user wrote in — with Sessions'
// order, totals and pages; at most 64 per session, the first to write;
// reset by Delete, a re-creation and Replace; set by Import. Messages read
// back carry their authors.
func testParticipants(e *env) {
	pl := e.s
	owner := e.user("shared") // the pseudo-owner of shared sessions
	alice, bob, carol := e.user("alice"), e.user("bob"), e.user("carol")
	t1, t2, own := e.id("thread-1"), e.id("thread-2"), e.id("own")
	for _, id := range []string{t1, t2} {
		e.mustCreate(id, owner)
	}
	e.mustCreate(own, alice)
	as := func(u string, m store.Message) store.Message { m.UserID = u; return m }
	e.mustAppend(t1, owner, as(alice, user("a1")), as(alice, assistant("r1")))
	time.Sleep(2 * time.Millisecond) // distinct last activity
	e.mustAppend(t2, owner, as(bob, user("b2")), as(bob, assistant("r2")))
	e.mustAppend(t2, owner, user("by the owner")) // no author: the owner's
	time.Sleep(2 * time.Millisecond)
	e.mustAppend(t1, owner, as(bob, user("b1")))
	e.mustAppend(own, alice, user("mine"))

	list := func(u string, limit, offset int) ([]string, int) {
		e.t.Helper()
		page, total, err := pl.ParticipantSessions(e.ctx, owner, u, limit, offset)
		if err != nil {
			e.t.Fatalf("ParticipantSessions(%s): %v", u, err)
		}
		ids := make([]string, len(page))
		for i, p := range page {
			ids[i] = p.SessionID
			if p.UserID != owner {
				e.t.Fatalf("ParticipantSessions lists %s owned by %q", p.SessionID, p.UserID)
			}
		}
		return ids, total
	}
	want := func(u string, ids ...string) {
		e.t.Helper()
		got, total := list(u, 0, 0)
		if !slices.Equal(got, ids) || total != len(ids) {
			e.t.Fatalf("%s took part in %v (total %d), want %v", u, got, total, ids)
		}
	}
	want(alice, t1)
	want(bob, t1, t2) // newest activity first: t1 had bob's append after t2's
	want(carol)
	want(owner) // the owner is no participant of its own sessions
	if got, _ := list(alice, 0, 0); slices.Contains(got, own) {
		e.t.Fatal("alice's own session is listed as one she took part in")
	}
	// Pages, and totals past the end.
	if got, total := list(bob, 1, 1); !slices.Equal(got, []string{t2}) || total != 2 {
		e.t.Fatalf("bob's second page: %v (total %d)", got, total)
	}
	if got, total := list(bob, 5, 9); len(got) != 0 || total != 2 {
		e.t.Fatalf("bob's page past the end: %v (total %d)", got, total)
	}
	// Another owner's sessions are not listed for the same participant.
	if page, total, err := pl.ParticipantSessions(e.ctx, alice, bob, 0, 0); err != nil || len(page) != 0 || total != 0 {
		e.t.Fatalf("bob's sessions of owner alice: %v, %d, %v", page, total, err)
	}
	// Messages carry their authors.
	var authors []string
	for _, m := range e.mustTail(t1, owner).Messages {
		authors = append(authors, m.UserID)
	}
	if !slices.Equal(authors, []string{alice, alice, bob}) {
		e.t.Fatalf("authors of thread 1: %q", authors)
	}
	if m := e.mustTail(t2, owner).Messages; m[len(m)-1].UserID != owner {
		e.t.Fatalf("a message appended without author is by %q, want the owner", m[len(m)-1].UserID)
	}

	// A refused append records nobody.
	if _, err := e.s.Append(e.ctx, t1, alice, as(carol, user("not the owner"))); err == nil {
		e.t.Fatal("an append by a non-owner went through")
	}
	want(carol)

	// At most 64 participants per session, the first to write.
	big := e.id("big")
	e.mustCreate(big, owner)
	var batch []store.Message
	for i := range 70 {
		batch = append(batch, as(e.user(fmt.Sprintf("p%02d", i)), user(fmt.Sprint(i))))
	}
	e.mustAppend(big, owner, batch[:40]...)
	e.mustAppend(big, owner, batch[40:]...)
	for _, i := range []int{0, 39, 40, 63} {
		if got, _ := list(e.user(fmt.Sprintf("p%02d", i)), 0, 0); !slices.Contains(got, big) {
			e.t.Fatalf("participant %d of 70 is not recorded", i)
		}
	}
	for _, i := range []int{64, 69} {
		if got, _ := list(e.user(fmt.Sprintf("p%02d", i)), 0, 0); slices.Contains(got, big) {
			e.t.Fatalf("participant %d of 70 is recorded past the bound of 64", i)
		}
	}
	if n := e.mustTail(big, owner).Total; n != 70 {
		e.t.Fatalf("the big thread holds %d messages, want 70: authors past the bound still write", n)
	}

	// Concurrent appends by 80 authors: every message is stored and
	// exactly 64 authors are recorded, whatever the interleaving.
	busy := e.id("busy")
	e.mustCreate(busy, owner)
	var wg sync.WaitGroup
	errs := make(chan error, 80)
	for i := range 80 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := e.user(fmt.Sprintf("q%02d", i))
			if _, err := e.s.Append(e.ctx, busy, owner, as(u, user(u))); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e.t.Fatalf("concurrent append: %v", err)
	}
	recorded := 0
	for i := range 80 {
		if got, _ := list(e.user(fmt.Sprintf("q%02d", i)), 0, 0); slices.Contains(got, busy) {
			recorded++
		}
	}
	if n := e.mustTail(busy, owner).Total; n != 80 || recorded != 64 {
		e.t.Fatalf("80 concurrent authors: %d messages stored, %d participants recorded; want 80 and 64", n, recorded)
	}

	// Delete and a re-creation under the same id forget the participants.
	if err := e.s.Delete(e.ctx, t1, owner); err != nil {
		e.t.Fatal(err)
	}
	want(alice)
	e.mustCreate(t1, owner)
	want(alice)
	e.mustAppend(t1, owner, as(carol, user("c1")))
	want(carol, t1)
	want(bob, t2)

	// Replace: the new incarnation's participants are its messages' authors.
	{
		r := e.s
		if _, err := r.Replace(e.ctx, t2, owner, as(alice, user("replaced"))); err != nil {
			e.t.Fatal(err)
		}
		want(bob)
		want(alice, t2)
	}
	// Import records the imported messages' authors.
	{
		imp := e.s
		imported := e.id("imported")
		if _, err := imp.Import(e.ctx, imported, owner, []store.Message{as(bob, user("old")), as(carol, assistant("older"))}, nil); err != nil {
			e.t.Fatal(err)
		}
		if got, _ := list(bob, 0, 0); !slices.Contains(got, imported) {
			e.t.Fatalf("bob took part in %v, want the imported thread too", got)
		}
		if got, _ := list(carol, 0, 0); !slices.Contains(got, imported) {
			e.t.Fatalf("carol took part in %v, want the imported thread too", got)
		}
	}
}
