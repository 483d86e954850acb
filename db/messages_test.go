package db_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

func sampleMessages() []store.Message {
	long := strings.Repeat("x", 4990) + "🚀é" + strings.Repeat("y", 8)
	return []store.Message{
		{Role: store.RoleSystem, Content: "You are helpful."},
		{Role: store.RoleUser, Content: `Order "#1234" — naïve café ☕ 🚀🇰🇷 한국어 日本語 'quoted' \backslash`},
		{Role: store.RoleAssistant, Content: "", ToolCalls: []llms.ToolCall{
			{ID: "call_1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "lookup_order", Arguments: `{"id":"#1234","nested":{"a":[1,2,3]},"html":"<b>&</b>"}`}},
			{ID: "call_2", Type: "function", FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: `{"city":"서울"}`}},
			{ID: "call_3", Type: "custom"}, // no function: stays nil
		}},
		{Role: store.RoleTool, Content: `{"status":"shipped","eta":"2024-05-01"}`, ToolCallID: "call_1", Name: "lookup_order"},
		{Role: store.RoleTool, Content: "sunny, 23°C", ToolCallID: "call_2"},
		{Role: store.RoleAssistant, Content: "Your order ships soon. 📦", Metadata: map[string]string{store.MetadataModelVariant: "gpt-x-mini", "trace": `{"json":"inside"}`}},
		{Role: store.RoleUser, Content: long, Name: "custom-role"},
		{Role: store.RoleAssistant, Content: "  leading and trailing spaces \n\t"},
	}
}

func TestMessageRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	want := sampleMessages()

	before := time.Now()
	res := mustAppend(t, ctx, f.messages, "s1", "alice", want...)
	after := time.Now()
	if res.Total != len(want) {
		t.Fatalf("Total = %d, want %d", res.Total, len(want))
	}

	got := allMessages(t, ctx, f.messages, "s1", "alice")
	if len(got) != len(want) {
		t.Fatalf("read %d messages, want %d", len(got), len(want))
	}
	var prev int64
	for i, g := range got {
		if g.Seq <= prev {
			t.Errorf("message %d: seq %d not above %d", i, g.Seq, prev)
		}
		prev = g.Seq
		if g.UserID != "alice" {
			t.Errorf("message %d: UserID = %q", i, g.UserID)
		}
		if g.CreatedAt.Before(before.Add(-time.Minute)) || g.CreatedAt.After(after.Add(time.Minute)) {
			t.Errorf("message %d: CreatedAt %v not near %v", i, g.CreatedAt, before)
		}
		g.Seq, g.UserID, g.CreatedAt = 0, "", time.Time{}
		if !reflect.DeepEqual(g, want[i]) {
			t.Errorf("message %d:\n got %#v\nwant %#v", i, g, want[i])
		}
	}
	if res.LastSeq != got[len(got)-1].Seq {
		t.Errorf("LastSeq = %d, want %d", res.LastSeq, got[len(got)-1].Seq)
	}

	tail, err := f.messages.Tail(ctx, "s1", "alice", 3)
	if err != nil {
		t.Fatal(err)
	}
	if tail.Total != len(want) || len(tail.Messages) != 3 || !reflect.DeepEqual(tail.Messages, got[len(got)-3:]) {
		t.Errorf("Tail(3) = %d, %+v; want the last 3 of %d", tail.Total, tail.Messages, len(want))
	}
	if tail.Epoch <= 0 || tail.Epoch != res.Epoch {
		t.Errorf("Tail.Epoch = %d, Append's = %d; want the same positive epoch", tail.Epoch, res.Epoch)
	}
}

func TestChatMessagesRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	chat := []llms.ChatMessage{
		llms.SystemChatMessage{Content: "sys"},
		llms.HumanChatMessage{Content: "what's the weather in 東京? 🌧"},
		llms.AIChatMessage{Content: "checking", ToolCalls: []llms.ToolCall{{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: `{"city":"Tokyo"}`}}}},
		llms.ToolChatMessage{ID: "c1", Content: `{"temp": 18}`},
		llms.AIChatMessage{Content: "18 degrees"},
	}
	var msgs []store.Message
	for _, cm := range chat {
		m, err := store.FromChatMessage(cm)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	mustAppend(t, ctx, f.messages, "chat", "u", msgs...)
	var got []llms.ChatMessage
	for _, m := range allMessages(t, ctx, f.messages, "chat", "u") {
		got = append(got, m.ChatMessage())
	}
	if !reflect.DeepEqual(got, chat) {
		t.Errorf("round trip:\n got %#v\nwant %#v", got, chat)
	}
}

