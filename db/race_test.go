package db_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

// TestOwnershipRaceAcrossReplicas races, round after round on a fresh
// session id, two users on two replicas (separate pools): alice appends,
// deletes and reads, bob creates, appends and reads, all at once. Whatever
// the interleaving, no call may return another user's message, every error
// must be one the contract allows, and the stored session must end
// consistent: owned by one user, holding only that user's messages, its
// count equal to its rows.
func TestOwnershipRaceAcrossReplicas(t *testing.T) {
	t.Parallel()
	// The conformance suite's 1000-round race runs too (conformance_test.go);
	// this one adds simultaneous Create, Delete and claims by both users.
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	s := dbtest.NewSchema(t)
	ctx := testCtx(t)
	a := db.NewMessageStore(dbtest.Open(t, s.URL))
	b := db.NewMessageStore(dbtest.Open(t, s.URL))
	check := dbtest.Open(t, s.URL)

	allowed := func(err error, oks ...error) bool {
		if err == nil {
			return true
		}
		for _, ok := range oks {
			if errors.Is(err, ok) {
				return true
			}
		}
		return false
	}
	for round := range rounds {
		session := fmt.Sprint("race-", round)
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			mu    sync.Mutex
			fails []string
		)
		fail := func(format string, args ...any) {
			mu.Lock()
			fails = append(fails, fmt.Sprintf(format, args...))
			mu.Unlock()
		}
		readOwn := func(who string, msgs []store.Message) {
			for _, m := range msgs {
				if m.UserID != who || !strings.HasPrefix(m.Content, who) {
					fail("%s read %q written by %q", who, m.Content, m.UserID)
				}
			}
		}
		run := func(f func()) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				f()
			}()
		}
		for _, u := range []struct {
			name  string
			store memory.MessageStore
		}{{"alice", a}, {"bob", b}} {
			run(func() {
				_, err := u.store.Append(ctx, session, u.name, user(u.name+" q"), assistant(u.name+" a"))
				if !allowed(err, store.ErrNotFound, memory.ErrNotOwner) {
					fail("%s Append: %v", u.name, err)
				}
			})
			run(func() {
				tail, err := u.store.Tail(ctx, session, u.name, 10)
				if !allowed(err, store.ErrNotFound, memory.ErrNotOwner) {
					fail("%s Tail: %v", u.name, err)
				}
				if err == nil && (tail.Epoch <= 0 || tail.Total < len(tail.Messages)) {
					fail("%s Tail = total %d epoch %d with %d messages", u.name, tail.Total, tail.Epoch, len(tail.Messages))
				}
				readOwn(u.name, tail.Messages)
			})
			run(func() {
				msgs, err := u.store.Range(ctx, session, u.name, 0, 1<<62, 0)
				if !allowed(err, store.ErrNotFound, memory.ErrNotOwner) {
					fail("%s Range: %v", u.name, err)
				}
				readOwn(u.name, msgs)
			})
		}
		run(func() {
			if err := a.Delete(ctx, session, "alice"); !allowed(err, store.ErrNotFound, memory.ErrNotOwner) {
				fail("alice Delete: %v", err)
			}
		})
		run(func() {
			if err := b.Create(ctx, session, "bob"); !allowed(err, store.ErrSessionExists) {
				fail("bob Create: %v", err)
			}
		})
		close(start)
		wg.Wait()
		if len(fails) > 0 {
			t.Fatalf("round %d: %s", round, strings.Join(fails, "; "))
		}

		// The stored state is one consistent session (or a tombstone).
		owner, _, deleted, exists := sessionRow(t, ctx, check, session)
		if !exists {
			t.Fatalf("round %d: no session row at all", round)
		}
		var rows []struct {
			UserID  string `db:"user_id"`
			Content string `db:"content"`
		}
		if err := check.SelectContext(ctx, &rows, `SELECT user_id, content FROM strata_messages WHERE session_id = $1`, session); err != nil {
			t.Fatal(err)
		}
		if deleted {
			if len(rows) != 0 {
				t.Fatalf("round %d: a tombstone holds %d messages", round, len(rows))
			}
			continue
		}
		for _, r := range rows {
			if r.UserID != owner || !strings.HasPrefix(r.Content, owner) {
				t.Fatalf("round %d: %q's session holds %q by %q", round, owner, r.Content, r.UserID)
			}
		}
		store := a
		if owner == "bob" {
			store = b
		}
		tail, err := store.Tail(ctx, session, owner, 0)
		if err != nil || tail.Total != len(rows) {
			t.Fatalf("round %d: Tail = %+v, %v; want Total %d", round, tail, err, len(rows))
		}
	}
}
