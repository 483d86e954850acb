package agent_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/strata-go/strata/agent"
	"github.com/strata-go/strata/internal/standin"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/trimmer"
)

// refusalBodies are the bodies each provider answers a prompt over the
// model's window with (HTTP 400), with and without the prompt's count.
var refusalBodies = map[string]struct{ counted, uncounted string }{
	"openai": {
		counted:   `{"error":{"message":"This model's maximum context length is 4096 tokens. However, your messages resulted in 5012 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
		uncounted: `{"error":{"message":"This model's maximum context length is exceeded.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
	},
	"anthropic": {
		counted:   `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 5012 tokens > 4096 maximum"}}`,
		uncounted: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}`,
	},
	"gemini": {
		counted:   `{"error":{"code":400,"message":"The input token count (5012) exceeds the maximum number of tokens allowed (4096).","status":"INVALID_ARGUMENT"}}`,
		uncounted: `{"error":{"code":400,"message":"The input token count exceeds the maximum number of tokens allowed.","status":"INVALID_ARGUMENT"}}`,
	},
}

// refusingServer refuses the first `refusals` requests with body, then
// answers "Done." in the provider's format; it records every request body.
type refusingServer struct {
	kind, body string
	refusals   int

	mu     sync.Mutex
	bodies []string
}

func (s *refusingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(b))
	n := len(s.bodies)
	s.mu.Unlock()
	if n <= s.refusals {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, s.body)
		return
	}
	switch s.kind {
	case "openai":
		writeOpenAI(w, reply{Text: "Done."}, false)
	case "gemini":
		writeGemini(w, reply{Text: "Done."}, strings.HasSuffix(r.URL.Path, ":streamGenerateContent"))
	case "anthropic":
		writeAnthropic(w, reply{Text: "Done."})
	}
}

func (s *refusingServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

// refusalManager is a 4 096-token manager whose session already holds
// about 3 000 estimated tokens of English: a prompt that fits by the
// estimate.
func refusalManager(t *testing.T) *memory.Manager {
	t.Helper()
	cfg := memory.DefaultConfig()
	cfg.ContextWindowTokens, cfg.OutputReserveTokens = 4096, 512
	cfg.MaxConversationTurns = 50
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg, memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	for i := range 15 {
		q := fmt.Sprintf("Question %d: %s", i, strings.Repeat("the parcel was left at the door, ", 12))
		if err := mgr.SaveTurn(context.Background(), "s", "u", q, "Answer: "+strings.Repeat("we will check the tracking page, ", 12)); err != nil {
			t.Fatal(err)
		}
	}
	return mgr
}

// TestRefusedPromptRetriedOnce: each provider's refusal, through its real
// langchaingo client, is recovered by one smaller retry; the turn is saved
// as any other; a count in the error recalibrates the model's budget, a
// refusal without one leaves the calibration alone.
func TestRefusedPromptRetriedOnce(t *testing.T) {
	for _, p := range wireProviders {
		for _, counted := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/counted=%v", p.kind, counted), func(t *testing.T) {
				ctx := context.Background()
				body := refusalBodies[p.kind].uncounted
				if counted {
					body = refusalBodies[p.kind].counted
				}
				rs := &refusingServer{kind: p.kind, body: body, refusals: 1}
				srv := httptest.NewServer(rs)
				t.Cleanup(srv.Close)
				mgr := refusalManager(t)
				const model = "model-under-test"
				a := newAgent(t, p.newModel(t, srv.URL), mgr, agent.WithCallOptions(llms.WithModel(model)))
				probe := strings.Repeat("the parcel was left at the door, ", 20)
				before := mgr.ForModel(model).Config().Estimator.Estimate(probe)

				res, err := a.Run(ctx, "s", "u", "Where is my parcel?")
				if err != nil {
					t.Fatalf("the refused turn failed: %v", err)
				}
				reqs := rs.requests()
				if len(reqs) != 2 || res.ModelCalls != 2 {
					t.Fatalf("%d requests, %d model calls; want the refused one and one retry", len(reqs), res.ModelCalls)
				}
				if len(reqs[1]) >= len(reqs[0]) {
					t.Fatalf("the retry (%d bytes) is not smaller than the refused prompt (%d bytes)", len(reqs[1]), len(reqs[0]))
				}
				if res.Text != "Done." || len(stored(t, mgr, "s", "u")) != 32 {
					t.Fatalf("answer %q, %d messages stored; want the turn saved", res.Text, len(stored(t, mgr, "s", "u")))
				}
				after := mgr.ForModel(model).Config().Estimator.Estimate(probe)
				switch {
				case counted && after <= before:
					t.Fatalf("the stated count did not recalibrate: %d tokens before, %d after", before, after)
				case !counted && after != before:
					t.Fatalf("a refusal without a count changed the calibration: %d tokens before, %d after", before, after)
				}
				// The next turn is not refused: the server would refuse nothing
				// more anyway, but exactly one call must be made.
				if res, err := a.Run(ctx, "s", "u", "Thanks."); err != nil || res.ModelCalls != 1 {
					t.Fatalf("next turn: %v, %d calls", err, res.ModelCalls)
				}
			})
		}
	}
}

// TestRefusedTwiceFailsTheTurn: a provider that refuses every prompt gets
// exactly two calls per turn; the turn fails as any failed turn (its user
// message saved), and nothing loops.
func TestRefusedTwiceFailsTheTurn(t *testing.T) {
	rs := &refusingServer{kind: "openai", body: refusalBodies["openai"].counted, refusals: 1 << 30}
	srv := httptest.NewServer(rs)
	t.Cleanup(srv.Close)
	mgr := refusalManager(t)
	a := newAgent(t, wireProviders[0].newModel(t, srv.URL), mgr)
	for turn := 1; turn <= 3; turn++ {
		if _, err := a.Run(context.Background(), "s", "u", fmt.Sprintf("Turn %d?", turn)); err == nil || !strings.Contains(err.Error(), "maximum context length") {
			t.Fatalf("turn %d: %v, want the provider's refusal", turn, err)
		}
		if n := len(rs.requests()); n != 2*turn {
			t.Fatalf("after turn %d: %d requests, want %d", turn, n, 2*turn)
		}
		if got := stored(t, mgr, "s", "u"); len(got) != 30+turn || !strings.Contains(got[len(got)-1], fmt.Sprintf("Turn %d?", turn)) {
			t.Fatalf("after turn %d: stored %d messages, last %q", turn, len(got), got[len(got)-1])
		}
	}
}

// TestSmallerWindowThanConfigured: a manager configured for a larger
// window than the model's still gets every turn answered, each refused
// call retried once within the window the refusal states.
func TestSmallerWindowThanConfigured(t *testing.T) {
	srv, err := standin.New(4096, trimmer.EncodingCL100kBase, func(standin.Request) standin.Reply {
		return standin.Reply{Text: strings.Repeat("The parcel was left at the door. ", 30)}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cfg := memory.DefaultConfig()
	cfg.ContextWindowTokens, cfg.OutputReserveTokens = 16_000, 512 // the model has 4 096
	cfg.MaxConversationTurns = 50
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg, memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	llm, err := openai.New(openai.WithToken("sk-test"), openai.WithBaseURL(srv.URL), openai.WithModel("small-model"))
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, llm, mgr, agent.WithCallOptions(llms.WithModel("small-model"), llms.WithMaxTokens(512)))
	for turn := range 20 {
		before := len(srv.Refused())
		res, err := a.Run(context.Background(), "s", "u", fmt.Sprintf("Question %d: %s", turn, strings.Repeat("where is my parcel, ", 40)))
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		if refused := len(srv.Refused()) - before; refused > 1 || res.ModelCalls != 1+refused {
			t.Fatalf("turn %d: %d refused, %d calls", turn, refused, res.ModelCalls)
		}
	}
	if len(srv.Refused()) == 0 {
		t.Fatal("never pressed: the conversation stays inside the model's window")
	}
}
