package memorytest

import (
	"slices"
	"testing"
	"time"

	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// RunCapabilities runs the conformance suite of the optional capabilities
// store.Importer and store.Forgetter against the stores newStore returns
// (one call per subtest); a store without a capability fails its subtest.
// It checks their promises through the store alone:
//
//   - Import creates the session with every message in order, new
//     increasing sequence numbers and the messages' CreatedAt kept (to the
//     microsecond), calls its summary callback with the epoch and those
//     sequence numbers, refuses an id in use (ErrSessionExists) and an
//     invalid message (ErrInvalidMessage) writing nothing, and revives a
//     deleted id with a new epoch;
//   - Forget removes exactly the named messages (counts and the listing
//     preview follow), hands them and the epoch to its callback, and
//     changes nothing for an unknown seq (ErrUnknownMessage), another
//     user (ErrNotOwner) or a missing session (ErrNotFound).
func RunCapabilities(t *testing.T, newStore func(t *testing.T) store.Store) {
	for _, tc := range []struct {
		name string
		run  func(e *env)
	}{
		{"Import", testImport},
		{"Forget", testForget},
		{"Participants", testParticipants},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(&env{t: t, ctx: t.Context(), s: newStore(t), token: token(t)})
		})
	}
}

func testImport(e *env) {
	imp := e.s
	alice, bob := e.user("alice"), e.user("bob")
	other := e.id("other")
	e.mustCreate(other, bob)
	before := e.mustAppend(other, bob, user("x"))
	t0 := time.Date(2024, 3, 1, 10, 0, 0, 123456000, time.UTC)
	msgs := []store.Message{
		{Role: store.RoleSystem, Content: "sys", CreatedAt: t0},
		{Role: store.RoleUser, Content: "first question", CreatedAt: t0.Add(time.Minute)},
		{Role: store.RoleAssistant, Content: "", CreatedAt: t0.Add(2 * time.Minute), ToolCalls: sample()[2].ToolCalls[:1]},
		{Role: store.RoleTool, Content: "result", ToolCallID: sample()[2].ToolCalls[0].ID, Name: "fn", CreatedAt: t0.Add(3 * time.Minute)},
		{Role: store.RoleAssistant, Content: "done", Metadata: map[string]string{store.MetadataModelVariant: "m"}},
	}
	id := e.id("imported")
	var gotEpoch int64
	var gotSeqs []int64
	res, err := imp.Import(e.ctx, id, alice, msgs, func(epoch int64, seqs []int64) *summary.Summary {
		gotEpoch, gotSeqs = epoch, slices.Clone(seqs)
		return nil
	})
	if err != nil {
		e.t.Fatalf("Import: %v", err)
	}
	tail := e.mustTail(id, alice)
	e.wantContents("imported messages", tail.Messages, "sys", "first question", "", "result", "done")
	if res.Total != len(msgs) || tail.Total != len(msgs) || tail.Epoch != res.Epoch || gotEpoch != res.Epoch {
		e.t.Fatalf("Import result %+v, tail total %d epoch %d, callback epoch %d", res, tail.Total, tail.Epoch, gotEpoch)
	}
	if !slices.Equal(gotSeqs, seqs(tail.Messages)) || res.LastSeq != gotSeqs[len(gotSeqs)-1] {
		e.t.Fatalf("callback seqs %v, stored %v, LastSeq %d", gotSeqs, seqs(tail.Messages), res.LastSeq)
	}
	// Counted per session: bob's appends (up to seq before.LastSeq in his
	// session) do not show in the imported session's numbers.
	for i := 1; i < len(gotSeqs); i++ {
		if gotSeqs[i] != gotSeqs[i-1]+1 {
			e.t.Fatalf("imported seqs %v are not dense (bob's session is at %d)", gotSeqs, before.LastSeq)
		}
	}
	if gotSeqs[0] < 1 {
		e.t.Fatalf("imported seqs %v", gotSeqs)
	}
	for i, m := range tail.Messages[:4] {
		if d := m.CreatedAt.Sub(msgs[i].CreatedAt); d < -time.Microsecond || d > time.Microsecond {
			e.t.Errorf("message %d: CreatedAt %v, want %v", i, m.CreatedAt, msgs[i].CreatedAt)
		}
		if m.UserID != alice {
			e.t.Errorf("message %d: UserID %q, want %q", i, m.UserID, alice)
		}
	}
	if tail.Messages[4].CreatedAt.Before(time.Now().Add(-time.Hour)) {
		e.t.Errorf("a message without CreatedAt got %v, want about now", tail.Messages[4].CreatedAt)
	}
	if !sameMessage(tail.Messages[2], msgs[2]) || !sameMessage(tail.Messages[3], msgs[3]) || tail.Messages[4].Metadata[store.MetadataModelVariant] != "m" {
		e.t.Fatalf("tool calls, results or metadata not kept: %+v", tail.Messages[2:])
	}
	page, _ := e.sessions(alice, 0, 0)
	if len(page) != 1 || page[0].Preview != "first question" || page[0].MessageCount != len(msgs) {
		e.t.Fatalf("listing after import: %+v", page)
	}
	// An id in use, whoever owns it, and invalid messages: nothing written.
	_, err = imp.Import(e.ctx, other, alice, msgs, nil)
	e.wantErr("Import over another user's session", err, store.ErrSessionExists)
	e.wantContents("the other session", e.mustTail(other, bob).Messages, "x")
	bad := e.id("bad")
	_, err = imp.Import(e.ctx, bad, alice, []store.Message{user("ok"), {Role: store.RoleTool, Content: "no call id"}}, nil)
	e.wantErr("Import of an invalid message", err, store.ErrInvalidMessage)
	_, err = e.s.Tail(e.ctx, bad, alice, 1)
	e.wantErr("Tail after a refused import", err, store.ErrNotFound)
	// A deleted id is free again, with a new epoch.
	if err := e.s.Delete(e.ctx, id, alice); err != nil {
		e.t.Fatal(err)
	}
	again, err := imp.Import(e.ctx, id, bob, msgs[:2], nil)
	if err != nil || again.Epoch == res.Epoch || again.Total != 2 {
		e.t.Fatalf("Import over a deleted id: %+v, %v (old epoch %d)", again, err, res.Epoch)
	}
}

