package server

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/testutil"
	"github.com/strata-go/strata/memory"
)

// words returns n words of filler text.
func words(n int, tag string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s%d", tag, i%97)
	}
	return b.String()
}

// randomHistory returns a history of leading system messages and groups of
// every kind — user and assistant texts, assistant tool calls with their
// results — of sizes from a word to thousands.
func randomHistory(r *rand.Rand) []llms.ChatMessage {
	size := func() int {
		if r.IntN(4) == 0 {
			return 200 + r.IntN(3000)
		}
		return 1 + r.IntN(60)
	}
	var out []llms.ChatMessage
	for range r.IntN(3) {
		out = append(out, llms.SystemChatMessage{Content: words(size(), "fact")})
	}
	for g := range r.IntN(9) {
		switch r.IntN(3) {
		case 0:
			out = append(out, llms.HumanChatMessage{Content: words(size(), "q")})
		case 1:
			out = append(out, llms.AIChatMessage{Content: words(size(), "a")})
		default:
			var calls []llms.ToolCall
			for c := range 1 + r.IntN(2) {
				calls = append(calls, llms.ToolCall{ID: fmt.Sprintf("call-%d-%d", g, c), Type: "function",
					FunctionCall: &llms.FunctionCall{Name: "lookup", Arguments: `{"q":"x"}`}})
			}
			out = append(out, llms.AIChatMessage{Content: words(r.IntN(20), "t"), ToolCalls: calls})
			for _, c := range calls {
				out = append(out, llms.ToolChatMessage{ID: c.ID, Content: words(size(), "r")})
			}
		}
	}
	return out
}

// TestFitContextProperties: for random histories and budgets, the context
// never exceeds its budget; it is the leading system messages followed by
// the newest groups, back to the first that does not fit, the newest one
// cut when it alone does not fit; and it is over budget (empty) only when
// the system messages, or the newest group's bare overhead and markers, do
// not fit.
func TestFitContextProperties(t *testing.T) {
	t.Parallel()
	mcfg := memory.DefaultConfig()
	srv := stack{mcfg: &mcfg, noCatalog: true, quiet: true}.build(t)
	t.Cleanup(func() { _ = srv.Close() })
	est := srv.mgr.Estimator()
	marker := est.Estimate(truncationMarker)
	r := rand.New(rand.NewPCG(1, 2))
	cuts, overs := 0, 0
	for n := range 400 {
		history := randomHistory(r)
		budget := 1 + r.IntN(2500)
		f := srv.fitContext(history, budget)
		what := fmt.Sprintf("case %d (budget %d, %d messages)", n, budget, len(history))
		if c := srv.meter.Cost(f.msgs); c > budget {
			t.Fatalf("%s: the context costs %d tokens", what, c)
		}
		repaired := srv.meter.Trim(history, "", 0)
		lead := 0
		for lead < len(repaired) && repaired[lead].GetType() == llms.ChatMessageTypeSystem {
			lead++
		}
		leadCost := srv.meter.Cost(repaired[:lead])
		groups := groupsOf(repaired[lead:])
		if f.over {
			overs++
			if len(f.msgs) != 0 {
				t.Fatalf("%s: over budget with %d messages", what, len(f.msgs))
			}
			if leadCost > budget {
				continue
			}
			if len(groups) == 0 {
				t.Fatalf("%s: over budget although the system messages fit and nothing else is there", what)
			}
			newest := groups[len(groups)-1]
			bare := make([]llms.ChatMessage, len(newest))
			for i, m := range newest {
				bare[i] = withContent(m, "")
			}
			if srv.meter.Cost(bare)+len(newest)*marker <= budget-leadCost {
				t.Fatalf("%s: over budget although the system messages (%d tokens) and the newest group cut (%d + markers) fit",
					what, leadCost, srv.meter.Cost(bare))
			}
			continue
		}
		if !reflect.DeepEqual(f.msgs[:lead], repaired[:lead]) {
			t.Fatalf("%s: the system messages are not kept first", what)
		}
		rest := f.msgs[lead:]
		kept := 0
		for i := len(groups) - 1; i >= 0 && len(rest) > 0; i-- {
			g := groups[i]
			if len(rest) < len(g) {
				t.Fatalf("%s: group %d is split", what, i)
			}
			got := rest[len(rest)-len(g):]
			rest = rest[:len(rest)-len(g)]
			kept++
			if reflect.DeepEqual(got, g) {
				continue
			}
			if i != len(groups)-1 || f.truncated == 0 {
				t.Fatalf("%s: group %d changed, and it is not the newest one cut", what, i)
			}
			cuts++
			cut := 0
			for j, m := range got {
				want := g[j]
				if m.GetContent() != want.GetContent() {
					cut++
					body, ok := strings.CutSuffix(m.GetContent(), truncationMarker)
					if !ok || !strings.HasPrefix(want.GetContent(), body) {
						t.Fatalf("%s: message %d of the newest group is not its content cut with the marker: %q", what, j, m.GetContent())
					}
				}
				if !reflect.DeepEqual(withContent(m, ""), withContent(want, "")) {
					t.Fatalf("%s: cutting message %d changed more than its content: %#v, want %#v", what, j, m, want)
				}
			}
			if cut != f.truncated {
				t.Fatalf("%s: %d messages cut, truncated says %d", what, cut, f.truncated)
			}
		}
		if len(rest) != 0 {
			t.Fatalf("%s: %d messages are not the newest groups", what, len(rest))
		}
		if len(groups) > 0 && kept == 0 {
			t.Fatalf("%s: the newest group was dropped", what)
		}
		// Back to the first group that does not fit: the next older one
		// would not have fitted.
		if kept < len(groups) && kept > 0 {
			if older := groups[len(groups)-kept-1]; srv.meter.Cost(older) <= budget-srv.meter.Cost(f.msgs) {
				t.Fatalf("%s: group %d was dropped although it fits", what, len(groups)-kept-1)
			}
		}
	}
	if cuts == 0 || overs == 0 {
		t.Fatalf("the cases did not cover cutting (%d) and over budget (%d)", cuts, overs)
	}
}

