package memorytest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

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
