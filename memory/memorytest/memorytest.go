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
// optional capabilities store.Importer and store.Forgetter, and
// RunErasure the erasure scenarios of a Manager with its catalogue over a
// message store, a summary store and a catalogue index.
package memorytest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory"
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
func Run(t *testing.T, newStore func(t *testing.T) memory.MessageStore) {
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
	s     memory.MessageStore
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

func testCreate(e *env) {
	alice, bob := e.user("alice"), e.user("bob")
	id := e.id("s")
	if err := e.s.Create(e.ctx, id, alice); err != nil {
		e.t.Fatalf("Create: %v", err)
	}
	// An empty session exists: the n <= 0 tail probes it.
	for _, n := range []int{0, -1} {
		tail, err := e.s.Tail(e.ctx, id, alice, n)
		if err != nil || tail.Total != 0 || tail.Epoch <= 0 || len(tail.Messages) != 0 {
			e.t.Fatalf("Tail(n=%d) of a new session = %+v, %v; want Total 0, Epoch > 0, no messages", n, tail, err)
		}
	}
	if tail := e.mustTail(id, alice); tail.Total != 0 || len(tail.Messages) != 0 {
		e.t.Fatalf("Tail of a new session = %+v", tail)
	}
	if msgs, err := e.s.Range(e.ctx, id, alice, 0, math.MaxInt64, 0); err != nil || len(msgs) != 0 {
		e.t.Fatalf("Range of a new session = %+v, %v", msgs, err)
	}
	e.wantErr("Create by the owner again", e.s.Create(e.ctx, id, alice), store.ErrSessionExists)
	e.wantErr("Create by another user", e.s.Create(e.ctx, id, bob), store.ErrSessionExists)
	e.wantErr("another user's probe", func() error { _, err := e.s.Tail(e.ctx, id, bob, 0); return err }(), memory.ErrNotOwner)
	e.wantErr("probe of a missing session", func() error { _, err := e.s.Tail(e.ctx, e.id("missing"), alice, 0); return err }(), store.ErrNotFound)

	// Create makes a session that appends go to, without a new epoch.
	before, _ := e.s.Tail(e.ctx, id, alice, 0)
	res := e.mustAppend(id, alice, user("first"))
	if res.Total != 1 || res.Epoch != before.Epoch {
		e.t.Fatalf("first append to a created session = %+v, want Total 1, Epoch %d", res, before.Epoch)
	}
	// Creating a session whose id is in use with messages fails too.
	e.wantErr("Create over a session with messages", e.s.Create(e.ctx, id, bob), store.ErrSessionExists)
	e.wantContents("messages after a refused Create", e.mustTail(id, alice).Messages, "first")
}

func testAppendNeverCreates(e *env) {
	alice, bob := e.user("alice"), e.user("bob")
	id := e.id("s")
	// Neither a batch nor an empty append makes a missing session.
	for _, batch := range [][]store.Message{{user("hi"), assistant("hello")}, nil} {
		res, err := e.s.Append(e.ctx, id, alice, batch...)
		e.wantErr(fmt.Sprintf("Append of %d messages to a missing session", len(batch)), err, store.ErrNotFound)
		if res != (store.AppendResult{}) {
			e.t.Fatalf("refused Append reported %+v, want the zero AppendResult", res)
		}
		_, err = e.s.Tail(e.ctx, id, alice, 0)
		e.wantErr("probe after a refused Append", err, store.ErrNotFound)
	}
	if page, total, err := e.s.Sessions(e.ctx, alice, 0, 0); err != nil || total != 0 || len(page) != 0 {
		e.t.Fatalf("listing after appends to a missing session = %+v, %d, %v; want nothing", page, total, err)
	}
	// The id is still free for anyone's Create.
	e.mustCreate(id, alice)
	created := e.mustTail(id, alice)

	// With no messages, Append to one's own session stores nothing and
	// reports the session.
	res, err := e.s.Append(e.ctx, id, alice)
	if err != nil || res.Total != 0 || res.LastSeq != 0 || res.Epoch != created.Epoch {
		e.t.Fatalf("empty append to an empty session = %+v, %v; want Total 0, LastSeq 0, Epoch %d", res, err, created.Epoch)
	}
	res = e.mustAppend(id, alice, user("hi"), assistant("hello"))
	if res.Total != 2 || res.LastSeq <= 0 || res.Epoch != created.Epoch {
		e.t.Fatalf("first append = %+v, want Total 2, LastSeq > 0, Epoch %d", res, created.Epoch)
	}
	_, err = e.s.Append(e.ctx, id, bob, user("intruder"))
	e.wantErr("Append to another user's session", err, memory.ErrNotOwner)
	_, err = e.s.Append(e.ctx, id, bob)
	e.wantErr("empty Append to another user's session", err, memory.ErrNotOwner)
	tail := e.mustTail(id, alice)
	e.wantContents("owner's messages after refused appends", tail.Messages, "hi", "hello")
	if tail.Total != 2 || tail.Epoch != res.Epoch {
		e.t.Fatalf("tail = %+v, want Total 2, Epoch %d", tail, res.Epoch)
	}
	for _, m := range tail.Messages {
		if m.UserID != alice {
			e.t.Fatalf("message %q has UserID %q, want %q", m.Content, m.UserID, alice)
		}
	}
	if tail.Messages[1].Seq != res.LastSeq {
		e.t.Fatalf("last message has Seq %d, AppendResult.LastSeq %d", tail.Messages[1].Seq, res.LastSeq)
	}
	again, err := e.s.Append(e.ctx, id, alice)
	if err != nil || again.Total != 2 || again.LastSeq != 0 || again.Epoch != tail.Epoch {
		e.t.Fatalf("empty append to a session with messages = %+v, %v; want Total 2, LastSeq 0, Epoch %d", again, err, tail.Epoch)
	}
	e.wantContents("messages after an empty append", e.mustTail(id, alice).Messages, "hi", "hello")

	// A deleted session is missing to appends too: they do not bring it
	// back.
	e.mustCreate(e.id("deleted"), alice)
	e.mustAppend(e.id("deleted"), alice, user("bye"))
	if err := e.s.Delete(e.ctx, e.id("deleted"), alice); err != nil {
		e.t.Fatal(err)
	}
	_, err = e.s.Append(e.ctx, e.id("deleted"), alice, user("back?"))
	e.wantErr("Append to a deleted session", err, store.ErrNotFound)
	_, err = e.s.Tail(e.ctx, e.id("deleted"), alice, 0)
	e.wantErr("probe of a deleted session after an Append", err, store.ErrNotFound)
}

// op is one store operation run as user on session.
type op struct {
	name string
	run  func(e *env, session, user string) error
}

// ops are the operations that fail with ErrNotFound on a missing session
// and with ErrNotOwner on another user's.
var ops = []op{
	{"Append", func(e *env, id, u string) error { _, err := e.s.Append(e.ctx, id, u, user("x")); return err }},
	{"Append()", func(e *env, id, u string) error { _, err := e.s.Append(e.ctx, id, u); return err }},
	{"Tail(0)", func(e *env, id, u string) error { _, err := e.s.Tail(e.ctx, id, u, 0); return err }},
	{"Tail(5)", func(e *env, id, u string) error { _, err := e.s.Tail(e.ctx, id, u, 5); return err }},
	{"Range", func(e *env, id, u string) error {
		_, err := e.s.Range(e.ctx, id, u, 0, math.MaxInt64, 0)
		return err
	}},
	{"Range(limit)", func(e *env, id, u string) error { _, err := e.s.Range(e.ctx, id, u, 0, 1, 1); return err }},
	{"Delete", func(e *env, id, u string) error { return e.s.Delete(e.ctx, id, u) }},
}

func testNotOwner(e *env) {
	alice, bob := e.user("alice"), e.user("bob")
	full, empty := e.id("full"), e.id("empty")
	e.mustCreate(full, alice)
	first := e.mustAppend(full, alice, user("secret"), assistant("reply"))
	e.mustCreate(empty, alice)
	emptyEpoch := e.mustTail(empty, alice).Epoch
	for _, o := range ops {
		for _, id := range []string{full, empty} {
			e.wantErr(o.name+" of another user's session", o.run(e, id, bob), memory.ErrNotOwner)
		}
		// Nothing changed for the owner.
		tail := e.mustTail(full, alice)
		e.wantContents("owner's session after "+o.name+" by another user", tail.Messages, "secret", "reply")
		if tail.Epoch != first.Epoch {
			e.t.Fatalf("epoch changed from %d to %d after %s by another user", first.Epoch, tail.Epoch, o.name)
		}
		if tail := e.mustTail(empty, alice); tail.Total != 0 || tail.Epoch != emptyEpoch {
			e.t.Fatalf("owner's empty session after %s by another user = %+v", o.name, tail)
		}
	}
	if page, total, err := e.s.Sessions(e.ctx, bob, 0, 0); err != nil || total != 0 || len(page) != 0 {
		e.t.Fatalf("another user's listing = %+v, %d, %v; want nothing", page, total, err)
	}
}

func testNotFound(e *env) {
	alice := e.user("alice")
	missing := e.id("missing")
	for _, o := range ops {
		e.wantErr(o.name+" of a missing session", o.run(e, missing, alice), store.ErrNotFound)
	}
	// A deleted session is missing too.
	deleted := e.id("deleted")
	e.mustCreate(deleted, alice)
	e.mustAppend(deleted, alice, user("bye"))
	if err := e.s.Delete(e.ctx, deleted, alice); err != nil {
		e.t.Fatal(err)
	}
	for _, o := range ops {
		e.wantErr(o.name+" of a deleted session", o.run(e, deleted, alice), store.ErrNotFound)
	}
	// The failed operations created nothing.
	if page, total, err := e.s.Sessions(e.ctx, alice, 0, 0); err != nil || total != 0 || len(page) != 0 {
		e.t.Fatalf("listing after operations on missing sessions = %+v, %d, %v; want nothing", page, total, err)
	}
}

// sample returns messages using every field a Message carries.
func sample() []store.Message {
	return []store.Message{
		{Role: store.RoleSystem, Content: "be brief"},
		{Role: store.RoleUser, Content: "héllo 🌍, what's the weather in Paris?"},
		{Role: store.RoleAssistant, ToolCalls: []llms.ToolCall{
			{ID: "call-1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}},
			{ID: "call-2", Type: "function", FunctionCall: &llms.FunctionCall{Name: "time", Arguments: `{}`}},
		}},
		{Role: store.RoleTool, Content: `{"sky":"sunny"}`, ToolCallID: "call-1", Name: "weather"},
		{Role: store.RoleTool, Content: "12:00", ToolCallID: "call-2"},
		{Role: store.RoleAssistant, Content: "Sunny, at noon.", Metadata: map[string]string{store.MetadataModelVariant: "fast", "k": "v"}},
	}
}

// sameMessage reports whether got holds what want was appended with.
func sameMessage(got, want store.Message) bool {
	return got.Role == want.Role && got.Content == want.Content && got.ToolCallID == want.ToolCallID &&
		got.Name == want.Name && sameOrEmpty(got.ToolCalls, want.ToolCalls) && sameOrEmpty(got.Metadata, want.Metadata)
}

// sameOrEmpty compares two slices or maps, treating nil and empty alike.
func sameOrEmpty(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Len() == 0 && vb.Len() == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func testRoundTrip(e *env) {
	alice := e.user("alice")
	id := e.id("s")
	in := sample()
	e.mustCreate(id, alice)
	res := e.mustAppend(id, alice, in...)
	tail := e.mustTail(id, alice)
	if tail.Total != len(in) || len(tail.Messages) != len(in) {
		e.t.Fatalf("stored %d messages (Total %d), want %d", len(tail.Messages), tail.Total, len(in))
	}
	for i, m := range tail.Messages {
		if !sameMessage(m, in[i]) {
			e.t.Fatalf("message %d = %+v, want %+v", i, m, in[i])
		}
		if m.UserID != alice || m.CreatedAt.IsZero() || m.Seq <= 0 {
			e.t.Fatalf("message %d: UserID %q, CreatedAt %v, Seq %d; want %q, a time, Seq > 0", i, m.UserID, m.CreatedAt, m.Seq, alice)
		}
	}
	if last := tail.Messages[len(in)-1].Seq; last != res.LastSeq {
		e.t.Errorf("last Seq %d, AppendResult.LastSeq %d", last, res.LastSeq)
	}
	ranged, err := e.s.Range(e.ctx, id, alice, 0, math.MaxInt64, 0)
	if err != nil || len(ranged) != len(tail.Messages) {
		e.t.Fatalf("Range = %+v, %v; want what Tail returns: %+v", ranged, err, tail.Messages)
	}
	for i, m := range ranged {
		if w := tail.Messages[i]; !sameMessage(m, w) || m.Seq != w.Seq || m.UserID != w.UserID || !m.CreatedAt.Equal(w.CreatedAt) {
			e.t.Fatalf("Range message %d = %+v, Tail has %+v", i, m, w)
		}
	}

	// Neither the caller's messages nor the returned ones are shared with
	// the store.
	in[1].Content = "changed"
	in[2].ToolCalls[0].FunctionCall.Name = "changed"
	in[5].Metadata["k"] = "changed"
	tail.Messages[1].Content = "changed"
	tail.Messages[2].ToolCalls[0].FunctionCall.Arguments = "changed"
	tail.Messages[5].Metadata["k"] = "changed"
	ranged[3].Content = "changed"
	again := e.mustTail(id, alice)
	for i, m := range again.Messages {
		if !sameMessage(m, sample()[i]) {
			e.t.Errorf("after callers changed their copies, message %d = %+v, want %+v", i, m, sample()[i])
		}
	}
}

func testTail(e *env) {
	alice := e.user("alice")
	id := e.id("s")
	e.mustCreate(id, alice)
	e.mustAppend(id, alice, user("m1"), assistant("m2"))
	e.mustAppend(id, alice, user("m3"))
	e.mustAppend(id, alice, assistant("m4"), user("m5"))
	epoch := e.mustTail(id, alice).Epoch
	for _, tc := range []struct {
		n    int
		want []string
	}{
		{-5, nil},
		{0, nil},
		{1, []string{"m5"}},
		{2, []string{"m4", "m5"}},
		{3, []string{"m3", "m4", "m5"}},
		{4, []string{"m2", "m3", "m4", "m5"}},
		{5, []string{"m1", "m2", "m3", "m4", "m5"}},
		{6, []string{"m1", "m2", "m3", "m4", "m5"}},
		{1000, []string{"m1", "m2", "m3", "m4", "m5"}},
	} {
		tail, err := e.s.Tail(e.ctx, id, alice, tc.n)
		if err != nil {
			e.t.Fatalf("Tail(%d): %v", tc.n, err)
		}
		if tail.Total != 5 || tail.Epoch != epoch {
			e.t.Fatalf("Tail(%d) = Total %d, Epoch %d; want 5, %d", tc.n, tail.Total, tail.Epoch, epoch)
		}
		e.wantContents(fmt.Sprintf("Tail(%d)", tc.n), tail.Messages, tc.want...)
		if !slices.IsSorted(seqs(tail.Messages)) {
			e.t.Fatalf("Tail(%d) is not oldest first: seqs %v", tc.n, seqs(tail.Messages))
		}
	}
}

func testRange(e *env) {
	alice := e.user("alice")
	id := e.id("s")
	// Another session's appends in between make the seqs of this one
	// sparse in stores with a store-wide sequence.
	other := e.id("other")
	e.mustCreate(id, alice)
	e.mustCreate(other, alice)
	for i := 1; i <= 6; i++ {
		e.mustAppend(id, alice, user(fmt.Sprintf("m%d", i)))
		e.mustAppend(other, alice, user("noise"))
	}
	msgs := e.mustTail(id, alice).Messages
	s := seqs(msgs)
	e.wantContents("session", msgs, "m1", "m2", "m3", "m4", "m5", "m6")
	for _, tc := range []struct {
		name           string
		after, through int64
		limit          int
		want           []string
	}{
		{"everything", 0, math.MaxInt64, 0, []string{"m1", "m2", "m3", "m4", "m5", "m6"}},
		{"after is exclusive, through inclusive", s[1], s[3], 0, []string{"m3", "m4"}},
		{"bounds between seqs", s[1] + 1, s[3] + 1, 0, []string{"m3", "m4"}},
		{"single message", s[2], s[3], 0, []string{"m4"}},
		{"through the first", 0, s[0], 0, []string{"m1"}},
		{"after the last", s[5], math.MaxInt64, 0, nil},
		{"empty interval", s[3], s[3], 0, nil},
		{"inverted interval", s[4], s[1], 0, nil},
		{"limit keeps the oldest", s[0], math.MaxInt64, 2, []string{"m2", "m3"}},
		{"limit within bounds", 0, s[2], 2, []string{"m1", "m2"}},
		{"limit larger than the range", s[3], math.MaxInt64, 10, []string{"m5", "m6"}},
		{"negative limit means no limit", s[3], math.MaxInt64, -1, []string{"m5", "m6"}},
		{"limit exactly the range", s[1], s[4], 3, []string{"m3", "m4", "m5"}},
	} {
		got, err := e.s.Range(e.ctx, id, alice, tc.after, tc.through, tc.limit)
		if err != nil {
			e.t.Fatalf("Range %s: %v", tc.name, err)
		}
		e.wantContents("Range "+tc.name, got, tc.want...)
	}
	// Pages of a Range walk cover the session once, in order.
	var walked []string
	for after := int64(0); ; {
		page, err := e.s.Range(e.ctx, id, alice, after, math.MaxInt64, 4)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		walked = append(walked, contents(page)...)
		after = page[len(page)-1].Seq
	}
	if want := []string{"m1", "m2", "m3", "m4", "m5", "m6"}; !slices.Equal(walked, want) {
		e.t.Fatalf("paged Range = %q, want %q", walked, want)
	}
}

func testSeq(e *env) {
	alice, bob := e.user("alice"), e.user("bob")
	id := e.id("s")
	seen := map[int64]bool{}
	// check records the seqs of one incarnation: strictly increasing within
	// it, and never one that an earlier incarnation used.
	check := func(who string, res store.AppendResult) {
		e.t.Helper()
		msgs := e.mustTail(id, who).Messages
		var last int64
		for _, m := range msgs {
			if m.Seq <= last {
				e.t.Fatalf("seqs not strictly increasing: %v", seqs(msgs))
			}
			last = m.Seq
			if seen[m.Seq] {
				e.t.Fatalf("Seq %d reused after the session was deleted and re-created (seqs %v)", m.Seq, seqs(msgs))
			}
		}
		if last != res.LastSeq {
			e.t.Fatalf("newest Seq %d, AppendResult.LastSeq %d", last, res.LastSeq)
		}
		for _, m := range msgs {
			seen[m.Seq] = true
		}
	}
	e.mustCreate(id, alice)
	e.mustAppend(id, alice, user("a1"), assistant("a2"))
	check(alice, e.mustAppend(id, alice, user("a3")))

	// Re-created by another user.
	if err := e.s.Delete(e.ctx, id, alice); err != nil {
		e.t.Fatal(err)
	}
	e.mustCreate(id, bob)
	e.mustAppend(id, bob, user("b1"))
	check(bob, e.mustAppend(id, bob, assistant("b2"), user("b3"), assistant("b4")))

	// Re-created by Create.
	if err := e.s.Delete(e.ctx, id, bob); err != nil {
		e.t.Fatal(err)
	}
	if err := e.s.Create(e.ctx, id, alice); err != nil {
		e.t.Fatal(err)
	}
	check(alice, e.mustAppend(id, alice, user("c1"), user("c2")))
}

func testEpoch(e *env) {
	alice, bob := e.user("alice"), e.user("bob")
	id := e.id("s")
	epochs := map[int64]string{}
	// incarnation checks that epoch is new and positive.
	incarnation := func(how string, epoch int64) {
		e.t.Helper()
		if epoch <= 0 {
			e.t.Fatalf("%s: Epoch %d, want > 0", how, epoch)
		}
		if prev, ok := epochs[epoch]; ok {
			e.t.Fatalf("%s: Epoch %d already identified the incarnation made by %s", how, epoch, prev)
		}
		epochs[epoch] = how
	}
	// same checks that the session is still in incarnation epoch.
	same := func(how string, who string, epoch int64) {
		e.t.Helper()
		tail, err := e.s.Tail(e.ctx, id, who, 0)
		if err != nil || tail.Epoch != epoch {
			e.t.Fatalf("after %s: Tail = %+v, %v; want Epoch %d", how, tail, err, epoch)
		}
	}

	if err := e.s.Create(e.ctx, id, alice); err != nil {
		e.t.Fatal(err)
	}
	e1 := e.mustTail(id, alice).Epoch
	incarnation("Create", e1)
	for i := range 3 {
		if res := e.mustAppend(id, alice, user(fmt.Sprint(i))); res.Epoch != e1 {
			e.t.Fatalf("append %d went to Epoch %d, want %d", i, res.Epoch, e1)
		}
	}
	same("appends", alice, e1)
	_, _ = e.s.Append(e.ctx, id, bob, user("refused"))
	_ = e.s.Delete(e.ctx, id, bob)
	same("another user's refused append and delete", alice, e1)

	if err := e.s.Delete(e.ctx, id, alice); err != nil {
		e.t.Fatal(err)
	}
	_, err := e.s.Append(e.ctx, id, alice, user("refused"))
	e.wantErr("Append after delete", err, store.ErrNotFound)
	e.mustCreate(id, alice)
	res := e.mustAppend(id, alice, user("again"))
	incarnation("Create by the same user after delete", res.Epoch)
	same("the append to the re-created session", alice, res.Epoch)
	if res2 := e.mustAppend(id, alice, assistant("more")); res2.Epoch != res.Epoch {
		e.t.Fatalf("second append went to Epoch %d, want %d", res2.Epoch, res.Epoch)
	}

	if err := e.s.Delete(e.ctx, id, alice); err != nil {
		e.t.Fatal(err)
	}
	e.mustCreate(id, bob)
	empty, err := e.s.Append(e.ctx, id, bob)
	if err != nil {
		e.t.Fatal(err)
	}
	incarnation("Create by another user after delete", empty.Epoch)
	same("an empty append", bob, empty.Epoch)

	if err := e.s.Delete(e.ctx, id, bob); err != nil {
		e.t.Fatal(err)
	}
	if err := e.s.Create(e.ctx, id, bob); err != nil {
		e.t.Fatal(err)
	}
	incarnation("Create after delete", e.mustTail(id, bob).Epoch)
}

func testAtomicAppend(e *env) {
	alice := e.user("alice")
	id := e.id("s")
	e.mustCreate(id, alice)
	e.mustAppend(id, alice, user("before"))
	invalid := map[string]store.Message{
		"unknown role":                {Role: store.Role("robot"), Content: "beep"},
		"NUL byte":                    user("nul\x00byte"),
		"invalid UTF-8":               user("bad \xff utf-8"),
		"invalid UTF-8 in metadata":   {Role: store.RoleUser, Content: "ok", Metadata: map[string]string{"k": "\xfe"}},
		"tool result without call id": {Role: store.RoleTool, Content: "42"},
	}
	for name, bad := range invalid {
		for _, batch := range [][]store.Message{
			{bad},
			{user("valid"), assistant("valid too"), bad},
			{bad, user("valid")},
		} {
			_, err := e.s.Append(e.ctx, id, alice, batch...)
			e.wantErr(fmt.Sprintf("Append of a batch with a message with %s", name), err, store.ErrInvalidMessage)
			tail := e.mustTail(id, alice)
			if tail.Total != 1 {
				e.t.Fatalf("after a refused batch (%s): Total %d, want 1", name, tail.Total)
			}
			e.wantContents("session after a refused batch ("+name+")", tail.Messages, "before")

			// An invalid batch for a missing session is refused as
			// invalid or as missing, and makes nothing.
			missing := e.id("missing")
			_, err = e.s.Append(e.ctx, missing, alice, batch...)
			if !errors.Is(err, store.ErrInvalidMessage) && !errors.Is(err, store.ErrNotFound) {
				e.t.Fatalf("Append of a batch with a message with %s to a missing session: err = %v, want ErrInvalidMessage or ErrNotFound", name, err)
			}
			_, err = e.s.Tail(e.ctx, missing, alice, 0)
			e.wantErr("probe of a missing session after a refused batch", err, store.ErrNotFound)
		}
	}
	// A valid batch lands whole and contiguous.
	res := e.mustAppend(id, alice, user("b1"), assistant("b2"), user("b3"))
	if res.Total != 4 {
		e.t.Fatalf("Total after a batch of 3 = %d, want 4", res.Total)
	}
	tail := e.mustTail(id, alice)
	e.wantContents("session", tail.Messages, "before", "b1", "b2", "b3")
	if tail.Messages[3].Seq != res.LastSeq {
		e.t.Fatalf("last Seq %d, AppendResult.LastSeq %d", tail.Messages[3].Seq, res.LastSeq)
	}
}

// infoIDs returns the session ids of a listing, without the token prefix.
func (e *env) infoIDs(page []store.SessionInfo) []string {
	out := make([]string, len(page))
	for i, info := range page {
		out[i] = strings.TrimPrefix(info.SessionID, e.id(""))
	}
	return out
}

// sessions lists userID's sessions and fails the test on error.
func (e *env) sessions(userID string, limit, offset int) ([]store.SessionInfo, int) {
	e.t.Helper()
	page, total, err := e.s.Sessions(e.ctx, userID, limit, offset)
	if err != nil {
		e.t.Fatalf("Sessions(%d, %d): %v", limit, offset, err)
	}
	return page, total
}

func testSessions(e *env) {
	alice, bob := e.user("alice"), e.user("bob")
	long := strings.Repeat("é", 60)
	exact := strings.Repeat("ß", 50) // as long as a preview gets, uncut
	// Activity order, oldest first: empty, assistant-first, system-only,
	// long (whose second append below makes it the newest).
	e.mustCreate(e.id("empty"), alice)
	e.mustCreate(e.id("assistant-first"), alice)
	e.mustAppend(e.id("assistant-first"), alice, assistant("How can I help?"), user("short question"), user("second question"))
	e.mustCreate(e.id("bob"), bob)
	e.mustAppend(e.id("bob"), bob, user(exact))
	e.mustCreate(e.id("system-only"), alice)
	e.mustAppend(e.id("system-only"), alice, store.Message{Role: store.RoleSystem, Content: "be brief"})
	e.mustCreate(e.id("long"), alice)
	e.mustAppend(e.id("long"), alice, user(long))
	e.mustCreate(e.id("bob-empty"), bob)
	e.mustAppend(e.id("long"), alice, assistant("answer"))
	want := []string{"long", "system-only", "assistant-first", "empty"}

	page, total := e.sessions(alice, 0, 0)
	if total != 4 || len(page) != 4 {
		e.t.Fatalf("listing = %q, total %d; want %q, total 4", e.infoIDs(page), total, want)
	}
	e.checkOrder(page, want)
	byID := map[string]store.SessionInfo{}
	for _, info := range page {
		byID[strings.TrimPrefix(info.SessionID, e.id(""))] = info
		if info.UserID != alice || info.CreatedAt.IsZero() || info.LastActivity.Before(info.CreatedAt) {
			e.t.Errorf("%s: UserID %q, CreatedAt %v, LastActivity %v", info.SessionID, info.UserID, info.CreatedAt, info.LastActivity)
		}
	}
	for _, w := range []struct {
		id      string
		count   int
		preview string
	}{
		{"long", 2, strings.Repeat("é", 50) + "..."},
		{"system-only", 1, "Empty conversation"},
		{"assistant-first", 3, "short question"},
		{"empty", 0, "Empty conversation"},
	} {
		if got := byID[w.id]; got.MessageCount != w.count || got.Preview != w.preview {
			e.t.Errorf("%s: MessageCount %d, Preview %q; want %d, %q", w.id, got.MessageCount, got.Preview, w.count, w.preview)
		}
	}

	// Pagination: slices of the full listing, with the full count as total.
	ref := e.infoIDs(page)
	for _, tc := range []struct{ limit, offset int }{
		{2, 0}, {2, 2}, {3, 3}, {1, 1}, {10, 0}, {0, 1}, {-1, 2}, {2, -7}, {2, 4}, {0, 100},
	} {
		lo := min(max(tc.offset, 0), len(ref))
		hi := len(ref)
		if tc.limit > 0 {
			hi = min(lo+tc.limit, hi)
		}
		page, total := e.sessions(alice, tc.limit, tc.offset)
		if got := e.infoIDs(page); total != 4 || !slices.Equal(got, ref[lo:hi]) {
			e.t.Errorf("Sessions(limit %d, offset %d) = %q, total %d; want %q, total 4", tc.limit, tc.offset, got, total, ref[lo:hi])
		}
	}

	// Users see their own sessions only, empty ones included.
	page, total = e.sessions(bob, 0, 0)
	e.checkOrder(page, []string{"bob-empty", "bob"})
	bobs := map[string]store.SessionInfo{}
	for _, info := range page {
		bobs[strings.TrimPrefix(info.SessionID, e.id(""))] = info
	}
	if c, q := bobs["bob-empty"], bobs["bob"]; total != 2 || c.MessageCount != 0 || c.Preview != "Empty conversation" ||
		q.MessageCount != 1 || q.Preview != exact || c.UserID != bob || q.UserID != bob {
		e.t.Errorf("bob's listing = %+v, total %d", page, total)
	}
	if page, total := e.sessions(e.user("nobody"), 10, 0); total != 0 || len(page) != 0 {
		e.t.Errorf("listing of a user without sessions = %+v, total %d", page, total)
	}

	// Deleted sessions leave the listing.
	if err := e.s.Delete(e.ctx, e.id("system-only"), alice); err != nil {
		e.t.Fatal(err)
	}
	page, total = e.sessions(alice, 0, 0)
	if total != 3 {
		e.t.Fatalf("total after a delete = %d, want 3", total)
	}
	e.checkOrder(page, []string{"long", "assistant-first", "empty"})
}

// checkOrder fails the test unless page lists exactly the sessions of
// want, most recent activity first, where want is in the order the
// sessions were last written, newest first. Sessions whose LastActivity
// is the same instant may come in either order.
func (e *env) checkOrder(page []store.SessionInfo, want []string) {
	e.t.Helper()
	got := e.infoIDs(page)
	if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		e.t.Fatalf("listing = %q, want the sessions %q", got, want)
	}
	at := map[string]int{}
	for i, id := range got {
		at[id] = i
	}
	for i := 1; i < len(want); i++ {
		newer, older := page[at[want[i-1]]], page[at[want[i]]]
		if newer.LastActivity.Before(older.LastActivity) {
			e.t.Fatalf("%s was written after %s but has an earlier LastActivity (%v < %v)",
				want[i-1], want[i], newer.LastActivity, older.LastActivity)
		}
	}
	for i := 1; i < len(page); i++ {
		if page[i-1].LastActivity.Before(page[i].LastActivity) {
			e.t.Fatalf("listing %q is not newest activity first: %v before %v", got, page[i-1].LastActivity, page[i].LastActivity)
		}
	}
	if !slices.Equal(got, want) {
		// Both orders are sorted newest LastActivity first, so they can
		// only differ between sessions active at the same instant.
		e.t.Logf("listing %q differs from write order %q only between sessions active at the same instant", got, want)
	}
}

func testDelete(e *env) {
	alice, bob := e.user("alice"), e.user("bob")
	id, kept := e.id("s"), e.id("kept")
	e.mustCreate(id, alice)
	e.mustAppend(id, alice, user("private"), assistant("reply"))
	e.mustCreate(kept, alice)
	e.mustAppend(kept, alice, user("keep me"))
	if err := e.s.Delete(e.ctx, id, alice); err != nil {
		e.t.Fatal(err)
	}
	for _, o := range ops {
		e.wantErr(o.name+" after Delete", o.run(e, id, alice), store.ErrNotFound)
	}
	page, total := e.sessions(alice, 0, 0)
	if got := e.infoIDs(page); total != 1 || !slices.Equal(got, []string{"kept"}) {
		e.t.Fatalf("listing after Delete = %q, total %d; want [kept], 1", got, total)
	}
	e.wantContents("the other session", e.mustTail(kept, alice).Messages, "keep me")

	// The id is free: another user may take it and sees nothing of the
	// deleted session; its former owner is now a stranger to it.
	if err := e.s.Create(e.ctx, id, bob); err != nil {
		e.t.Fatalf("Create of a deleted id by another user: %v", err)
	}
	if tail := e.mustTail(id, bob); tail.Total != 0 || len(tail.Messages) != 0 {
		e.t.Fatalf("re-created session shows the deleted one: %+v", tail)
	}
	if msgs, err := e.s.Range(e.ctx, id, bob, 0, math.MaxInt64, 0); err != nil || len(msgs) != 0 {
		e.t.Fatalf("Range of the re-created session = %+v, %v", msgs, err)
	}
	for _, o := range ops {
		e.wantErr(o.name+" by the former owner", o.run(e, id, alice), memory.ErrNotOwner)
	}
	e.mustAppend(id, bob, user("bob's now"))
	e.wantContents("re-created session", e.mustTail(id, bob).Messages, "bob's now")
}

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

// testReplace checks store.Replacer, for stores that have it: an invalid
// replacement, or one by another user, changes nothing; a valid one makes a
// new incarnation holding exactly the new messages, owned as before; a
// missing session is created.
func testReplace(e *env) {
	r, ok := e.s.(store.Replacer)
	if !ok {
		e.t.Skip("the store is no store.Replacer")
	}
	id, alice, bob := e.id("replace"), e.user("alice"), e.user("bob")
	e.mustCreate(id, alice)
	e.mustAppend(id, alice, user("one"), assistant("two"))
	before := e.mustTail(id, alice)
	invalid := map[string]store.Message{
		"NUL byte":               {Role: store.RoleUser, Content: "a\x00b"},
		"invalid UTF-8":          {Role: store.RoleUser, Content: "a\xffb"},
		"tool result without id": {Role: store.RoleTool, Content: "42"},
		"unknown role":           {Role: "robot", Content: "beep"},
	}
	for name, bad := range invalid {
		_, err := r.Replace(e.ctx, id, alice, user("new"), bad)
		e.wantErr("Replace with a message with "+name, err, store.ErrInvalidMessage)
		e.wantContents("history after an invalid replacement ("+name+")", e.mustTail(id, alice).Messages, "one", "two")
	}
	_, err := r.Replace(e.ctx, id, bob, user("bob's"))
	e.wantErr("another user's Replace", err, store.ErrNotOwner)
	e.wantContents("history after another user's Replace", e.mustTail(id, alice).Messages, "one", "two")

	res, err := r.Replace(e.ctx, id, alice, user("x"), assistant("y"), user("z"))
	if err != nil {
		e.t.Fatalf("Replace: %v", err)
	}
	after := e.mustTail(id, alice)
	e.wantContents("history after Replace", after.Messages, "x", "y", "z")
	if res.Total != 3 || after.Total != 3 || res.Epoch != after.Epoch || after.Epoch == before.Epoch || res.LastSeq != after.Messages[2].Seq {
		e.t.Fatalf("Replace = %+v, tail %+v (epoch before %d)", res, after, before.Epoch)
	}
	if after.Messages[0].Seq <= before.Messages[1].Seq {
		e.t.Fatalf("a replaced history reuses seqs: %v after %v", seqs(after.Messages), seqs(before.Messages))
	}
	page, _ := e.sessions(alice, 0, 0)
	if len(page) != 1 || page[0].MessageCount != 3 || page[0].Preview != "x" {
		e.t.Fatalf("listing after Replace = %+v", page)
	}
	// A missing session is created; an empty replacement empties it.
	fresh := e.id("replace-fresh")
	if _, err := r.Replace(e.ctx, fresh, alice, user("hello")); err != nil {
		e.t.Fatalf("Replace of a missing session: %v", err)
	}
	e.wantContents("created by Replace", e.mustTail(fresh, alice).Messages, "hello")
	if _, err := r.Replace(e.ctx, fresh, alice); err != nil {
		e.t.Fatalf("empty Replace: %v", err)
	}
	if t := e.mustTail(fresh, alice); t.Total != 0 {
		e.t.Fatalf("empty Replace left %d messages", t.Total)
	}
}

// testSetMessagesRace races ChatHistory.SetMessages by the owner against
// another user's saves to the same id: the owner keeps the id and the
// replacement, every time.
func testSetMessagesRace(e *env) {
	mgr, err := memory.NewManager(e.s, memory.DefaultConfig())
	if err != nil {
		e.t.Fatal(err)
	}
	defer func() { _ = mgr.Close() }()
	rounds := 200
	if testing.Short() {
		rounds = 50
	}
	alice, bob := e.user("alice"), e.user("bob")
	for i := range rounds {
		id := e.id(fmt.Sprintf("setmessages-%d", i))
		if err := mgr.SaveTurn(e.ctx, id, alice, "original", "answer"); err != nil {
			e.t.Fatal(err)
		}
		var wg sync.WaitGroup
		var setErr, bobErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			setErr = mgr.ChatHistory(id, alice).SetMessages(e.ctx, []llms.ChatMessage{
				llms.HumanChatMessage{Content: "replaced"}, llms.AIChatMessage{Content: "again"}})
		}()
		go func() {
			defer wg.Done()
			runtime.Gosched()
			bobErr = mgr.SaveTurn(e.ctx, id, bob, "bob's", "turn")
		}()
		wg.Wait()
		if setErr != nil {
			e.t.Fatalf("round %d: SetMessages: %v", i, setErr)
		}
		if !errors.Is(bobErr, store.ErrNotOwner) {
			e.t.Fatalf("round %d: another user's save to the id: %v, want ErrNotOwner", i, bobErr)
		}
		msgs, err := mgr.Messages(e.ctx, id, alice, 0, 0)
		if err != nil {
			e.t.Fatalf("round %d: the owner lost the session: %v", i, err)
		}
		e.wantContents(fmt.Sprintf("round %d", i), msgs, "replaced", "again")
		// An invalid replacement leaves the history as it was.
		err = mgr.ChatHistory(id, alice).SetMessages(e.ctx, []llms.ChatMessage{
			llms.HumanChatMessage{Content: "fine"}, llms.ToolChatMessage{Content: "no call id"}})
		e.wantErr("invalid SetMessages", err, store.ErrInvalidMessage)
		msgs, err = mgr.Messages(e.ctx, id, alice, 0, 0)
		if err != nil {
			e.t.Fatal(err)
		}
		e.wantContents(fmt.Sprintf("round %d after an invalid SetMessages", i), msgs, "replaced", "again")
	}
}
