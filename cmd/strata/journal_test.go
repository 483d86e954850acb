package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/memorytest"
)

// journalLLM is an OpenAI-compatible chat server standing in for an LLM
// summarizer: it copies the e-mail addresses and order numbers of its
// prompt into facts, as a model would, adds the newest topic, and reports
// a usage that varies with the prompt. It sums what it reported.
type journalLLM struct {
	srv          *httptest.Server
	calls        atomic.Int64
	input, outpt atomic.Int64
}

// The secrets of the replayed conversation.
const journalEmail, journalOrder = "mara.quist.5531@example.com", "ORD-77410"

var (
	jEmail = regexp.MustCompile(`[a-z0-9.]+@example\.com`)
	jOrder = regexp.MustCompile(`ORD-[0-9]+`)
	jTopic = regexp.MustCompile(`about ([a-z ]+?)[.,]`)
)

func newJournalLLM(t *testing.T) *journalLLM {
	l := &journalLLM{}
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		text := string(raw) // the prompt, as JSON: the values appear as they are
		type fact struct {
			Key      string `json:"key"`
			Value    string `json:"value"`
			Category string `json:"category"`
		}
		facts := []fact{}
		narr := "The customer is being helped."
		// The prompt's instructions carry examples: only the customer's
		// own values count.
		for _, e := range jEmail.FindAllString(text, -1) {
			if e == journalEmail {
				facts = append(facts, fact{"email", e, "ENTITY"})
				narr += " Their email is " + e + "."
				break
			}
		}
		for _, o := range jOrder.FindAllString(text, -1) {
			if o == journalOrder {
				facts = append(facts, fact{"order_id", o, "ENTITY"})
				break
			}
		}
		if ts := jTopic.FindAllStringSubmatch(text, -1); len(ts) > 0 {
			facts = append(facts, fact{"last_topic", ts[len(ts)-1][1], "STATE"})
		}
		out := map[string]any{"narrative": narr, "facts": facts}
		content, _ := json.Marshal(out)
		in, o := 50+len(raw)/7, 10+len(content)/11
		l.calls.Add(1)
		l.input.Add(int64(in))
		l.outpt.Add(int64(o))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": string(content)}}},
			"usage": map[string]any{"prompt_tokens": in, "completion_tokens": o, "total_tokens": in + o},
		})
	}))
	t.Cleanup(l.srv.Close)
	return l
}