// TestContextPrefersTheNewestMessages: an older oversized message never
// costs the newest ones their place; the newest message, when it alone is
// too large, is cut to fit with a marker, and tool calls keep their ids.
func TestContextPrefersTheNewestMessages(t *testing.T) {
	t.Parallel()
	mcfg := memory.DefaultConfig() // summaries off
	ts := stack{mcfg: &mcfg}.start(t)
	huge := words(3000, "w")
	id := ts.create(keyAlice, map[string]any{"messages": []map[string]any{
		{"role": "user", "content": "first question"},
		{"role": "assistant", "content": "first answer"},
		{"role": "user", "content": "Please read this: " + huge},
		{"role": "assistant", "content": "Done, it is about w words."},
	}})
	var got wireContext
	ts.must(200, "GET", "/v1/sessions/"+id+"/context?budget=100", keyAlice, nil, &got)
	if got.OverBudget || got.Truncated != 0 || got.Tokens.Total > 100 || len(got.Messages) != 1 ||
		got.Messages[0].Content != "Done, it is about w words." {
		t.Fatalf("context with an older oversized message: %+v", got)
	}

	// The newest message alone is too large: it is cut.
	ts.must(200, "POST", "/v1/sessions/"+id+"/messages", keyAlice, turn("And this: "+huge, ""), nil)
	got = wireContext{}
	ts.must(200, "GET", "/v1/sessions/"+id+"/context?budget=100", keyAlice, nil, &got)
	if got.OverBudget || got.Truncated != 1 || got.Tokens.Total > 100 || got.Tokens.Total == 0 || len(got.Messages) != 1 {
		t.Fatalf("context with an oversized newest message: %+v", got)
	}
	if m := got.Messages[0]; m.Role != "user" || !strings.HasPrefix(m.Content, "And this: w0 w1") || !strings.HasSuffix(m.Content, truncationMarker) {
		t.Fatalf("the newest message is not cut from its start: %+v", m)
	}

	// A tool result too large: its content is cut, the call and its id kept.
	ts.must(200, "POST", "/v1/sessions/"+id+"/messages", keyAlice, map[string]any{"messages": []map[string]any{
		{"role": "assistant", "content": "", "tool_calls": []map[string]any{{"id": "call-big", "type": "function",
			"function": map[string]string{"name": "fetch", "arguments": `{"url":"x"}`}}}},
		{"role": "tool", "tool_call_id": "call-big", "name": "fetch", "content": huge},
	}}, nil)
	got = wireContext{}
	ts.must(200, "GET", "/v1/sessions/"+id+"/context?budget=150", keyAlice, nil, &got)
	if got.OverBudget || got.Truncated != 1 || got.Tokens.Total > 150 || len(got.Messages) != 2 {
		t.Fatalf("context with an oversized tool result: %+v", got)
	}
	call, result := got.Messages[0], got.Messages[1]
	if call.Role != "assistant" || len(call.ToolCalls) != 1 || call.ToolCalls[0].ID != "call-big" ||
		result.Role != "tool" || result.ToolCallID != "call-big" ||
		!strings.HasPrefix(result.Content, "w0 w1") || !strings.HasSuffix(result.Content, truncationMarker) {
		t.Fatalf("the tool group is not kept with its result cut: %+v", got.Messages)
	}
}

