// Package memorytest is a conformance suite for memory.MessageStore
// implementations. Run exercises every promise of the contract through the
// public interface only: sessions made by Create alone (Append never makes
// one), ErrNotFound and ErrNotOwner on every operation, Tail and Range
// bounds, sequence numbers and epochs across deletes and re-creations,
// atomic multi-message appends, session listings, concurrent appends,
// concurrent creates of one id, and a long race between an owner creating
// and writing a session and another user creating, appending to, reading
// and deleting the same id. Every session and user id the suite
// makes carries a fresh random token, so it can run again and again against
// one shared database without collisions. RunCapabilities covers the
// optional capabilities store.Importer, store.Forgetter and
// store.ParticipantLister. The erasure scenarios, which follow a Manager
// and its catalogue, are catalog/catalogtest's (RunErasure,
// RunErasureRandom, RunToolErasure): the suite a store author runs does not
// depend on the catalogue.
package memorytest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"testing"

	"github.com/strata-go/strata/memory/store"
)

// Run runs the suite against the stores newStore returns, one subtest per
// promise of the contract. newStore is called once per subtest; it may
// return a fresh store each time or the same shared one, since the
// subtests never reuse each other's ids. A store's own test calls it as
//
//	memorytest.Run(t, func(t *testing.T) memory.MessageStore { return newStore(t) })
//
// The ownership race runs 1000 rounds, or 100 under go test -short.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		run  func(e *env)
	}{
		{"CreateAndExists", testCreate},
		{"AppendNeverCreates", testAppendNeverCreates},
		{"NotOwnerOnEveryOperation", testNotOwner},
		{"NotFoundOnEveryOperation", testNotFound},
		{"MessagesRoundTrip", testRoundTrip},
		{"TailSizes", testTail},
		{"RangeBoundsAndLimit", testRange},
		{"SeqIncreasingAndNeverReused", testSeq},
		{"SeqPerSession", testSeqPerSession},
		{"EpochPerIncarnation", testEpoch},
		{"AtomicAppend", testAtomicAppend},
		{"SessionsListing", testSessions},
		{"DeleteRemovesEverything", testDelete},
		{"ConcurrentAppends", testConcurrentAppends},
		{"ConcurrentCreates", testConcurrentCreates},
		{"OwnershipRace", testOwnershipRace},
		{"ReplaceIsAtomic", testReplace},
		{"SetMessagesKeepsOwner", testSetMessagesRace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(&env{t: t, ctx: t.Context(), s: newStore(t), token: token(t)})
		})
	}
}

// env is what one subtest runs on.
type env struct {
	t     *testing.T
	ctx   context.Context
	s     store.Store
	token string
}

// token returns a random string unique to one subtest run.
func token(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// id returns a session id unique to this subtest run.
func (e *env) id(name string) string { return "memorytest-" + e.token + "-" + name }

// user returns a user id unique to this subtest run.
func (e *env) user(name string) string { return name + "-" + e.token }

// all is a Tail size larger than any session of the suite.
const all = 1 << 20

// user returns a user message.
func user(text string) store.Message { return store.Message{Role: store.RoleUser, Content: text} }

// assistant returns an assistant message.
func assistant(text string) store.Message {
	return store.Message{Role: store.RoleAssistant, Content: text}
}

// mustCreate creates a session and fails the test on error.
func (e *env) mustCreate(sessionID, userID string) {
	e.t.Helper()
	if err := e.s.Create(e.ctx, sessionID, userID); err != nil {
		e.t.Fatalf("Create(%s, %s): %v", sessionID, userID, err)
	}
}

// mustAppend appends and fails the test on error.
func (e *env) mustAppend(sessionID, userID string, msgs ...store.Message) store.AppendResult {
	e.t.Helper()
	res, err := e.s.Append(e.ctx, sessionID, userID, msgs...)
	if err != nil {
		e.t.Fatalf("Append(%s, %s): %v", sessionID, userID, err)
	}
	return res
}

// mustTail returns the whole session and fails the test on error.
func (e *env) mustTail(sessionID, userID string) store.Tail {
	e.t.Helper()
	tail, err := e.s.Tail(e.ctx, sessionID, userID, all)
	if err != nil {
		e.t.Fatalf("Tail(%s, %s): %v", sessionID, userID, err)
	}
	return tail
}

// wantContents fails the test unless msgs hold exactly want, in order.
func (e *env) wantContents(what string, msgs []store.Message, want ...string) {
	e.t.Helper()
	if got := contents(msgs); !slices.Equal(got, want) {
		e.t.Fatalf("%s = %q, want %q", what, got, want)
	}
}

func contents(msgs []store.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Content
	}
	return out
}

func seqs(msgs []store.Message) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.Seq
	}
	return out
}

// wantErr fails the test unless err is target.
func (e *env) wantErr(what string, err, target error) {
	e.t.Helper()
	if !errors.Is(err, target) {
		e.t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
}
