package summary

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/strata-go/strata/trimmer"
)

// fakeModel is a recording llms.Model: it keeps the messages and options of
// every call and answers with scripted replies.
type fakeModel struct {
	mu      sync.Mutex
	calls   []fakeCall
	replies []fakeReply
	// block makes GenerateContent wait for its context to end.
	block bool
}

type fakeCall struct {
	msgs []llms.MessageContent
	opts llms.CallOptions
}

type fakeReply struct {
	content string
	info    map[string]any
	err     error
}

func (f *fakeModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var opts llms.CallOptions
	for _, o := range options {
		o(&opts)
	}
	f.mu.Lock()
	f.calls = append(f.calls, fakeCall{msgs: msgs, opts: opts})
	var r fakeReply
	if len(f.replies) > 0 {
		r, f.replies = f.replies[0], f.replies[1:]
	}
	block := f.block
	f.mu.Unlock()
	if block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if r.err != nil {
		return nil, r.err
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: r.content, GenerationInfo: r.info}}}, nil
}

func (f *fakeModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, f, prompt, options...)
}

func (f *fakeModel) recorded() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeCall(nil), f.calls...)
}

func textOf(t *testing.T, mc llms.MessageContent) string {
	t.Helper()
	if len(mc.Parts) != 1 {
		t.Fatalf("message has %d parts, want 1", len(mc.Parts))
	}
	tc, ok := mc.Parts[0].(llms.TextContent)
	if !ok {
		t.Fatalf("part is %T, want llms.TextContent", mc.Parts[0])
	}
	return tc.Text
}

var supportDialogue = []llms.ChatMessage{
	llms.SystemChatMessage{Content: "You are a support agent."},
	llms.HumanChatMessage{Content: "Where is my order A1?"},
	llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: "call_1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "lookup_order", Arguments: `{"id":"A1"}`}}}},
	llms.ToolChatMessage{ID: "call_1", Content: `{"status":"shipped"}`},
	llms.AIChatMessage{Content: "Your order A1 has shipped."},
}

func TestBuildPromptUserPrompt(t *testing.T) {
	req := Request{
		SessionID: "s1",
		Messages:  supportDialogue,
		Existing: &Summary{
			Narrative: "The customer asked about order A1.",
			Facts: []Fact{
				{Key: "order_id", Value: "A1", Category: Entity},
				{Key: "status", Value: "pending", Category: "bogus"},
			},
		},
		Incremental: true,
	}
	_, user := BuildPrompt(req, 0)
	want := `[SYSTEM]: You are a support agent.
[USER]: Where is my order A1?
[ASSISTANT]: (calls lookup_order {"id":"A1"})
[TOOL]: {"status":"shipped"}
[ASSISTANT]: Your order A1 has shipped.

Previously extracted facts (merge and update as needed):
- order_id: A1 [ENTITY]
- status: pending [GENERAL]
Existing keys (reuse them for updates): order_id, status

Summary so far (extend it with the new messages; do not drop earlier points):
The customer asked about order A1.`
	if user != want {
		t.Fatalf("user prompt:\n%s\n--- want:\n%s", user, want)
	}

	// Not incremental: the narrative is not sent, the facts are.
	req.Incremental = false
	_, user = BuildPrompt(req, 0)
	if strings.Contains(user, "Summary so far") || !strings.Contains(user, "Previously extracted facts") {
		t.Fatalf("non-incremental prompt:\n%s", user)
	}
	// No existing summary: transcript only.
	req.Existing = nil
	_, user = BuildPrompt(req, 0)
	if !strings.HasSuffix(user, "[ASSISTANT]: Your order A1 has shipped.") {
		t.Fatalf("transcript-only prompt:\n%s", user)
	}
	// Existing narrative but no facts, incremental.
	req.Existing = &Summary{Narrative: "Earlier."}
	req.Incremental = true
	_, user = BuildPrompt(req, 0)
	if !strings.HasSuffix(user, "shipped.\n\nSummary so far (extend it with the new messages; do not drop earlier points):\nEarlier.") {
		t.Fatalf("narrative-only prompt:\n%s", user)
	}
}

