package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/trimmer"
)

const sample = "../../examples/support-chat.jsonl"

// cli runs the command in-process with a clean environment for Strata's
// variables (they are read from the process environment).
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// wantError checks a failed run: the exit code and one "strata: …" line
// on stderr containing want.
func wantError(t *testing.T, code int, stderr string, wantCode int, want string) {
	t.Helper()
	if code != wantCode {
		t.Fatalf("exit %d, want %d (stderr %q)", code, wantCode, stderr)
	}
	if !strings.HasPrefix(stderr, "strata: ") || strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Fatalf("stderr is not one 'strata: …' line: %q", stderr)
	}
	if !strings.Contains(stderr, want) {
		t.Fatalf("stderr %q does not contain %q", stderr, want)
	}
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMain(m *testing.M) {
	// The configuration comes from the process environment: make sure no
	// developer setting leaks into the tests. DATABASE_URL, which the
	// command falls back on, names the test server (scripts/with-postgres.sh
	// sets it): it moves to the variable only the test helpers read.
	if u := os.Getenv(dbtest.EnvFallbackURL); u != "" {
		if os.Getenv(dbtest.EnvURL) == "" {
			os.Setenv(dbtest.EnvURL, u)
		}
		os.Unsetenv(dbtest.EnvFallbackURL)
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "ARC_REACTOR_") || strings.HasPrefix(name, "SPRING_DATASOURCE_") {
			os.Unsetenv(name)
		}
	}
	os.Exit(m.Run())
}

func TestReplaySampleReport(t *testing.T) {
	t.Parallel()
	code, out, errOut := cli(t, "replay", sample)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"strata replay " + sample + " (jsonl: 29 user turns, 62 messages)",
		"summaries: on — trigger > 20 messages, verbatim window 10, policy parity, summarizer extractive [replay default",
		"── turn 1 · empty · stored 0 · folds 0 · context 2 messages,",
		"▶ user       Hi, I need help with an order that arrived damaged.",
		"→ lookup_order(",
		"← {\"order_id\": \"BL-58213\"",
		"↳ fold: the summary now covers messages up to #",
		"· hierarchical · stored ",
		"facts      - ",
		"══ final: 29 turns · 62 stored messages · ",
		"  - order_id: #BL-58213 [ENTITY]",
		"  - email: priya.raman@example.com [ENTITY]",
		"narrative:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s", out)
	}
}

type turnLine struct {
	Turn           *int          `json:"turn"`
	Context        []jsonMessage `json:"context"`
	ContextTokens  *int          `json:"context_tokens"`
	StoredMessages *int          `json:"stored_messages"`
	Folds          *int          `json:"folds"`
	Mode           string        `json:"mode"`
	Summary        *summaryBody  `json:"summary"`
}

func parseJSONLines(t *testing.T, out string) []turnLine {
	t.Helper()
	var lines []turnLine
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var l turnLine
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", len(lines)+1, err, sc.Text())
		}
		lines = append(lines, l)
	}
	return lines
}