func TestAppendRejectsInvalidMessages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	cases := map[string]store.Message{
		"nul byte":         {Role: store.RoleUser, Content: "a\x00b"},
		"invalid utf-8":    {Role: store.RoleUser, Content: "a\xffb"},
		"unknown role":     {Role: "wizard", Content: "x"},
		"tool without id":  {Role: store.RoleTool, Content: "x"},
		"nul in metadata":  {Role: store.RoleAssistant, Content: "x", Metadata: map[string]string{"k": "\x00"}},
		"nul in arguments": {Role: store.RoleAssistant, ToolCalls: []llms.ToolCall{{ID: "c", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: "\x00"}}}},
	}
	for name, bad := range cases {
		_, err := f.messages.Append(ctx, "s-"+name, "alice", user("fine"), bad)
		if !errors.Is(err, store.ErrInvalidMessage) {
			t.Errorf("%s: err = %v, want ErrInvalidMessage", name, err)
		}
		if _, _, _, exists := sessionRow(t, ctx, f.d, "s-"+name); exists {
			t.Errorf("%s: the session was created by a rejected append", name)
		}
	}
	if _, err := f.messages.Append(ctx, "bad\x00id", "alice", user("x")); !errors.Is(err, store.ErrInvalidMessage) {
		t.Errorf("NUL in session id: err = %v, want ErrInvalidMessage", err)
	}
	if _, err := f.messages.Append(ctx, "s", "bad\xff", user("x")); !errors.Is(err, store.ErrInvalidMessage) {
		t.Errorf("invalid user id: err = %v, want ErrInvalidMessage", err)
	}
	if err := f.messages.Create(ctx, "bad\x00id", "alice"); !errors.Is(err, store.ErrInvalidMessage) {
		t.Errorf("Create(NUL id): err = %v, want ErrInvalidMessage", err)
	}
	// Ids that cannot be stored name no session.
	if _, err := f.messages.Tail(ctx, "bad\x00id", "alice", 5); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Tail(NUL id) = %v, want ErrNotFound", err)
	}
	if _, err := f.messages.Range(ctx, "bad\xffid", "alice", 0, 10, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Range(invalid id) = %v, want ErrNotFound", err)
	}
	if err := f.messages.Delete(ctx, "bad\x00id", "alice"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Delete(NUL id) = %v, want ErrNotFound", err)
	}
	var n int
	if err := f.d.GetContext(ctx, &n, `SELECT count(*) FROM strata_messages`); err != nil || n != 0 {
		t.Errorf("stored %d messages (%v), want 0", n, err)
	}
}