func TestBuildPromptToolCallWithText(t *testing.T) {
	req := Request{Messages: []llms.ChatMessage{
		llms.AIChatMessage{Content: "Let me check.", ToolCalls: []llms.ToolCall{
			{ID: "1", FunctionCall: &llms.FunctionCall{Name: "a", Arguments: `{"x":1}`}},
			{ID: "2", FunctionCall: &llms.FunctionCall{Name: "b", Arguments: ""}},
		}},
		llms.GenericChatMessage{Role: "critic", Content: "ok"},
	}}
	_, user := BuildPrompt(req, 0)
	want := "[ASSISTANT]: Let me check. (calls a {\"x\":1}) (calls b)\n[CRITIC]: ok"
	if user != want {
		t.Fatalf("got %q, want %q", user, want)
	}
}

func TestBuildPromptSystemPrompt(t *testing.T) {
	system, _ := BuildPrompt(Request{}, 0)
	for _, want := range []string{
		`"narrative"`, `"facts"`, `"key"`, `"value"`, `"category"`,
		"Maximum ~500 tokens",
		"ENTITY, DECISION, CONDITION, STATE, NUMERIC, GENERAL",
		"Extract all numbers, dates, names and specific conditions as facts.",
		"Preserve exact values",
		"update facts whose value changed, keep unchanged facts, add new ones",
		`"remove": true`,
		`"stated": true`,
		"reuse the existing key exactly",
		"Never use placeholder values",
		"delivery_address",
		"Respond ONLY with valid JSON, no markdown code fences.",
		"#1234", "50,000 KRW",
	} {
		if !strings.Contains(system, want) {
			t.Errorf("system prompt lacks %q", want)
		}
	}
	if !strings.HasPrefix(system, "You are a conversation summarizer") {
		t.Errorf("system prompt starts %q", system[:40])
	}
	// The example is valid JSON that ParseReply reads as three facts.
	example := system[strings.LastIndex(system, "\n")+1:]
	res, err := ParseReply(example)
	if err != nil {
		t.Fatalf("example: %v", err)
	}
	var cats []Category
	for _, f := range res.Facts {
		cats = append(cats, f.Category)
	}
	if !reflect.DeepEqual(cats, []Category{Entity, Numeric, State}) {
		t.Errorf("example categories %v", cats)
	}

	system, _ = BuildPrompt(Request{}, 250)
	if !strings.Contains(system, "Maximum ~250 tokens") {
		t.Errorf("maxNarrativeTokens not applied")
	}
}

func TestLLMServiceCall(t *testing.T) {
	model := &fakeModel{replies: []fakeReply{{
		content: "```json\n" + `{"narrative":"Order A1 shipped.","facts":[{"key":"order_id","value":"A1","category":"ENTITY"},{"key":"status","value":"shipped","category":"STATE"}]}` + "\n```",
		info:    map[string]any{"PromptTokens": 120, "CompletionTokens": 30, "TotalTokens": 150},
	}}}
	svc := NewLLMService(model, WithMaxNarrativeTokens(300), WithCallOptions(llms.WithModel("gpt-4o-mini"), llms.WithTemperature(0.1)))
	req := Request{SessionID: "s1", Messages: supportDialogue}
	res, err := svc.Summarize(context.Background(), req)
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	want := Result{
		Narrative: "Order A1 shipped.",
		Facts:     []Fact{{Key: "order_id", Value: "A1", Category: Entity}, {Key: "status", Value: "shipped", Category: State}},
		Usage:     Usage{InputTokens: 120, OutputTokens: 30},
	}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("got %#v\nwant %#v", res, want)
	}

	calls := model.recorded()
	if len(calls) != 1 {
		t.Fatalf("%d calls, want 1", len(calls))
	}
	c := calls[0]
	if len(c.msgs) != 2 || c.msgs[0].Role != llms.ChatMessageTypeSystem || c.msgs[1].Role != llms.ChatMessageTypeHuman {
		t.Fatalf("messages: %+v", c.msgs)
	}
	wantSystem, wantUser := BuildPrompt(req, 300)
	if got := textOf(t, c.msgs[0]); got != wantSystem {
		t.Errorf("system message differs from BuildPrompt")
	}
	if got := textOf(t, c.msgs[1]); got != wantUser {
		t.Errorf("user message differs from BuildPrompt")
	}
	if !c.opts.JSONMode {
		t.Errorf("JSON mode not requested")
	}
	if c.opts.Model != "gpt-4o-mini" || c.opts.Temperature != 0.1 {
		t.Errorf("call options not passed: %+v", c.opts)
	}
}

