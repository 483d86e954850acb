package server

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

// Response shapes as a client sees them.
type (
	wireContext struct {
		SessionID string        `json:"session_id"`
		Mode      string        `json:"mode"`
		Messages  []wireMessage `json:"messages"`
		Tokens    struct {
			Total      int `json:"total"`
			Budget     int `json:"budget"`
			BeforeTrim int `json:"before_trim"`
		} `json:"tokens"`
		Removed        int  `json:"removed"`
		Truncated      int  `json:"truncated"`
		OverBudget     bool `json:"over_budget"`
		StoredMessages int  `json:"stored_messages"`
		Summary        *struct {
			Facts     []wireFact `json:"facts"`
			Narrative string     `json:"narrative"`
			UpToSeq   int64      `json:"up_to_seq"`
		} `json:"summary"`
	}
	wireSession struct {
		ID           string          `json:"id"`
		Title        string          `json:"title"`
		MessageCount int             `json:"message_count"`
		Messages     []storedMessage `json:"messages"`
		NextAfterSeq *int64          `json:"next_after_seq"`
		Summary      *sessionSummary `json:"summary"`
	}
	wireAppend struct {
		ID     string `json:"id"`
		Title  string `json:"title"`
		Stored int    `json:"stored"`
		Total  int    `json:"total"`
	}
)

// conversationTurn returns turn i (0-based) of a 60-turn support chat whose
// first turns carry facts the extractive summarizer finds.
func conversationTurn(i int) (user, assistant string) {
	switch i {
	case 0:
		return "Hi, my name is Dana Whitfield. My order #A-7731 arrived damaged.", "Sorry to hear that, Dana. I found order #A-7731."
	case 1:
		return "You can reach me at dana.whitfield@example.com.", "Thanks, I noted dana.whitfield@example.com for the refund."
	case 2:
		return "The blender cost $129.99.", "I see the $129.99 charge for the blender."
	}
	return fmt.Sprintf("Question %d about the refund and the return label of the damaged blender.", i),
		fmt.Sprintf("Answer %d: the return label is step %d of the refund process for the damaged blender.", i, i)
}

// toolTurn is a turn with a tool call and its result, as messages.
func toolTurn(i int) []map[string]any {
	id := fmt.Sprintf("call_%d", i)
	return []map[string]any{
		{"role": "user", "content": "Where is my replacement blender?"},
		{"role": "assistant", "content": "", "tool_calls": []map[string]any{{"id": id, "type": "function",
			"function": map[string]string{"name": "track_shipment", "arguments": `{"order":"A-7731"}`}}}},
		{"role": "tool", "tool_call_id": id, "name": "track_shipment", "content": `{"status":"in transit"}`},
		{"role": "assistant", "content": "Your replacement blender is in transit.", "metadata": map[string]string{"model_variant": "arco-pro"}},
	}
}

func toChat(t *testing.T, msgs []wireMessage) []llms.ChatMessage {
	t.Helper()
	out := make([]llms.ChatMessage, 0, len(msgs))
	for i, w := range msgs {
		m, err := w.toMemory(i)
		if err != nil {
			t.Fatalf("context message %d: %v", i, err)
		}
		out = append(out, m.ChatMessage())
	}
	return out
}

func TestEndToEndInMemory(t *testing.T) {
	t.Parallel()
	runEndToEnd(t, stack{})
}

func TestEndToEndPostgres(t *testing.T) {
	t.Parallel()
	runEndToEnd(t, stack{pg: true})
}