func testForget(e *env) {
	fg := e.s
	alice, bob := e.user("alice"), e.user("bob")
	id := e.id("forget")
	e.mustCreate(id, alice)
	e.mustAppend(id, alice, user("secret first"), assistant("a1"), user("second"), assistant("a2"), user("third"))
	msgs := e.mustTail(id, alice).Messages
	noop := func(*summary.Summary, int64, []store.Message) *summary.Summary { return nil }
	// Refusals change nothing.
	e.wantErr("Forget of an unknown seq", fg.Forget(e.ctx, id, alice, []int64{msgs[0].Seq, msgs[4].Seq + 1000}, noop), store.ErrUnknownMessage)
	e.wantErr("Forget by another user", fg.Forget(e.ctx, id, bob, []int64{msgs[0].Seq}, noop), store.ErrNotOwner)
	e.wantErr("Forget in a missing session", fg.Forget(e.ctx, e.id("missing"), alice, []int64{1}, noop), store.ErrNotFound)
	e.wantContents("after refusals", e.mustTail(id, alice).Messages, "secret first", "a1", "second", "a2", "third")
	var erased []string
	var epoch int64
	err := fg.Forget(e.ctx, id, alice, []int64{msgs[0].Seq, msgs[3].Seq}, func(_ *summary.Summary, ep int64, ms []store.Message) *summary.Summary {
		erased, epoch = contents(ms), ep
		return nil
	})
	if err != nil {
		e.t.Fatalf("Forget: %v", err)
	}
	tail := e.mustTail(id, alice)
	e.wantContents("after Forget", tail.Messages, "a1", "second", "third")
	if tail.Total != 3 || epoch != tail.Epoch || !slices.Equal(erased, []string{"secret first", "a2"}) {
		e.t.Fatalf("total %d, callback epoch %d (tail %d), erased %q", tail.Total, epoch, tail.Epoch, erased)
	}
	page, _ := e.sessions(alice, 0, 0)
	if len(page) != 1 || page[0].Preview != "second" || page[0].MessageCount != 3 {
		e.t.Fatalf("listing after Forget: %+v", page)
	}
	// Appends go on after the erased seqs.
	res := e.mustAppend(id, alice, user("fourth"))
	if res.Total != 4 || res.LastSeq <= msgs[4].Seq {
		e.t.Fatalf("append after Forget: %+v", res)
	}
}