func TestLLMServiceWithoutJSONMode(t *testing.T) {
	model := &fakeModel{replies: []fakeReply{{content: `{"narrative":"x"}`}}}
	if _, err := NewLLMService(model, WithoutJSONMode()).Summarize(context.Background(), Request{Messages: supportDialogue}); err != nil {
		t.Fatal(err)
	}
	if model.recorded()[0].opts.JSONMode {
		t.Fatal("JSON mode requested despite WithoutJSONMode")
	}
}

func TestLLMServiceEmptyInputMakesNoCall(t *testing.T) {
	model := &fakeModel{}
	res, err := NewLLMService(model).Summarize(context.Background(), Request{SessionID: "s", Existing: &Summary{Narrative: "x"}})
	if err != nil || !reflect.DeepEqual(res, Result{}) {
		t.Fatalf("got %#v, %v", res, err)
	}
	if n := len(model.recorded()); n != 0 {
		t.Fatalf("model called %d times", n)
	}
}

func TestLLMServiceTimeout(t *testing.T) {
	model := &fakeModel{block: true}
	svc := NewLLMService(model, WithTimeout(50*time.Millisecond))
	start := time.Now()
	res, err := svc.Summarize(context.Background(), Request{Messages: supportDialogue})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v does not wrap context.DeadlineExceeded", err)
	}
	if !res.IsEmpty() {
		t.Errorf("result %#v", res)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}

// stubbornModel ignores its context.
type stubbornModel struct{ release chan struct{} }

func (m stubbornModel) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	<-m.release
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: `{"narrative":"late"}`}}}, nil
}

func (m stubbornModel) Call(context.Context, string, ...llms.CallOption) (string, error) {
	return "", nil
}

func TestLLMServiceTimeoutWithModelIgnoringContext(t *testing.T) {
	m := stubbornModel{release: make(chan struct{})}
	defer close(m.release)
	_, err := NewLLMService(m, WithTimeout(30*time.Millisecond)).Summarize(context.Background(), Request{Messages: supportDialogue})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
}

func TestLLMServiceCallerCancel(t *testing.T) {
	model := &fakeModel{block: true}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err := NewLLMService(model).Summarize(ctx, Request{Messages: supportDialogue})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want context.Canceled and not ErrTimeout", err)
	}
}

func TestLLMServiceErrors(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name  string
		reply fakeReply
		want  error
	}{
		{"model error wrapped", fakeReply{err: boom}, boom},
		{"empty reply", fakeReply{content: "  "}, ErrEmptyReply},
		{"empty JSON", fakeReply{content: `{"narrative":"","facts":[]}`}, ErrEmptyReply},
		{"unrelated object", fakeReply{content: `{"answer":"42"}`}, ErrEmptyReply},
		{"truncated JSON", fakeReply{content: `{"narrative":"The cust`}, ErrUnparseable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			model := &fakeModel{replies: []fakeReply{tc.reply}}
			res, err := NewLLMService(model).Summarize(context.Background(), Request{Messages: supportDialogue})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !res.IsEmpty() {
				t.Fatalf("result %#v", res)
			}
		})
	}
}

type nilResponseModel struct{}

func (nilResponseModel) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	return &llms.ContentResponse{}, nil
}
func (nilResponseModel) Call(context.Context, string, ...llms.CallOption) (string, error) {
	return "", nil
}

func TestLLMServiceNoChoices(t *testing.T) {
	_, err := NewLLMService(nilResponseModel{}).Summarize(context.Background(), Request{Messages: supportDialogue})
	if !errors.Is(err, ErrEmptyReply) {
		t.Fatalf("err = %v", err)
	}
}