// The scenario: a session replayed with strata replay, under
// either policy, with an LLM summarizer (langchaingo's openai client
// against a server speaking the wire format) into PostgreSQL, has a
// journal whose token totals are the sums of what the summarizer reported,
// whose fact changes replay to the ledger exactly, and which holds no
// erased value after ForgetFact and Forget. The transcript varies with a
// seed.
func TestReplayedSessionJournal(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	topics := []string{"the kettle delivery", "a refund for the toaster", "the blender warranty", "the opening hours", "the loyalty points"}
	email, order := journalEmail, journalOrder
	var lines []string
	turns := 24 + rng.IntN(12)
	for i := 1; i <= turns; i++ {
		user := fmt.Sprintf("Turn %d: I would like to talk about %s, please.", i, topics[rng.IntN(len(topics))])
		if i == 2 {
			user = "My email is " + email + " and my order is " + order + ", I would like to talk about the order, please."
		}
		for _, m := range []map[string]string{{"role": "user", "content": user}, {"role": "assistant", "content": fmt.Sprintf("Noted, turn %d.", i)}} {
			b, _ := json.Marshal(m)
			lines = append(lines, string(b))
		}
	}
	file := filepath.Join(t.TempDir(), "talk.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, pol := range []string{"parity", "chunked"} {
		t.Run(pol, func(t *testing.T) {
			t.Parallel()
			schema := dbtest.NewSchema(t)
			llm := newJournalLLM(t)
			code, _, errOut := cli(t, "replay", "--json", "--progress=false", "--session", "journal", "--user", "alice",
				"--set", "arc.reactor.memory.datasource.url="+schema.URL,
				"--set", "arc.reactor.memory.datasource.migrate-on-start=true",
				"--set", "arc.reactor.memory.policy.name="+pol,
				"--set", "arc.reactor.memory.summarizer.provider=openai",
				"--set", "arc.reactor.memory.summarizer.base-url="+llm.srv.URL+"/v1",
				file)
			if code != 0 {
				t.Fatalf("replay: exit %d: %s", code, errOut)
			}
			if llm.calls.Load() == 0 {
				t.Fatal("the LLM summarizer was never called")
			}
			m := pgManager(t, schema.URL)
			ctx := context.Background()
			j := memorytest.CheckJournal(t, ctx, m, "journal", "alice")
			if j.Totals.InputTokens != llm.input.Load() || j.Totals.OutputTokens != llm.outpt.Load() || j.Totals.Calls != llm.calls.Load() {
				t.Fatalf("journal totals %+v; the summarizer reported %d calls, %d input and %d output tokens",
					j.Totals, llm.calls.Load(), llm.input.Load(), llm.outpt.Load())
			}
			for _, r := range j.Records {
				if r.Kind == "fold" && (r.Summarizer != "llm" || r.Model != "gpt-4o-mini") {
					t.Fatalf("a fold of the openai summarizer recorded as %+v", r)
				}
			}
			if j.Totals.EstimatedInputTokens != 0 {
				t.Fatalf("%d tokens estimated for calls that reported theirs", j.Totals.EstimatedInputTokens)
			}
			holds := func(v string) bool {
				raw, err := json.Marshal(memorytest.CheckJournal(t, ctx, m, "journal", "alice"))
				if err != nil {
					t.Fatal(err)
				}
				return strings.Contains(string(raw), v)
			}
			if !holds(email) || !holds(order) {
				raw, _ := json.Marshal(j)
				t.Fatalf("the journal never held the secrets: the test would prove nothing: %s", raw)
			}
			if err := m.ForgetFact(ctx, "journal", "alice", "email"); err != nil {
				t.Fatal(err)
			}
			if holds(email) {
				t.Fatal("after ForgetFact the journal holds the forgotten value")
			}
			msgs, err := m.Messages(ctx, "journal", "alice", 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, msg := range msgs {
				if strings.Contains(msg.Content, order) {
					if err := m.Forget(ctx, "journal", "alice", msg.Seq); err != nil {
						t.Fatal(err)
					}
				}
			}
			if holds(order) || holds(email) {
				t.Fatal("after Forget the journal holds an erased value")
			}
			checkInspectorHTML(t, schema.URL, m, email, order)
		})
	}
}

// checkInspectorHTML writes the replayed session's page with strata
// inspect --html: it lists every message and no erased value.
func checkInspectorHTML(t *testing.T, url string, m *memory.Manager, erased ...string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "page.html")
	code, stdout, errOut := cli(t, "inspect", "--set", "arc.reactor.memory.datasource.url="+url, "--user", "alice", "--html", out, "journal")
	if code != 0 || !strings.HasPrefix(stdout, "wrote "+out) {
		t.Fatalf("inspect --html: exit %d %q %q", code, stdout, errOut)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	msgs, err := m.Messages(context.Background(), "journal", "alice", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range msgs {
		if !strings.Contains(page, fmt.Sprintf(`<tr data-seq="%d"`, msg.Seq)) {
			t.Errorf("the page does not list message #%d", msg.Seq)
		}
	}
	for _, v := range erased {
		if strings.Contains(page, v) {
			t.Errorf("the page holds the erased %q", v)
		}
	}
	// The file renders in headless Chromium, with every other host
	// unresolvable: it needs no network.
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Log("chromium not installed: the page is not opened in a browser")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--host-resolver-rules=MAP * ~NOTFOUND", "--dump-dom", "file://"+out)
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	for _, msg := range msgs {
		if !strings.Contains(string(dom), fmt.Sprintf(`<tr data-seq="%d"`, msg.Seq)) {
			t.Errorf("in Chromium, the page does not list message #%d", msg.Seq)
		}
	}
	if !strings.Contains(string(dom), `id="context-chart"`) {
		t.Error("in Chromium, the page has no chart")
	}
}
