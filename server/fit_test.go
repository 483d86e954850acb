package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/testutil"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/trimmer"
)

// truncationMarker ends the text of every context message cut to fit its
// budget: the trimmer's marker, as the API documents it.
const truncationMarker = trimmer.TruncationMarker

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

// TestContextIsThePrompt: for random histories and budgets, GET /context
// returns exactly the messages of Manager.Prompt with no system prompt and
// the same budget (a request budget below the manager's is a larger
// reserve; one above it is lowered to it), with the token counts the
// trimmer reports for them. Only when nothing fits do the two differ, as
// documented: the prompt is then over budget (PromptReport.OverBudget) and
// the context is empty with over_budget.
func TestContextIsThePrompt(t *testing.T) {
	t.Parallel()
	mcfg := memory.DefaultConfig() // summaries off
	mcfg.MaxConversationTurns = 20 // a takeLast window of 40: every random history whole
	mcfg.ContextWindowTokens, mcfg.OutputReserveTokens = 2500, 500
	managerBudget := mcfg.ContextWindowTokens - mcfg.OutputReserveTokens
	srv := stack{mcfg: &mcfg, noCatalog: true, quiet: true}.build(t)
	t.Cleanup(func() { _ = srv.Close() })
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	var whole, dropped, cut, over int
	for n := range 300 {
		history := randomHistory(r)
		if len(history) == 0 {
			continue
		}
		id := fmt.Sprint("s-", n)
		if err := srv.mgr.SaveMessages(ctx, id, "alice", history...); err != nil {
			t.Fatal(err)
		}
		budget := 1 + r.IntN(2500)
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", fmt.Sprintf("/v1/sessions/%s/context?budget=%d", id, budget), nil)
		req.Header.Set("Authorization", "Bearer "+keyAlice)
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatalf("case %d: %d %s", n, rec.Code, rec.Body)
		}
		var got wireContext
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}

		h, err := srv.mgr.Load(ctx, id, "alice")
		if err != nil || len(h.Messages) != len(history) {
			t.Fatalf("case %d: loaded %d of %d messages: %v", n, len(h.Messages), len(history), err)
		}
		applied := min(budget, managerBudget)
		prompt, _ := srv.mgr.Prompt("", h.Messages, managerBudget-applied)
		reported, rep := srv.mgr.Prompt("", h.Messages, managerBudget-applied)
		if !reflect.DeepEqual(reported, prompt) {
			t.Fatalf("case %d: PromptReport and Prompt differ", n)
		}
		want, total, truncated := []wireMessage{}, 0, 0
		if !rep.OverBudget {
			for _, m := range prompt {
				want = append(want, fromChat(m))
			}
			total, truncated = rep.TokensAfter, rep.Truncated
		}
		what := fmt.Sprintf("case %d (budget %d, %d messages)", n, budget, len(history))
		if !reflect.DeepEqual(got.Messages, want) {
			t.Fatalf("%s: the context is not the manager's prompt (over budget: %v)\n got: %+v\nwant: %+v", what, rep.OverBudget, got.Messages, want)
		}
		if got.Tokens.Budget != applied || rep.Budget != applied || got.Tokens.Total != total || total > applied ||
			got.Tokens.BeforeTrim != rep.TokensBefore || got.OverBudget != rep.OverBudget ||
			got.Truncated != truncated || got.Removed != len(h.Messages)-len(want) {
			t.Fatalf("%s: context %+v; prompt report %+v", what, got, rep)
		}
		switch {
		case rep.OverBudget:
			over++
		case rep.Truncated > 0:
			cut++
		case rep.Removed > rep.Repaired:
			dropped++
		default:
			whole++
		}
	}
	if whole == 0 || dropped == 0 || cut == 0 || over == 0 {
		t.Fatalf("the cases did not cover every outcome: whole %d, dropped %d, cut %d, over budget %d", whole, dropped, cut, over)
	}
}