// installFailingTrigger makes PostgreSQL reject, mid-statement, any message
// whose content is "boom" — a database-side failure in the middle of a
// batch.
func installFailingTrigger(t *testing.T, f *fixture) {
	t.Helper()
	ctx := testCtx(t)
	for _, q := range []string{
		`CREATE FUNCTION strata_test_boom() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN
		   IF NEW.content = 'boom' THEN RAISE EXCEPTION 'boom rejected'; END IF;
		   RETURN NEW;
		 END $$`,
		`CREATE TRIGGER strata_test_boom BEFORE INSERT ON strata_messages
		 FOR EACH ROW EXECUTE FUNCTION strata_test_boom()`,
	} {
		if _, err := f.d.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAppendBatchIsAtomic(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	installFailingTrigger(t, f)

	// A new session: none of the messages survive, nor the count.
	ensureSession(t, ctx, f.messages, "new", "alice")
	_, err := f.messages.Append(ctx, "new", "alice", user("q1"), assistant("a1"), user("q2"), assistant("boom"), user("q3"))
	if err == nil || !strings.Contains(err.Error(), "boom rejected") || !strings.HasPrefix(err.Error(), "db: append") {
		t.Fatalf("err = %v, want the wrapped trigger error", err)
	}
	if n := countRows(t, ctx, f.d, "strata_messages", "new"); n != 0 {
		t.Errorf("%d messages stored, want 0", n)
	}
	if tail, err := f.messages.Tail(ctx, "new", "alice", 0); err != nil || tail.Total != 0 {
		t.Errorf("after failed first append: Tail = %+v, %v; want an empty session", tail, err)
	}

	// An existing session: the count and the history are unchanged.
	mustAppend(t, ctx, f.messages, "old", "alice", user("q1"), assistant("a1"))
	if _, err := f.messages.Append(ctx, "old", "alice", user("q2"), assistant("boom")); err == nil {
		t.Fatal("append with a rejected message succeeded")
	}
	tail, err := f.messages.Tail(ctx, "old", "alice", 10)
	if err != nil {
		t.Fatal(err)
	}
	if tail.Total != 2 || len(tail.Messages) != 2 || tail.Messages[1].Content != "a1" {
		t.Errorf("after failed append: %+v, want the original 2 messages", tail)
	}
	res := mustAppend(t, ctx, f.messages, "old", "alice", user("q2"), assistant("a2"))
	if res.Total != 4 {
		t.Errorf("Total = %d, want 4", res.Total)
	}
}

func TestOwnershipEnforced(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	res := mustAppend(t, ctx, f.messages, "s", "alice", user("mine"))
	_, err := f.messages.Append(ctx, "s", "bob", user("intrusion"), assistant("x"))
	if !errors.Is(err, memory.ErrNotOwner) {
		t.Fatalf("foreign append: err = %v, want ErrNotOwner", err)
	}
	if _, err := f.messages.Append(ctx, "s", "bob"); !errors.Is(err, memory.ErrNotOwner) {
		t.Errorf("empty foreign append: err = %v, want ErrNotOwner", err)
	}
	if r, err := f.messages.Append(ctx, "s", "alice"); err != nil || r.Total != 1 || r.Epoch != res.Epoch || r.LastSeq != 0 {
		t.Errorf("empty append by owner = %+v, %v; want Total 1, epoch %d, LastSeq 0", r, err, res.Epoch)
	}
	if _, err := f.messages.Tail(ctx, "s", "bob", 10); !errors.Is(err, memory.ErrNotOwner) {
		t.Errorf("foreign Tail: err = %v, want ErrNotOwner", err)
	}
	if got, err := f.messages.Range(ctx, "s", "bob", 0, 1<<62, 0); !errors.Is(err, memory.ErrNotOwner) || got != nil {
		t.Errorf("foreign Range = %v, %v; want nothing and ErrNotOwner", got, err)
	}
	if err := f.messages.Delete(ctx, "s", "bob"); !errors.Is(err, memory.ErrNotOwner) {
		t.Errorf("foreign Delete: err = %v, want ErrNotOwner", err)
	}
	if err := f.messages.Create(ctx, "s", "bob"); !errors.Is(err, store.ErrSessionExists) {
		t.Errorf("Create on another user's id: err = %v, want ErrSessionExists", err)
	}
	if err := f.messages.Create(ctx, "s", "alice"); !errors.Is(err, store.ErrSessionExists) {
		t.Errorf("Create on one's own id: err = %v, want ErrSessionExists", err)
	}
	if owner, _, _, _ := sessionRow(t, ctx, f.d, "s"); owner != "alice" {
		t.Errorf("owner = %q, want alice", owner)
	}
	msgs := allMessages(t, ctx, f.messages, "s", "alice")
	if len(msgs) != 1 || msgs[0].Content != "mine" {
		t.Errorf("history = %+v, want only alice's message", msgs)
	}
	var count int
	if err := f.d.GetContext(ctx, &count, `SELECT message_count FROM strata_sessions WHERE session_id = 's'`); err != nil || count != 1 {
		t.Errorf("message_count = %d (%v), want 1", count, err)
	}
	for _, op := range []struct {
		name string
		err  error
	}{
		{"Tail", func() error { _, err := f.messages.Tail(ctx, "none", "alice", 5); return err }()},
		{"Range", func() error { _, err := f.messages.Range(ctx, "none", "alice", 0, 10, 0); return err }()},
		{"Delete", f.messages.Delete(ctx, "none", "alice")},
	} {
		if !errors.Is(op.err, store.ErrNotFound) {
			t.Errorf("%s of a missing session: err = %v, want ErrNotFound", op.name, op.err)
		}
	}
}

// TestCreateMakesVisibleEmptySession: a created session is a real row,
// seen at once by another replica (another pool), listed, readable by its
// owner with zero messages, and the first append keeps its epoch.
func TestCreateMakesVisibleEmptySession(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	other := db.NewMessageStore(dbtest.Open(t, f.schema.URL))
	if err := f.messages.Create(ctx, "c", "alice"); err != nil {
		t.Fatal(err)
	}
	tail, err := other.Tail(ctx, "c", "alice", 10)
	if err != nil || tail.Total != 0 || len(tail.Messages) != 0 || tail.Epoch <= 0 {
		t.Fatalf("Tail on another replica = %+v, %v; want an empty session with an epoch", tail, err)
	}
	if err := other.Create(ctx, "c", "bob"); !errors.Is(err, store.ErrSessionExists) {
		t.Errorf("second Create on another replica: %v, want ErrSessionExists", err)
	}
	if _, err := other.Append(ctx, "c", "bob", user("x")); !errors.Is(err, memory.ErrNotOwner) {
		t.Errorf("foreign append to a created session: %v, want ErrNotOwner", err)
	}
	page, total, err := other.Sessions(ctx, "alice", 0, 0)
	if err != nil || total != 1 || len(page) != 1 || page[0].SessionID != "c" || page[0].MessageCount != 0 || page[0].Preview != "Empty conversation" {
		t.Errorf("Sessions = %+v, %d, %v; want the empty session", page, total, err)
	}
	res := mustAppend(t, ctx, other, "c", "alice", user("first"))
	if res.Epoch != tail.Epoch || res.Total != 1 {
		t.Errorf("first append = %+v, want Total 1 in epoch %d", res, tail.Epoch)
	}
}

func TestConcurrentFirstWritersOneOwner(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	const writers = 12
	errs := make([]error, writers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			u := fmt.Sprintf("user-%d", i)
			if err := f.messages.Create(ctx, "contested", u); err != nil && !errors.Is(err, store.ErrSessionExists) {
				errs[i] = err
				return
			}
			_, errs[i] = f.messages.Append(ctx, "contested", u, user(fmt.Sprintf("from %d", i)), assistant("ok"))
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("users %d and %d both appended", winner, i)
			}
			winner = i
		case !errors.Is(err, memory.ErrNotOwner):
			t.Errorf("user %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("nobody could append")
	}
	owner, _, _, _ := sessionRow(t, ctx, f.d, "contested")
	if want := fmt.Sprintf("user-%d", winner); owner != want {
		t.Errorf("owner = %q, want %q", owner, want)
	}
	for _, m := range allMessages(t, ctx, f.messages, "contested", owner) {
		if m.UserID != owner {
			t.Errorf("message by %q in %q's session", m.UserID, owner)
		}
	}
}

func TestSeqMonotonicAndNeverReused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	var last int64
	for i := range 5 {
		res := mustAppend(t, ctx, f.messages, "s", "alice", user(fmt.Sprint("q", i)), assistant(fmt.Sprint("a", i)))
		if res.LastSeq <= last {
			t.Fatalf("LastSeq %d not above %d", res.LastSeq, last)
		}
		last = res.LastSeq
		// Another session's appends interleave; they must not disturb s.
		mustAppend(t, ctx, f.messages, "other", "alice", user("x"))
	}
	old := allMessages(t, ctx, f.messages, "s", "alice")
	if err := f.messages.Delete(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	res := mustAppend(t, ctx, f.messages, "s", "bob", user("new life"))
	if res.Total != 1 || res.LastSeq <= last {
		t.Fatalf("after re-creation: %+v, want Total 1 and a seq above %d", res, last)
	}
	for _, m := range old {
		if got, _ := f.messages.Range(ctx, "s", "bob", m.Seq-1, m.Seq, 0); len(got) != 0 {
			t.Errorf("old seq %d answers in the new incarnation: %+v", m.Seq, got)
		}
	}
}

func TestTailAndRange(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	for i := range 25 {
		mustAppend(t, ctx, f.messages, "s", "u", user(fmt.Sprint(i)))
	}
	all := allMessages(t, ctx, f.messages, "s", "u")
	if len(all) != 25 {
		t.Fatalf("%d messages, want 25", len(all))
	}
	for i, m := range all {
		if m.Content != fmt.Sprint(i) {
			t.Fatalf("message %d = %q", i, m.Content)
		}
	}
	for _, n := range []int{-1, 0, 1, 10, 25, 100} {
		tail, err := f.messages.Tail(ctx, "s", "u", n)
		if err != nil {
			t.Fatal(err)
		}
		want := all[max(0, 25-max(n, 0)):]
		if n <= 0 {
			want = nil
		}
		if tail.Total != 25 || !reflect.DeepEqual(tail.Messages, want) {
			t.Errorf("Tail(%d) = total %d, %d messages; want 25, %d", n, tail.Total, len(tail.Messages), len(want))
		}
	}

	check := func(after, through int64, limit int, want []store.Message) {
		t.Helper()
		got, err := f.messages.Range(ctx, "s", "u", after, through, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
			t.Errorf("Range(%d, %d, %d) = %d messages, want %d", after, through, limit, len(got), len(want))
		}
	}
	check(all[4].Seq, all[14].Seq, 0, all[5:15])
	check(all[4].Seq, all[14].Seq, 3, all[5:8])
	check(0, all[24].Seq, 0, all)
	check(all[24].Seq, all[24].Seq+1000, 0, nil)
	check(all[10].Seq, all[10].Seq, 0, nil)
	check(all[10].Seq, all[5].Seq, 0, nil)
}

// TestDeleteLeavesTombstone: a delete removes the session's messages,
// summary and catalogue document in one transaction and keeps a tombstone
// (no owner, no messages) that reads as a missing session everywhere; the
// fold lease of a fold still running survives. The id is then free for
// anyone, under a new epoch.
func TestDeleteLeavesTombstone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	res := mustAppend(t, ctx, f.messages, "s", "alice", user("q"), assistant("a"))
	mustAppend(t, ctx, f.messages, "keep", "alice", user("q"), assistant("a"))
	saveSummary(t, ctx, f, "s", res.Epoch, res.LastSeq, 3)
	if _, err := f.d.ExecContext(ctx, `INSERT INTO strata_session_index (session_id, title, source) VALUES ('s', 'Trip', 'turns')`); err != nil {
		t.Fatal(err)
	}
	release, ok, err := leaseOf(f.messages).TryLockFold(ctx, "s", time.Minute)
	if err != nil || !ok {
		t.Fatalf("TryLockFold = %v, %v", ok, err)
	}

	if err := f.messages.Delete(ctx, "s", "alice"); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"strata_messages", "strata_summaries", "strata_session_index"} {
		if n := countRows(t, ctx, f.d, table, "s"); n != 0 {
			t.Errorf("%s still has %d rows of the deleted session", table, n)
		}
	}
	owner, epoch, deleted, exists := sessionRow(t, ctx, f.d, "s")
	if !exists || !deleted || owner != "" || epoch != res.Epoch {
		t.Errorf("session row after delete: owner %q epoch %d deleted %v exists %v; want an ownerless tombstone of epoch %d",
			owner, epoch, deleted, exists, res.Epoch)
	}
	if n := countRows(t, ctx, f.d, "strata_fold_leases", "s"); n != 1 {
		t.Errorf("the running fold's lease was removed by the delete (%d lease rows)", n)
	}
	if _, ok, _ := f.sums.TryLockFold(ctx, "s", time.Minute); ok {
		t.Error("another fold got the lease of a fold still running, after a delete")
	}
	release()

	// The tombstone reads as a missing session.
	if _, err := f.messages.Tail(ctx, "s", "alice", 5); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Tail after delete: %v, want ErrNotFound", err)
	}
	if _, err := f.messages.Range(ctx, "s", "alice", 0, 1<<62, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Range after delete: %v, want ErrNotFound", err)
	}
	if err := f.messages.Delete(ctx, "s", "alice"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second Delete: %v, want ErrNotFound", err)
	}
	if page, total, err := f.messages.Sessions(ctx, "alice", 0, 0); err != nil || total != 1 || len(page) != 1 || page[0].SessionID != "keep" {
		t.Errorf("Sessions after delete = %+v, %d, %v; want only keep", page, total, err)
	}
	if sm, err := f.sums.Get(ctx, "s"); err != nil || sm != nil {
		t.Errorf("summary after delete = %+v, %v", sm, err)
	}
	if n := countRows(t, ctx, f.d, "strata_messages", "keep"); n != 2 {
		t.Errorf("other session lost messages: %d left", n)
	}
	// The catalogue writes no document for a tombstone, as for a missing
	// session: its statements check the session's live row themselves.
	if err := db.NewCatalogIndex(f.d).SetTitle(ctx, "s", "alice", "title"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetTitle of a deleted session: %v, want ErrNotFound", err)
	}
	if n := countRows(t, ctx, f.d, "strata_session_index", "s"); n != 0 {
		t.Errorf("catalogue documents for a deleted session: %d, want 0", n)
	}

	// The deleted id is free again, for anyone, under a new epoch.
	revived := mustAppend(t, ctx, f.messages, "s", "bob", user("fresh"))
	if revived.Total != 1 || revived.Epoch == res.Epoch || revived.Epoch <= 0 {
		t.Errorf("revival = %+v; want Total 1 and an epoch other than %d", revived, res.Epoch)
	}
	if _, err := f.messages.Tail(ctx, "s", "alice", 5); !errors.Is(err, memory.ErrNotOwner) {
		t.Errorf("old owner's Tail after revival: %v, want ErrNotOwner", err)
	}
	if err := f.messages.Delete(ctx, "s", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := f.messages.Create(ctx, "s", "carol"); err != nil {
		t.Fatalf("Create on a deleted id: %v", err)
	}
	tail, err := f.messages.Tail(ctx, "s", "carol", 5)
	if err != nil || tail.Total != 0 || tail.Epoch == revived.Epoch || tail.Epoch == res.Epoch {
		t.Errorf("created over a tombstone: %+v, %v; want an empty session with a third epoch", tail, err)
	}
	if page, _, _ := f.messages.Sessions(ctx, "carol", 0, 0); len(page) != 1 || page[0].Preview != "Empty conversation" || page[0].MessageCount != 0 {
		t.Errorf("carol's sessions = %+v", page)
	}
}