func TestToolResultsNeedTheirCallInMemory(t *testing.T) {
	t.Parallel()
	runToolResultsNeedTheirCall(t, stack{})
}

func TestToolResultsNeedTheirCallPostgres(t *testing.T) {
	t.Parallel()
	runToolResultsNeedTheirCall(t, stack{pg: true})
}

// toolCall is an assistant message calling a tool with id.
func toolCall(id string) map[string]any {
	return map[string]any{"role": "assistant", "content": "", "tool_calls": []map[string]any{{"id": id, "type": "function",
		"function": map[string]string{"name": "lookup", "arguments": `{}`}}}}
}

// toolResult is the result of the call id.
func toolResult(id string) map[string]any {
	return map[string]any{"role": "tool", "tool_call_id": id, "content": "42"}
}

// messages is an append request body.
func messages(msgs ...map[string]any) map[string]any { return map[string]any{"messages": msgs} }

// runToolResultsNeedTheirCall: a tool result is stored only when its call
// precedes it in the request or is stored in the same session; else 400 and
// nothing is stored. Appends never create sessions.
func runToolResultsNeedTheirCall(t *testing.T, st stack) {
	ts := st.start(t)
	path := func(id string) string { return "/v1/sessions/" + id + "/messages" }
	count := func(id string) int {
		t.Helper()
		var s wireSession
		ts.must(200, "GET", "/v1/sessions/"+id, keyAlice, nil, &s)
		return s.MessageCount
	}
	id := ts.create(keyAlice, nil)

	r := ts.must(400, "POST", path(id), keyAlice, messages(toolResult("nope")), nil)
	if !strings.Contains(string(r.body), `"invalid_message"`) || !strings.Contains(string(r.body), `messages[0].tool_call_id \"nope\"`) {
		t.Fatalf("orphan tool result: %s", r)
	}
	// A result before its call in the same request is an orphan too; the
	// valid messages of a refused request are not stored either.
	ts.must(400, "POST", path(id), keyAlice, messages(map[string]any{"role": "user", "content": "hi"}, toolResult("c0"), toolCall("c0")), nil)
	if n := count(id); n != 0 {
		t.Fatalf("refused requests stored %d messages", n)
	}
	ts.must(200, "POST", path(id), keyAlice, messages(toolCall("c1"), toolResult("c1")), nil)   // call in the request
	ts.must(200, "POST", path(id), keyAlice, messages(toolCall("c2")), nil)                     // call stored ...
	ts.must(200, "POST", path(id), keyAlice, messages(toolResult("c2"), toolResult("c1")), nil) // ... then its result
	ts.must(400, "POST", path(id), keyAlice, messages(toolResult("c2"), toolResult("c3")), nil) // one unknown call refuses all
	if n := count(id); n != 5 {
		t.Fatalf("session holds %d messages, want 5", n)
	}

	// Another session's calls do not count, nor does another user's
	// session (404, like a missing one).
	other := ts.create(keyAlice, nil)
	ts.must(400, "POST", path(other), keyAlice, messages(toolResult("c1")), nil)
	ts.must(404, "POST", path(id), keyBob, messages(toolResult("c1")), nil)

	// An append never creates a session.
	for _, body := range []any{messages(toolResult("c1")), messages(toolCall("c9"), toolResult("c9")), turn("hi", "")} {
		ts.must(404, "POST", path("never-created"), keyAlice, body, nil)
	}
	ts.must(404, "GET", "/v1/sessions/never-created", keyAlice, nil, nil)

	// A new session has no calls yet: its results must follow calls in the
	// request, or nothing is created.
	var list wireList
	ts.must(200, "GET", "/v1/sessions", keyAlice, nil, &list)
	ts.must(400, "POST", "/v1/sessions", keyAlice, messages(toolResult("c1")), nil)
	var after wireList
	ts.must(200, "GET", "/v1/sessions", keyAlice, nil, &after)
	if after.Total != list.Total {
		t.Fatalf("a refused creation left a session: %d sessions, want %d", after.Total, list.Total)
	}
	ts.create(keyAlice, messages(toolCall("n1"), toolResult("n1")))

	// Calls are found beyond the first page of the lookup.
	deep := ts.create(keyAlice, nil)
	var filler []map[string]any
	for i := range toolLookupPage + 100 {
		filler = append(filler, map[string]any{"role": "user", "content": fmt.Sprint(i)})
	}
	ts.must(200, "POST", path(deep), keyAlice, messages(filler...), nil)
	ts.must(200, "POST", path(deep), keyAlice, messages(toolCall("deep")), nil)
	ts.must(200, "POST", path(deep), keyAlice, messages(map[string]any{"role": "user", "content": "more"}), nil)
	ts.must(200, "POST", path(deep), keyAlice, messages(toolResult("deep")), nil)
	var s wireSession
	ts.must(200, "GET", "/v1/sessions/"+deep+"?limit=1", keyAlice, nil, &s)
	if s.MessageCount != toolLookupPage+103 {
		t.Fatalf("message_count = %d, want %d", s.MessageCount, toolLookupPage+103)
	}
}