// TestContextKeepsTheLastQuestion: the context is fitted as an agent's
// prompt is. In a tool loop whose rounds fill the budget, the last user
// message stays and the oldest rounds go; older messages go before it;
// when it alone is too large it is cut to fit with a marker. A tool group
// is cut only when it is what must stay (no user message), keeping its
// call and ids.
func TestContextKeepsTheLastQuestion(t *testing.T) {
	t.Parallel()
	mcfg := memory.DefaultConfig() // summaries off
	ts := stack{mcfg: &mcfg}.start(t)
	meter := trimmer.New(1<<30, 0, ts.srv.mgr.Config().Estimator)
	huge := words(3000, "w")
	call := func(id string) map[string]any {
		return map[string]any{"role": "assistant", "content": "", "tool_calls": []map[string]any{{"id": id, "type": "function",
			"function": map[string]string{"name": "fetch", "arguments": `{"url":"x"}`}}}}
	}
	result := func(id, content string) map[string]any {
		return map[string]any{"role": "tool", "tool_call_id": id, "name": "fetch", "content": content}
	}
	id := ts.create(keyAlice, messages(
		map[string]any{"role": "user", "content": "first question"},
		map[string]any{"role": "assistant", "content": "first answer"},
		map[string]any{"role": "user", "content": "Which parcel left Porto?"},
		call("call-1"), result("call-1", words(400, "r")),
		call("call-2"), result("call-2", "parcel 7 left at 9:00"),
	))

	// The budget holds the question and the newest round, not the older
	// round: the question stays, the older round and history go.
	h, err := ts.srv.mgr.Load(context.Background(), id, "alice")
	if err != nil || len(h.Messages) != 7 {
		t.Fatalf("Load: %d messages, %v", len(h.Messages), err)
	}
	budget := meter.Cost(h.Messages[2:3]) + meter.Cost(h.Messages[5:]) + 5
	var got wireContext
	ts.must(200, "GET", fmt.Sprintf("/v1/sessions/%s/context?budget=%d", id, budget), keyAlice, nil, &got)
	if got.OverBudget || got.Truncated != 0 || got.Removed != 4 || len(got.Messages) != 3 ||
		got.Messages[0].Content != "Which parcel left Porto?" || got.Messages[1].ToolCalls[0].ID != "call-2" ||
		got.Messages[2].Content != "parcel 7 left at 9:00" {
		t.Fatalf("context of a tool loop: %+v", got)
	}

	// The last question alone is too large: it is cut, the trailing
	// answer and the tool rounds before it gone.
	ts.must(200, "POST", "/v1/sessions/"+id+"/messages", keyAlice, turn("And this: "+huge, "Done, it is about w words."), nil)
	got = wireContext{}
	ts.must(200, "GET", "/v1/sessions/"+id+"/context?budget=100", keyAlice, nil, &got)
	if got.OverBudget || got.Truncated != 1 || got.Tokens.Total > 100 || got.Tokens.Total == 0 || len(got.Messages) != 1 {
		t.Fatalf("context with an oversized last question: %+v", got)
	}
	if m := got.Messages[0]; m.Role != "user" || !strings.HasPrefix(m.Content, "And this: w0 w1") || !strings.HasSuffix(m.Content, truncationMarker) {
		t.Fatalf("the last question is not cut from its start: %+v", m)
	}

	// No user message: the tool group is what stays, its result cut, the
	// call and its id kept.
	tools := ts.create(keyAlice, messages(
		map[string]any{"role": "assistant", "content": "Fetching it."},
		call("call-big"), result("call-big", huge),
	))
	got = wireContext{}
	ts.must(200, "GET", "/v1/sessions/"+tools+"/context?budget=150", keyAlice, nil, &got)
	if got.OverBudget || got.Truncated != 1 || got.Tokens.Total > 150 || len(got.Messages) != 2 {
		t.Fatalf("context with an oversized tool result: %+v", got)
	}
	call0, result0 := got.Messages[0], got.Messages[1]
	if call0.Role != "assistant" || len(call0.ToolCalls) != 1 || call0.ToolCalls[0].ID != "call-big" ||
		result0.Role != "tool" || result0.ToolCallID != "call-big" ||
		!strings.HasPrefix(result0.Content, "w0 w1") || !strings.HasSuffix(result0.Content, truncationMarker) {
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
	before := logs.Await(t, 10*time.Second, "listening")
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