// TestDeleteRacesWithAppends deletes a session over and over while pairs
// are appended to it: whatever interleaving happens, the stored state stays
// consistent (count matches rows, pairs whole).
func TestDeleteRacesWithAppends(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// As the manager does: create when missing (a delete won), then append.
				_, err := f.messages.Append(ctx, "s", "alice", user(fmt.Sprintf("q%d-%d", w, i)), assistant(fmt.Sprintf("a%d-%d", w, i)))
				if errors.Is(err, store.ErrNotFound) {
					if err = f.messages.Create(ctx, "s", "alice"); errors.Is(err, store.ErrSessionExists) {
						err = nil
					}
				}
				if err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		}()
	}
	deleted := 0
	for range 30 {
		switch err := f.messages.Delete(ctx, "s", "alice"); {
		case err == nil:
			deleted++
		case !errors.Is(err, store.ErrNotFound): // between a delete and the next append
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if deleted == 0 {
		t.Fatal("no delete happened")
	}
	if _, _, deleted, _ := sessionRow(t, ctx, f.d, "s"); deleted {
		mustAppend(t, ctx, f.messages, "s", "alice", user("qlast"), assistant("alast"))
	}
	assertConsistent(t, ctx, f, "s")
}

func TestConcurrentAppendsKeepPairsAdjacent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	const n = 20
	ensureSession(t, ctx, f.messages, "s", "alice")
	var wg sync.WaitGroup
	start := make(chan struct{})
	totals := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := f.messages.Append(ctx, "s", "alice", user(fmt.Sprint("q", i)), assistant(fmt.Sprint("a", i)))
			if err != nil {
				t.Error(err)
			}
			totals[i] = res.Total
		}()
	}
	close(start)
	wg.Wait()
	seen := map[int]bool{}
	for _, tot := range totals {
		if tot%2 != 0 || tot < 2 || tot > 2*n || seen[tot] {
			t.Errorf("totals %v: each append must see its own even count", totals)
			break
		}
		seen[tot] = true
	}
	msgs := allMessages(t, ctx, f.messages, "s", "alice")
	if len(msgs) != 2*n {
		t.Fatalf("%d messages, want %d", len(msgs), 2*n)
	}
	assertConsistent(t, ctx, f, "s")
}