type panickyModel struct{ nilResponseModel }

func (panickyModel) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	panic("provider bug")
}

func TestLLMServiceModelPanicIsAnError(t *testing.T) {
	_, err := NewLLMService(panickyModel{}).Summarize(context.Background(), Request{Messages: supportDialogue})
	if err == nil || !strings.Contains(err.Error(), "provider bug") {
		t.Fatalf("err = %v", err)
	}
}

func TestLLMServiceProseReply(t *testing.T) {
	// A prose reply is a failed fold, never a narrative.
	model := &fakeModel{replies: []fakeReply{{content: "The customer asked where order A1 is; it has shipped."}}}
	res, err := NewLLMService(model).Summarize(context.Background(), Request{Messages: supportDialogue})
	if !errors.Is(err, ErrNotJSON) || !res.IsEmpty() {
		t.Fatalf("got %#v, %v", res, err)
	}
}

func TestLLMServiceCapsNarrative(t *testing.T) {
	long := strings.Repeat("The customer asked about the order again. ", 40)
	reply := `{"narrative": ` + strconv.Quote(long) + `, "facts": []}`
	model := &fakeModel{replies: []fakeReply{{content: reply}}}
	res, err := NewLLMService(model, WithMaxNarrativeTokens(30)).Summarize(context.Background(), Request{Messages: supportDialogue})
	if err != nil {
		t.Fatal(err)
	}
	if n := trimmer.EstimateScript(res.Narrative); n > 30 || n == 0 {
		t.Fatalf("narrative of %d tokens: %q", n, res.Narrative)
	}
	if !strings.HasSuffix(res.Narrative, "again.") {
		t.Fatalf("not cut at a sentence boundary: %q", res.Narrative)
	}
}

func TestLLMServiceLogs(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	model := &fakeModel{replies: []fakeReply{{content: `{"narrative":"x"}`, info: map[string]any{"PromptTokens": 3}}}}
	if _, err := NewLLMService(model, WithLogger(logger)).Summarize(context.Background(), Request{SessionID: "s9", Messages: supportDialogue}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if out := buf.String(); !strings.Contains(out, "summarization done") || !strings.Contains(out, "session=s9") || !strings.Contains(out, "input_tokens=3") {
		t.Fatalf("log: %s", out)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestLLMServiceOpenAIWire drives langchaingo's real openai client against
// a fake /v1/chat/completions endpoint.
func TestLLMServiceOpenAIWire(t *testing.T) {
	var (
		mu   sync.Mutex
		body map[string]any
		auth string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		auth = r.Header.Get("Authorization")
		_ = json.Unmarshal(raw, &body)
		mu.Unlock()
		reply := `{"narrative":"The customer asked about order A1, which has shipped.","facts":[{"key":"order_id","value":"A1","category":"ENTITY"}]}`
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
			"choices": []any{map[string]any{
				"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": reply},
			}},
			"usage": map[string]any{"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366},
		})
	}))
	defer srv.Close()

	llm, err := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithToken("sk-test"), openai.WithModel("gpt-4o-mini"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := NewLLMService(llm).Summarize(context.Background(), Request{SessionID: "s1", Messages: supportDialogue})
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	want := Result{
		Narrative: "The customer asked about order A1, which has shipped.",
		Facts:     []Fact{{Key: "order_id", Value: "A1", Category: Entity}},
		Usage:     Usage{InputTokens: 321, OutputTokens: 45},
	}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("got %#v\nwant %#v", res, want)
	}

	mu.Lock()
	defer mu.Unlock()
	if auth != "Bearer sk-test" {
		t.Errorf("Authorization = %q", auth)
	}
	if rf, _ := body["response_format"].(map[string]any); rf == nil || rf["type"] != "json_object" {
		t.Errorf("response_format = %v, want {type: json_object}", body["response_format"])
	}
	msgs, _ := body["messages"].([]any)
	if len(msgs) != 2 {
		t.Fatalf("request has %d messages: %v", len(msgs), body["messages"])
	}
	sys, _ := msgs[0].(map[string]any)
	usr, _ := msgs[1].(map[string]any)
	if sys["role"] != "system" || !strings.HasPrefix(sys["content"].(string), "You are a conversation summarizer") {
		t.Errorf("system message = %v", sys)
	}
	if usr["role"] != "user" || !strings.Contains(usr["content"].(string), "[USER]: Where is my order A1?\n[ASSISTANT]: (calls lookup_order {\"id\":\"A1\"})") {
		t.Errorf("user message = %v", usr)
	}
}