// toChat turns a --json context back into chat messages, to validate it.
func toChat(ctx []jsonMessage) []llms.ChatMessage {
	var out []llms.ChatMessage
	for _, m := range ctx {
		switch m.Role {
		case "system":
			out = append(out, llms.SystemChatMessage{Content: m.Content})
		case "user":
			out = append(out, llms.HumanChatMessage{Content: m.Content})
		case "assistant":
			ai := llms.AIChatMessage{Content: m.Content}
			for _, tc := range m.ToolCalls {
				ai.ToolCalls = append(ai.ToolCalls, llms.ToolCall{ID: tc.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
			}
			out = append(out, ai)
		case "tool":
			out = append(out, llms.ToolChatMessage{ID: m.ToolCallID, Content: m.Content})
		}
	}
	return out
}

func TestReplaySampleJSON(t *testing.T) {
	t.Parallel()
	code, out, errOut := cli(t, "replay", "--json", sample)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	lines := parseJSONLines(t, out)
	if len(lines) != 30 {
		t.Fatalf("%d lines, want 29 turns + 1 summary", len(lines))
	}
	users := userMessages(t, sample)
	prevFolds := 0
	for i, l := range lines[:29] {
		if l.Turn == nil || *l.Turn != i+1 || l.ContextTokens == nil || l.StoredMessages == nil || l.Folds == nil || l.Summary != nil {
			t.Fatalf("line %d has the wrong shape: %+v", i+1, l)
		}
		if *l.ContextTokens <= 0 || *l.Folds < prevFolds {
			t.Fatalf("turn %d: tokens %d folds %d (before %d)", i+1, *l.ContextTokens, *l.Folds, prevFolds)
		}
		prevFolds = *l.Folds
		for _, m := range l.Context {
			switch m.Role {
			case "system", "user", "assistant", "tool":
			default:
				t.Fatalf("turn %d: role %q", i+1, m.Role)
			}
		}
		if first := l.Context[0]; first.Role != "system" || !strings.HasPrefix(first.Content, "You are Nova") {
			t.Fatalf("turn %d: the system prompt is not first: %+v", i+1, first)
		}
		if last := l.Context[len(l.Context)-1]; last.Role != "user" || last.Content != users[i] {
			t.Fatalf("turn %d: last message %+v, want the user message %q", i+1, last, users[i])
		}
		if err := trimmer.Validate(toChat(l.Context)); err != nil {
			t.Fatalf("turn %d: context breaks provider rules: %v", i+1, err)
		}
	}
	if prevFolds == 0 {
		t.Fatal("no fold in the sample replay")
	}
	if lines[20].Mode != "hierarchical" || !strings.HasPrefix(lines[20].Context[1].Content, "Conversation Facts:") {
		t.Fatalf("turn 21 is not hierarchical: %+v", lines[20])
	}
	s := lines[29].Summary
	if s == nil || s.Turns != 29 || s.StoredMessages != 62 || s.Folds == 0 || s.Cursor == 0 || s.Narrative == "" {
		t.Fatalf("summary line = %+v", s)
	}
	found := false
	for _, f := range s.Facts {
		if f.Value == "#BL-58213" && f.Category == "ENTITY" {
			found = true
		}
	}
	if !found {
		t.Fatalf("final facts lack the order id: %+v", s.Facts)
	}
}

func userMessages(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m struct{ Role, Content string }
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		if m.Role == "user" {
			out = append(out, m.Content)
		}
	}
	return out
}

func TestReplaySummariesOffByConfig(t *testing.T) {
	t.Parallel()
	cfg := writeTemp(t, "off.yaml", "arc.reactor.memory.summary.enabled: false\narc.reactor.llm.max-conversation-turns: 3\n")
	code, out, errOut := cli(t, "replay", "--json", "--config", cfg, sample)
	if code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	lines := parseJSONLines(t, out)
	last := lines[len(lines)-2]
	if last.Mode != "take-last" || *last.Folds != 0 || len(last.Context) != 1+6+1 {
		t.Fatalf("takeLast replay: mode %s folds %d context %d", last.Mode, *last.Folds, len(last.Context))
	}
	if s := lines[len(lines)-1].Summary; s == nil || len(s.Facts) != 0 {
		t.Fatalf("summary = %+v", s)
	}
}

func TestReplayFormatsAndTools(t *testing.T) {
	t.Parallel()
	jsonl := writeTemp(t, "chat.jsonl", `{"role":"system","content":"Be brief."}
{"role":"assistant","content":"Hi! How can I help?"}
{"role":"user","content":"Where is order #Z-42?"}
{"role":"assistant","content":null,"tool_calls":[{"id":"c1","name":"lookup","arguments":{"id":"Z-42"}}]}
{"role":"tool","tool_call_id":"c1","name":"lookup","content":"{\"status\":\"shipped\"}"}

{"role":"assistant","content":[{"type":"text","text":"It shipped."}]}
{"role":"user","content":"Thanks"}
`)
	code, out, errOut := cli(t, "replay", "--json", jsonl)
	if code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	lines := parseJSONLines(t, out)
	if len(lines) != 3 {
		t.Fatalf("%d lines", len(lines))
	}
	ctx := lines[1].Context
	roles := []string{}
	for _, m := range ctx {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "system,assistant,user,assistant,tool,assistant,user" {
		t.Fatalf("roles %v", roles)
	}
	if tc := ctx[3].ToolCalls; len(tc) != 1 || tc[0].Name != "lookup" || tc[0].Arguments != `{"id":"Z-42"}` || ctx[4].ToolCallID != "c1" || ctx[5].Content != "It shipped." {
		t.Fatalf("tool messages %+v", ctx)
	}
	// The same conversation as a JSON array, auto-detected.
	arr := writeTemp(t, "chat.json", `[{"role":"user","content":"Hello"},{"role":"assistant","content":"Hi"},{"role":"user","content":"Bye"}]`)
	if code, out, errOut := cli(t, "replay", "--json", arr); code != 0 || len(parseJSONLines(t, out)) != 3 {
		t.Fatalf("json array: exit %d %s", code, errOut)
	}
}

func TestBadInputs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	malformed := writeTemp(t, "bad.jsonl", "{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"assistant\",\"content\":\"hello\"}\n{\"role\":\"user\",\"content\":\"oops}\n")
	badRole := writeTemp(t, "role.jsonl", "{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"robot\",\"content\":\"beep\"}\n")
	noCallID := writeTemp(t, "tool.jsonl", "{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"tool\",\"content\":\"x\"}\n")
	noUser := writeTemp(t, "nouser.jsonl", "{\"role\":\"assistant\",\"content\":\"hi\"}\n")
	unknown := writeTemp(t, "data.txt", "hello world\n")
	empty := writeTemp(t, "empty.json", "  \n")
	badCfg := writeTemp(t, "bad.yaml", "arc:\n  reactor:\n    memory:\n      summary:\n        recent-message-count: -1\n")
	typoCfg := writeTemp(t, "typo.yaml", "arc.reactor.memory.summary.enabeld: true\n")
	brokenYAML := writeTemp(t, "broken.yaml", "arc: [\n")
	locomoBad := writeTemp(t, "l.json", `[{"sample_id":"x","conversation":{"speaker_a":"A","session_1":[{"speaker":"A","text":"hi"}]}}]`)

	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"missing file", []string{"replay", filepath.Join(dir, "nope.jsonl")}, 1, "nope.jsonl: no such file"},
		{"malformed line", []string{"replay", malformed}, 1, "bad.jsonl:3: malformed JSON"},
		{"unknown role", []string{"replay", badRole}, 1, `role.jsonl:2: role = "robot": want user, assistant, system or tool`},
		{"tool without id", []string{"replay", noCallID}, 1, "tool.jsonl:2: tool_call_id is missing: a tool message answers one tool call"},
		{"no user message", []string{"replay", noUser}, 1, "has no user message"},
		{"undetectable format", []string{"replay", unknown}, 1, "cannot detect the format; pass --format"},
		{"empty file", []string{"replay", empty}, 1, "empty file"},
		{"unknown format", []string{"replay", "--format", "csv", sample}, 2, `unknown format "csv"`},
		{"wrong format", []string{"replay", "--format", "locomo", sample}, 1, "malformed LoCoMo JSON"},
		{"sample for jsonl", []string{"replay", "--sample", "3", sample}, 2, "--sample applies to LoCoMo and τ-bench"},
		{"unknown sample", []string{"replay", "--sample", "conv-99", locomoBad}, 1, `no sample "conv-99" (sample ids: x)`},
		{"invalid config", []string{"replay", "--config", badCfg, sample}, 1, "invalid config: arc.reactor.memory.summary.recent-message-count = -1 (from " + badCfg + "): must be >= 0"},
		{"config typo", []string{"replay", "--config", typoCfg, sample}, 1, "unknown key (did you mean arc.reactor.memory.summary.enabled?)"},
		{"malformed config", []string{"replay", "--config", brokenYAML, sample}, 1, "broken.yaml: malformed YAML"},
		{"missing config", []string{"replay", "--config", filepath.Join(dir, "none.yaml"), sample}, 1, "none.yaml: file does not exist"},
		{"bad --set", []string{"replay", "--set", "arc.reactor.llm.max-output-tokens=lots", sample}, 1, "max-output-tokens (from --set): want an integer"},
		{"no file", []string{"replay"}, 2, "want exactly one FILE"},
		{"two files", []string{"replay", sample, sample}, 2, "want exactly one FILE"},
		{"unknown flag", []string{"replay", "--bogus", sample}, 2, "flag provided but not defined: -bogus"},
		{"bad encoding", []string{"replay", "--encoding", "gpt2", sample}, 2, "--encoding"},
		{"no command", []string{}, 2, "no command"},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"flag before command", []string{"--json", "replay"}, 2, "flags go after the command"},
		{"migrate without action", []string{"migrate"}, 2, "want up, down, version, force VERSION, distribute or import-arc-reactor"},
		{"migrate bad action", []string{"migrate", "sideways"}, 2, `unknown action "sideways"`},
		{"migrate down unconfirmed", []string{"migrate", "down"}, 2, "pass --yes"},
		{"migrate force bad version", []string{"migrate", "force", "x"}, 2, "VERSION must be an integer"},
		{"migrate without datasource", []string{"migrate", "up"}, 1, "migrate: no datasource configured"},
		{"inspect without session", []string{"inspect"}, 2, "want exactly one SESSION"},
		{"inspect without user", []string{"inspect", "s1"}, 2, "want --user USER"},
		{"inspect without datasource", []string{"inspect", "--user", "u", "s1"}, 1, "inspect: no datasource configured"},
		{"config extra argument", []string{"config", "x"}, 2, `unexpected argument "x"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := cli(t, c.args...)
			wantError(t, code, errOut, c.code, c.want)
			if out != "" {
				t.Fatalf("stdout not empty on error: %q", out)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"}, {"help", "replay"},
		{"replay", "--help"}, {"migrate", "--help"}, {"inspect", "-h"}, {"config", "--help"},
	} {
		code, out, errOut := cli(t, args...)
		if code != 0 || errOut != "" || !strings.Contains(out, "Usage") {
			t.Fatalf("%v: exit %d stderr %q stdout %q", args, code, errOut, out)
		}
	}
	_, out, _ := cli(t, "replay", "--help")
	for _, want := range []string{"-config FILE", "-set KEY=VALUE", "-format FORMAT", "-json", "-sample", "locomo", "taubench"} {
		if !strings.Contains(out, want) {
			t.Errorf("replay --help lacks %q", want)
		}
	}
}

func TestConfigCommand(t *testing.T) {
	t.Parallel()
	cfg := writeTemp(t, "s.yaml", "arc.reactor.memory.summary.enabled: true\n")
	code, out, errOut := cli(t, "config", "--config", cfg, "--set", "arc.reactor.memory.summarizer.provider=gemini")
	if code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	for _, want := range []string{
		"arc.reactor.memory.summary.enabled", cfg,
		"arc.reactor.memory.summarizer.provider", `"gemini"`, "--set",
		"summarizer in use: gemini (model gemini-2.0-flash, API key from $GOOGLE_API_KEY, else $GEMINI_API_KEY)\n  because arc.reactor.memory.summarizer.provider is gemini (--set)\n",
		"stores: in-memory",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("config output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = cli(t, "config", "--example")
	example, err := os.ReadFile("../../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || out != string(example) {
		t.Fatal("config --example differs from config.example.yaml")
	}
}

func TestSpecialArguments(t *testing.T) {
	t.Parallel()
	// Flags after the file, and "--".
	code, out, _ := cli(t, "replay", sample, "--json", "--set", "arc.reactor.memory.summary.enabled=false")
	if code != 0 || !strings.HasPrefix(out, `{"turn":1,`) {
		t.Fatalf("flags after FILE: exit %d, %.80q", code, out)
	}
	// Exact token counts with an embedded tokenizer.
	code, out, errOut := cli(t, "replay", "--json", "--encoding", "cl100k_base", sample)
	if code != 0 || len(parseJSONLines(t, out)) != 30 {
		t.Fatalf("--encoding: exit %d %s", code, errOut)
	}
}