// assertConsistent checks a session of alice's stored invariants:
// message_count equals the stored rows, every user message qN-M is
// immediately followed by its answer aN-M, and seqs strictly increase.
func assertConsistent(t *testing.T, ctx context.Context, f *fixture, session string) {
	t.Helper()
	msgs := allMessages(t, ctx, f.messages, session, "alice")
	tail, err := f.messages.Tail(ctx, session, "alice", 0)
	if err != nil {
		t.Fatal(err)
	}
	if tail.Total != len(msgs) {
		t.Errorf("message_count %d, rows %d", tail.Total, len(msgs))
	}
	if len(msgs)%2 != 0 {
		t.Errorf("odd number of messages (%d): a partial pair", len(msgs))
	}
	var prev int64
	for i := 0; i < len(msgs); i++ {
		if msgs[i].Seq <= prev {
			t.Errorf("seq %d after %d", msgs[i].Seq, prev)
		}
		prev = msgs[i].Seq
		if i%2 == 1 {
			continue
		}
		if i+1 >= len(msgs) {
			break
		}
		q, a := msgs[i], msgs[i+1]
		if q.Role != store.RoleUser || a.Role != store.RoleAssistant || "a"+strings.TrimPrefix(q.Content, "q") != a.Content {
			t.Errorf("messages %d,%d = %q/%q, %q/%q: not a pair", i, i+1, q.Role, q.Content, a.Role, a.Content)
			return
		}
	}
}