// TestLLMServiceAsksForTheConversationsLanguage: whatever the language of
// the conversation, the request the model receives asks for the narrative
// in that language and for values verbatim in their own script, carries
// the transcript unchanged, and its last example is not English; the
// model's narrative in that language comes back as written.
func TestLLMServiceAsksForTheConversationsLanguage(t *testing.T) {
	cases := []struct {
		lang, user, agent, narrative, value string
	}{
		{"Korean", "주문번호 ORD-58213 환불해 주세요. 결제 금액은 129,990원이었어요.", "김민지 님, 환불을 접수했습니다.",
			"고객이 주문 ORD-58213의 129,990원 환불을 요청했다.", "129,990원"},
		{"Japanese", "注文番号はJP-44817です。住所は東京都渋谷区神南1丁目2-3です。", "田中様、承知いたしました。",
			"田中様が注文JP-44817の配送先を伝えた。", "東京都渋谷区神南1丁目2-3"},
		{"Chinese", "我叫王小明，订单号是CN-66120，金额是1,280元。", "王先生，您好，已为您处理。",
			"王先生询问订单CN-66120，金额1,280元。", "1,280元"},
		{"German", "Meine Bestellnummer ist DE-4711, die Lieferadresse ist Müllerstraße 12.", "Danke, Frau Müller.",
			"Die Kundin nannte die Bestellung DE-4711 und die Adresse Müllerstraße 12.", "Müllerstraße 12"},
	}
	for _, tc := range cases {
		t.Run(tc.lang, func(t *testing.T) {
			reply := fmt.Sprintf(`{"narrative":%q,"facts":[{"key":"value","value":%q,"category":"ENTITY"}]}`, tc.narrative, tc.value)
			model := &fakeModel{replies: []fakeReply{{content: reply}}}
			msgs := []llms.ChatMessage{llms.HumanChatMessage{Content: tc.user}, llms.AIChatMessage{Content: tc.agent}}
			res, err := NewLLMService(model).Summarize(context.Background(), Request{SessionID: "s", Messages: msgs})
			if err != nil {
				t.Fatal(err)
			}
			if res.Narrative != tc.narrative || len(res.Facts) != 1 || res.Facts[0].Value != tc.value {
				t.Errorf("reply not kept as written: %+v", res)
			}
			calls := model.recorded()
			if len(calls) != 1 || len(calls[0].msgs) != 2 {
				t.Fatalf("calls: %+v", calls)
			}
			system, user := textOf(t, calls[0].msgs[0]), textOf(t, calls[0].msgs[1])
			for _, want := range []string{
				"Write it in the language the conversation is written in",
				"never translate it into English",
				"verbatim in its own script",
				"never transliterate, romanize or translate them",
			} {
				if !strings.Contains(system, want) {
					t.Errorf("system prompt lacks %q", want)
				}
			}
			for _, line := range []string{"[USER]: " + tc.user, "[ASSISTANT]: " + tc.agent} {
				if !strings.Contains(user, line) {
					t.Errorf("transcript lacks %q:\n%s", line, user)
				}
			}
			// The last example, the one a model imitates most, is a
			// conversation in Korean: its narrative and values are Hangul.
			example, err := ParseReply(system[strings.LastIndex(system, "\n")+1:])
			if err != nil {
				t.Fatal(err)
			}
			if !hasHangul(example.Narrative) || !hasHangul(example.Facts[1].Value) {
				t.Errorf("last example is not in Korean: %+v", example)
			}
		})
	}
}

// hasHangul reports whether s holds a Hangul syllable.
func hasHangul(s string) bool {
	for _, r := range s {
		if r >= 0xAC00 && r <= 0xD7A3 {
			return true
		}
	}
	return false
}
