package autoconfig

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// In-memory serve: summaries and the values ForgetFact keeps out belong
// to their sessions, within their users' bounds. Another tenant's work —
// here many imports, each with a summary, past store.max-summaries — never
// evicts alice's summaries, and her forgotten e-mail address stays out of
// her next turn's view.
func TestInMemorySummariesBelongToTheirSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := buildRuntime(t, nil, smallWindow(keyMaxSummaries+"=20"))
	mgr := rt.Manager
	const email = "alice.7731@example.org"
	for i := range 10 {
		id := fmt.Sprintf("alice-%d", i)
		if err := mgr.SaveTurn(ctx, id, "alice", "My email is "+email+" and my order is #A-77"+fmt.Sprint(i)+".", "Noted."); err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			if err := mgr.SaveTurn(ctx, id, "alice", fmt.Sprintf("Question %d about the parcel.", j), "Answer."); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := mgr.Load(ctx, id, "alice"); err != nil {
			t.Fatal(err)
		}
		if err := mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		s, err := mgr.Summary(ctx, id, "alice")
		if err != nil || s == nil {
			t.Fatalf("alice's session %s has no summary: %v", id, err)
		}
		key := ""
		for _, f := range s.Facts {
			if strings.Contains(f.Value, email) {
				key = f.Key
			}
		}
		if key == "" {
			t.Fatalf("no fact holds the e-mail address: %+v", s.Facts)
		}
		if err := mgr.ForgetFact(ctx, id, "alice", key); err != nil {
			t.Fatal(err)
		}
	}
	// bob imports sessions with summaries, more than max-summaries.
	snap, err := mgr.Export(ctx, "alice-0", "alice")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		s := *snap
		s.SessionID, s.UserID = fmt.Sprintf("bob-%d", i), "bob"
		if err := mgr.Import(ctx, &s); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		id := fmt.Sprintf("alice-%d", i)
		s, err := mgr.Summary(ctx, id, "alice")
		if err != nil || s == nil || len(s.Forgotten) == 0 {
			t.Fatalf("alice's summary of %s was evicted by bob's imports: %+v, %v", id, s, err)
		}
		if err := mgr.SaveTurn(ctx, id, "alice", "One more question.", "One more answer."); err != nil {
			t.Fatal(err)
		}
		h, err := mgr.Load(ctx, id, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if err := mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		for _, m := range h.Messages {
			if m.GetType() == "system" && strings.Contains(m.GetContent(), email) {
				t.Fatalf("alice's forgotten e-mail is back in %s: %s", id, m.GetContent())
			}
		}
	}
}