func TestSessionsOfUser(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := testCtx(t)
	long := strings.Repeat("ß", 600)
	mustAppend(t, ctx, f.messages, "a1", "alice", store.Message{Role: store.RoleSystem, Content: "sys"}, user(long))
	time.Sleep(2 * time.Millisecond)
	mustAppend(t, ctx, f.messages, "b1", "bob", user("bob's"))
	time.Sleep(2 * time.Millisecond)
	mustAppend(t, ctx, f.messages, "a2", "alice", assistant("no user message"))
	time.Sleep(2 * time.Millisecond)
	mustAppend(t, ctx, f.messages, "a1", "alice", user("later"))

	page, total, err := f.messages.Sessions(ctx, "alice", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if total != 2 || len(page) != 2 || page[0].SessionID != "a1" || page[1].SessionID != "a2" {
		t.Fatalf("Sessions = %+v, total %d", page, total)
	}
	if page[0].MessageCount != 3 || page[0].Preview != strings.Repeat("ß", 50)+"..." || page[1].Preview != "Empty conversation" {
		t.Errorf("session info = %+v", page)
	}
	if !page[0].LastActivity.After(page[0].CreatedAt) {
		t.Errorf("LastActivity %v not after CreatedAt %v", page[0].LastActivity, page[0].CreatedAt)
	}
	page, total, err = f.messages.Sessions(ctx, "alice", 1, 1)
	if err != nil || total != 2 || len(page) != 1 || page[0].SessionID != "a2" {
		t.Errorf("page 2 = %+v, %d, %v", page, total, err)
	}
	page, total, err = f.messages.Sessions(ctx, "alice", 10, 5)
	if err != nil || total != 2 || len(page) != 0 {
		t.Errorf("past the end = %+v, %d, %v", page, total, err)
	}
}
