package memorytest

import (
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

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
	// Another session's appends in between (they leave this one's seqs
	// dense: seqs are counted per session).
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
