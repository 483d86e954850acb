package memorytest

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

// testReplace checks store.Replacer, for stores that have it: an invalid
// replacement, or one by another user, changes nothing; a valid one makes a
// new incarnation holding exactly the new messages, owned as before; a
// missing session is created.
func testReplace(e *env) {
	r := e.s
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