// wireList is GET /v1/sessions as a client sees it.
type wireList struct {
	Total int `json:"total"`
}

// TestAppendRacingDeleteNeverRecreates: appends (tool results whose call
// is stored, and turns) racing with the owner's delete of the session are
// stored before the delete or refused with 404; the session never comes
// back.
func TestAppendRacingDeleteNeverRecreates(t *testing.T) {
	t.Parallel()
	ts := stack{quiet: true}.start(t)
	for round := range 30 {
		id := ts.create(keyAlice, messages(toolCall("c")))
		var wg sync.WaitGroup
		statuses := make([]int, 4)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := any(messages(toolResult("c")))
				if i%2 == 1 {
					body = turn("hi", "hello")
				}
				statuses[i] = ts.do("POST", "/v1/sessions/"+id+"/messages", keyAlice, body).status
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts.must(204, "DELETE", "/v1/sessions/"+id, keyAlice, nil, nil)
		}()
		wg.Wait()
		for i, st := range statuses {
			if st != 200 && st != 404 {
				t.Fatalf("round %d: append %d racing a delete answered %d, want 200 or 404", round, i, st)
			}
		}
		ts.must(404, "GET", "/v1/sessions/"+id, keyAlice, nil, nil)
	}
	var list wireList
	ts.must(200, "GET", "/v1/sessions", keyAlice, nil, &list)
	if list.Total != 0 {
		t.Fatalf("%d sessions after every one was deleted", list.Total)
	}
}

// TestRoutineRequestsLogNothingAboveDebug: serving requests, failed ones
// included, is normal operation: with an info-level logger, nothing is
// written.
func TestRoutineRequestsLogNothingAboveDebug(t *testing.T) {
	t.Parallel()
	var logs testutil.Buffer
	info := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ts := stack{srvOpts: []Option{WithLogger(info)}}.start(t)
	// Starting to serve is announced (at info level) once.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "listening"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server did not announce that it serves")
		}
	}
	before := logs.String()
	id := ts.create(keyAlice, map[string]any{"title": "Routine"})
	ts.must(200, "POST", "/v1/sessions/"+id+"/messages", keyAlice, turn("hi", "hello"), nil)
	ts.must(200, "GET", "/v1/sessions/"+id, keyAlice, nil, nil)
	ts.must(200, "GET", "/v1/sessions/"+id+"/context?budget=50", keyAlice, nil, nil)
	ts.must(200, "GET", "/v1/sessions", keyAlice, nil, nil)
	ts.must(400, "POST", "/v1/sessions/"+id+"/messages", keyAlice, messages(toolResult("x")), nil)
	ts.must(404, "GET", "/v1/sessions/nope", keyAlice, nil, nil)
	ts.must(401, "GET", "/v1/sessions", "wrong-key", nil, nil)
	ts.must(204, "DELETE", "/v1/sessions/"+id, keyAlice, nil, nil)
	ts.must(200, "GET", "/healthz", "", nil, nil)
	if got := strings.TrimPrefix(logs.String(), before); got != "" {
		t.Fatalf("routine requests logged above debug:\n%s", got)
	}
}