// runEndToEnd drives a real server over loopback: a 60-turn conversation
// with folds, the context endpoint under a small budget, the history, the
// catalogue and search, another user, deletion.
func runEndToEnd(t *testing.T, st stack) {
	ts := st.start(t)
	const turns = 60

	// Create the session with a title and the first turn.
	u0, a0 := conversationTurn(0)
	var created wireAppend
	r := ts.must(201, "POST", "/v1/sessions", keyAlice, map[string]any{
		"title": "Damaged blender refund",
		"messages": []map[string]any{{"role": "user", "content": u0},
			{"role": "assistant", "content": a0, "metadata": map[string]string{"model_variant": "arco"}}},
	}, &created)
	if created.ID == "" || created.Stored != 2 || created.Total != 2 || r.header.Get("Location") != "/v1/sessions/"+created.ID {
		t.Fatalf("create: %s", r)
	}
	sid := created.ID
	stored := 2
	for i := 1; i < turns; i++ {
		var body any
		n := 2
		if i == 30 {
			body, n = map[string]any{"messages": toolTurn(i)}, 4
		} else {
			u, a := conversationTurn(i)
			variant := []string{"arco", "arco-pro", "deep-dive"}[i%3]
			body = map[string]any{"turn": map[string]string{"user": u, "assistant": a, "model_variant": variant}}
		}
		var ap wireAppend
		ts.must(200, "POST", "/v1/sessions/"+sid+"/messages", keyAlice, body, &ap)
		stored += n
		if ap.ID != sid || ap.Stored != n || ap.Total != stored {
			t.Fatalf("turn %d: append = %+v, want stored %d total %d", i, ap, n, stored)
		}
	}
	ts.flush()

	// The whole history, paginated.
	var all []storedMessage
	var sess wireSession
	for page, after := 0, int64(0); ; page++ {
		sess = wireSession{}
		ts.must(200, "GET", fmt.Sprintf("/v1/sessions/%s?limit=50&after_seq=%d", sid, after), keyAlice, nil, &sess)
		all = append(all, sess.Messages...)
		if sess.NextAfterSeq == nil {
			break
		}
		if page > 5 {
			t.Fatal("pagination does not end")
		}
		after = *sess.NextAfterSeq
	}
	if len(all) != stored || sess.MessageCount != stored {
		t.Fatalf("history: %d messages, count %d, want %d", len(all), sess.MessageCount, stored)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Seq <= all[i-1].Seq {
			t.Fatalf("history out of order at %d", i)
		}
	}
	if sess.Title != "Damaged blender refund" {
		t.Errorf("title = %q", sess.Title)
	}
	if all[0].Content != u0 || all[0].Metadata != nil {
		t.Errorf("first message = %+v (the title metadata must not show)", all[0])
	}
	if all[1].Metadata["model_variant"] != "arco" {
		t.Errorf("model variant lost: %+v", all[1])
	}
	var sawTool bool
	for _, m := range all {
		if len(m.ToolCalls) == 1 && m.ToolCalls[0].Function.Name == "track_shipment" && m.ToolCalls[0].Function.Arguments == `{"order":"A-7731"}` {
			sawTool = true
		}
	}
	if !sawTool {
		t.Error("the tool call did not round-trip")
	}
	if sess.Summary == nil || sess.Summary.UpToSeq <= 0 || len(sess.Summary.Facts) == 0 || sess.Summary.Narrative == "" {
		t.Fatalf("no summary after %d messages: %+v", stored, sess.Summary)
	}

	// The full context: facts, narrative, the verbatim window.
	var full wireContext
	ts.must(200, "GET", "/v1/sessions/"+sid+"/context?budget=100000", keyAlice, nil, &full)
	if full.Mode != "hierarchical" || full.StoredMessages != stored || full.Removed != 0 || full.Summary == nil {
		t.Fatalf("full context: mode %s stored %d removed %d", full.Mode, full.StoredMessages, full.Removed)
	}
	facts := full.Messages[0]
	if facts.Role != "system" || !strings.HasPrefix(facts.Content, summary.FactsHeader) ||
		!strings.Contains(facts.Content, "dana.whitfield@example.com") || !strings.Contains(facts.Content, "#A-7731") {
		t.Fatalf("first context message is not the facts: %+v", facts)
	}
	if n := full.Messages[1]; n.Role != "system" || !strings.HasPrefix(n.Content, summary.NarrativeHeader) {
		t.Fatalf("second context message is not the narrative: %+v", n)
	}
	fullChat := toChat(t, full.Messages)
	if err := trimmer.Validate(fullChat); err != nil {
		t.Fatalf("full context invalid: %v", err)
	}
	tr := trimmer.New(1<<30, 0, nil)
	if c := tr.Cost(fullChat); c != full.Tokens.Total || c != full.Tokens.BeforeTrim {
		t.Errorf("tokens: %+v, cost %d", full.Tokens, c)
	}

	// A small budget: the facts, the narrative and the last turn only.
	last := fullChat[len(fullChat)-2:]
	budget := tr.Cost(fullChat[:2]) + tr.Cost(last) + 10
	var small wireContext
	ts.must(200, "GET", fmt.Sprintf("/v1/sessions/%s/context?budget=%d", sid, budget), keyAlice, nil, &small)
	smallChat := toChat(t, small.Messages)
	if err := trimmer.Validate(smallChat); err != nil {
		t.Fatalf("trimmed context invalid: %v", err)
	}
	if small.Tokens.Total > budget || small.Tokens.Budget != budget || small.OverBudget || small.Removed == 0 ||
		len(small.Messages) >= len(full.Messages) || small.Tokens.BeforeTrim != full.Tokens.Total {
		t.Fatalf("trimmed context: %d messages, tokens %+v, removed %d (budget %d)", len(small.Messages), small.Tokens, small.Removed, budget)
	}
	if small.Messages[0].Content != facts.Content || !strings.HasPrefix(small.Messages[1].Content, summary.NarrativeHeader) {
		t.Fatalf("the facts and narrative must stay first: %+v", small.Messages[:2])
	}
	if got := small.Messages[len(small.Messages)-1]; got.Content != full.Messages[len(full.Messages)-1].Content {
		t.Fatalf("the last message was trimmed: %+v", got)
	}

	// A second conversation, about something else; the catalogue.
	var other wireAppend
	ts.must(201, "POST", "/v1/sessions", keyAlice, map[string]any{"messages": []map[string]string{
		{"role": "user", "content": "Can you suggest a vegetarian lasagna recipe with spinach and ricotta?"},
		{"role": "assistant", "content": "Layer lasagna sheets with spinach, ricotta, mozzarella and tomato sauce; bake 45 minutes."},
	}}, &other)
	var list struct {
		Sessions []listEntry `json:"sessions"`
		Total    int         `json:"total"`
	}
	ts.must(200, "GET", "/v1/sessions?limit=10", keyAlice, nil, &list)
	if list.Total != 2 || len(list.Sessions) != 2 || list.Sessions[0].ID != other.ID || list.Sessions[1].ID != sid ||
		list.Sessions[1].Title != "Damaged blender refund" || list.Sessions[1].MessageCount != stored {
		t.Fatalf("list: %+v", list)
	}
	ts.flush() // the listing refreshed the new session's document in the background

	var found searchResponse
	ts.must(200, "GET", "/v1/sessions?search="+url.QueryEscape("refund for the damaged blender")+"&limit=5", keyAlice, nil, &found)
	if len(found.Matches) == 0 || found.Matches[0].ID != sid || found.Best == nil || *found.Best != sid {
		t.Fatalf("search blender: %+v", found)
	}
	if found.Matches[0].Title != "Damaged blender refund" || found.Matches[0].Text == "" {
		t.Errorf("search match: %+v", found.Matches[0])
	}
	// A short session nobody listed is found too: search indexes it first.
	var fresh wireAppend
	ts.must(201, "POST", "/v1/sessions", keyAlice, map[string]any{"messages": []map[string]string{
		{"role": "user", "content": "Which telescope should I buy to watch Saturn's rings?"},
	}}, &fresh)
	found = searchResponse{}
	ts.must(200, "GET", "/v1/sessions?search=telescope+saturn", keyAlice, nil, &found)
	if len(found.Matches) == 0 || found.Matches[0].ID != fresh.ID {
		t.Fatalf("search telescope: %+v", found)
	}
	ts.must(204, "DELETE", "/v1/sessions/"+fresh.ID, keyAlice, nil, nil)
	found = searchResponse{}
	ts.must(200, "GET", "/v1/sessions?search=lasagna+recipe", keyAlice, nil, &found)
	if len(found.Matches) == 0 || found.Matches[0].ID != other.ID {
		t.Fatalf("search lasagna: %+v", found)
	}

	// Another user sees nothing, exactly as for an unknown session.
	unknown := ts.must(404, "GET", "/v1/sessions/no-such-session", keyAlice, nil, nil).errorOf(t)
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/sessions/" + sid},
		{"GET", "/v1/sessions/" + sid + "/context"},
		{"DELETE", "/v1/sessions/" + sid},
	} {
		e := ts.must(404, c.method, c.path, keyBob, nil, nil).errorOf(t)
		if e.Error != unknown.Error || e.Code != unknown.Code {
			t.Errorf("bob %s %s: %+v, want the unknown-session body %+v", c.method, c.path, e, unknown)
		}
	}
	ts.must(404, "POST", "/v1/sessions/"+sid+"/messages", keyBob, map[string]any{"turn": map[string]string{"user": "mine now"}}, nil)
	ts.must(404, "GET", "/v1/sessions/no-such-session/context", keyAlice, nil, nil)
	var bobList listResponse
	ts.must(200, "GET", "/v1/sessions", keyBob, nil, &bobList)
	var bobFound searchResponse
	ts.must(200, "GET", "/v1/sessions?search=blender", keyBob, nil, &bobFound)
	if bobList.Total != 0 || len(bobFound.Matches) != 0 {
		t.Fatalf("bob sees alice's sessions: %+v %+v", bobList, bobFound)
	}
	var still wireSession
	ts.must(200, "GET", "/v1/sessions/"+sid+"?limit=1", keyAlice, nil, &still)
	if still.MessageCount != stored {
		t.Fatalf("bob's requests changed alice's session: %d messages", still.MessageCount)
	}

	// Delete: cascade, then 404 everywhere, deleting again included.
	if r := ts.do("DELETE", "/v1/sessions/"+sid, keyAlice, nil); r.status != 204 || len(r.body) != 0 {
		t.Fatalf("delete: %s", r)
	}
	ts.must(404, "GET", "/v1/sessions/"+sid, keyAlice, nil, nil)
	ts.must(404, "GET", "/v1/sessions/"+sid+"/context", keyAlice, nil, nil)
	ts.must(404, "POST", "/v1/sessions/"+sid+"/messages", keyAlice, turn("again", ""), nil)
	ts.must(404, "DELETE", "/v1/sessions/"+sid, keyAlice, nil, nil)
	ts.must(404, "DELETE", "/v1/sessions/never-existed", keyAlice, nil, nil)
	found = searchResponse{}
	ts.must(200, "GET", "/v1/sessions?search=blender+refund", keyAlice, nil, &found)
	for _, m := range found.Matches {
		if m.ID == sid {
			t.Fatal("a deleted session is still found")
		}
	}
	list.Sessions, list.Total = nil, 0
	ts.must(200, "GET", "/v1/sessions", keyAlice, nil, &list)
	if list.Total != 1 || list.Sessions[0].ID != other.ID {
		t.Fatalf("list after delete: %+v", list)
	}
	if sum, err := ts.srv.mgr.Summary(t.Context(), sid, "alice"); !errors.Is(err, store.ErrNotFound) || sum != nil {
		t.Fatalf("summary after delete: %+v, %v", sum, err)
	}

	// The access log names users and routes, never keys.
	logs := ts.logs.String()
	if strings.Contains(logs, keyAlice) || strings.Contains(logs, keyBob) {
		t.Fatal("an API key appears in the log")
	}
	if !strings.Contains(logs, `route=/v1/sessions/{id}/messages status=200`) || !strings.Contains(logs, "user_id=alice") {
		t.Errorf("access log lacks the expected fields")
	}
}
