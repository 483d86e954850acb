package summary

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/chatmsg"
	"github.com/strata-go/strata/internal/usage"
)

// Defaults of the LLM summarizer.
const (
	DefaultMaxNarrativeTokens = 500
	DefaultTimeout            = 60 * time.Second
)

// LLMOption configures NewLLMService.
type LLMOption func(*llmService)

// WithMaxNarrativeTokens sets the narrative length the prompt asks for
// (default 500). It is enforced too: a longer narrative is cut at a
// sentence boundary (CapNarrative, counting with trimmer.EstimateScript).
// n <= 0 keeps the default.
func WithMaxNarrativeTokens(n int) LLMOption {
	return func(s *llmService) {
		if n > 0 {
			s.maxNarrativeTokens = n
		}
	}
}

// WithTimeout bounds one summarization call (default 60s). A call that
// runs out of time returns an error wrapping ErrTimeout. d <= 0 keeps the
// default.
func WithTimeout(d time.Duration) LLMOption {
	return func(s *llmService) {
		if d > 0 {
			s.timeout = d
		}
	}
}

// WithLogger sets the logger for per-call debug records (default: none).
func WithLogger(l *slog.Logger) LLMOption {
	return func(s *llmService) {
		if l != nil {
			s.log = l
		}
	}
}

// WithoutJSONMode stops the service from passing llms.WithJSONMode(), for
// servers that reject JSON mode. The prompt still asks for JSON and the
// reply parser is tolerant.
func WithoutJSONMode() LLMOption {
	return func(s *llmService) { s.jsonMode = false }
}

// WithCallOptions adds call options (model name, temperature, max tokens, …)
// to every summarization call. They are applied after JSON mode.
func WithCallOptions(opts ...llms.CallOption) LLMOption {
	return func(s *llmService) { s.callOpts = append(s.callOpts, opts...) }
}

type llmService struct {
	model              llms.Model
	maxNarrativeTokens int
	timeout            time.Duration
	jsonMode           bool
	callOpts           []llms.CallOption
	log                *slog.Logger
}

// NewLLMService returns a Service that makes one model.GenerateContent call
// per summarization: a system message with the instructions of BuildPrompt
// and a human message with the transcript, in JSON mode unless
// WithoutJSONMode is given. The reply is read with ParseReply.
//
// Summarize returns an empty Result and no error, without calling the
// model, when Request.Messages is empty. Otherwise it never returns an empty
// Result with a nil error: a timeout wraps ErrTimeout, a reply with neither
// facts nor narrative wraps ErrEmptyReply, a JSON-looking reply that cannot
// be decoded wraps ErrUnparseable, a reply that is not JSON at all (prose)
// wraps ErrNotJSON, and model errors are wrapped with %w. Every such error
// is a failed fold: the stored summary is kept and the fold is retried
// later. The narrative is capped at the WithMaxNarrativeTokens length.
// Result.Usage is filled from the first choice's GenerationInfo when the
// provider reports token counts.
//
// The returned facts are what the model said, including facts that ask
// for removal (Fact.Remove); fold them into the stored ledger with
// MergeFacts (Apply does).
func NewLLMService(model llms.Model, opts ...LLMOption) Service {
	s := &llmService{
		model:              model,
		maxNarrativeTokens: DefaultMaxNarrativeTokens,
		timeout:            DefaultTimeout,
		jsonMode:           true,
		log:                slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Summarize implements Service.
func (s *llmService) Summarize(ctx context.Context, req Request) (Result, error) {
	if len(req.Messages) == 0 {
		return Result{}, nil
	}
	if s.model == nil {
		return Result{}, errors.New("summary: NewLLMService: nil model")
	}
	system, user := BuildPrompt(req, narrativeTokens(req, s.maxNarrativeTokens))
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, system),
		llms.TextParts(llms.ChatMessageTypeHuman, user),
	}
	var callOpts []llms.CallOption
	if s.jsonMode {
		callOpts = append(callOpts, llms.WithJSONMode())
	}
	callOpts = append(callOpts, s.callOpts...)

	start := time.Now()
	resp, err := s.generate(ctx, msgs, callOpts)
	elapsed := time.Since(start)
	if err != nil {
		s.log.DebugContext(ctx, "summarization failed", "session", req.SessionID,
			"messages", len(req.Messages), "duration", elapsed, "error", err)
		return Result{}, err
	}
	if resp == nil || len(resp.Choices) == 0 || resp.Choices[0] == nil {
		return Result{}, fmt.Errorf("summary: model returned no choices: %w", ErrEmptyReply)
	}
	choice := resp.Choices[0]
	in, out, _ := usage.Tokens(choice.GenerationInfo)
	used := Usage{InputTokens: in, OutputTokens: out}

	res, err := ParseReply(choice.Content)
	res.Usage = used
	res.Narrative = CapNarrative(res.Narrative, s.maxNarrativeTokens, nil)
	if err == nil && res.IsEmpty() {
		err = fmt.Errorf("summary: parse reply: %w", ErrEmptyReply)
	}
	s.log.DebugContext(ctx, "summarization done", "session", req.SessionID,
		"messages", len(req.Messages), "incremental", req.Incremental,
		"facts", len(res.Facts), "narrative_chars", len(res.Narrative),
		"input_tokens", used.InputTokens, "output_tokens", used.OutputTokens,
		"duration", elapsed, "error", err)
	if err != nil {
		return Result{Usage: used}, err
	}
	return res, nil
}

// generate calls the model under the service's timeout. The call runs in
// its own goroutine so that a model that ignores its context still cannot
// hold the caller past the timeout (the goroutine then ends when the model
// returns); a panic in the model becomes an error.
func (s *llmService) generate(ctx context.Context, msgs []llms.MessageContent, opts []llms.CallOption) (*llms.ContentResponse, error) {
	callCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()

	type outcome struct {
		resp *llms.ContentResponse
		err  error
	}
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- outcome{err: fmt.Errorf("summary: model panicked: %v", p)}
			}
		}()
		resp, err := s.model.GenerateContent(callCtx, msgs, opts...)
		done <- outcome{resp, err}
	}()

	var out outcome
	select {
	case out = <-done:
	case <-callCtx.Done():
		out.err = callCtx.Err()
	}
	if out.err == nil {
		return out.resp, nil
	}
	if ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("%w after %s: %w", ErrTimeout, s.timeout, out.err)
	}
	return nil, fmt.Errorf("summary: model call: %w", out.err)
}

// BuildPrompt returns the system and user prompts of one summarization, so
// that other summarizers (for example a schema-constrained Gemini or OpenAI
// one) can reuse them. maxNarrativeTokens <= 0 means 500.
//
// The system prompt asks for the narrative in the language the
// conversation is written in and for values verbatim in their own script
// (never transliterated or translated), with an English and a Korean
// example. It states the merge protocol: reuse an existing fact's
// key for its update (a "replaces" field may name the value updated), use
// the key vocabulary (name, phone, email, delivery_address, order_id, …),
// mark what the user states about themselves ("stated": true, see
// Fact.Stated), never answer with placeholder values, leave out facts with
// nothing new (they are kept), and remove a fact only with "remove": true.
//
// The user prompt is the transcript, one "[ROLE]: text" line per message
// (USER, ASSISTANT, SYSTEM, TOOL; an assistant's tool calls are rendered as
// "(calls name {args})"), followed, when req.Existing has facts, by a blank
// line, "Previously extracted facts (merge and update as needed):" and one
// "- key: value [CATEGORY]" line per fact, then "Existing keys (reuse them
// for updates): " and the keys, comma-separated; and, when req.Incremental
// and req.Existing has a narrative, by a blank line, "Summary so far
// (extend it with the new messages; do not drop earlier points):" and the
// narrative.
func BuildPrompt(req Request, maxNarrativeTokens int) (system, user string) {
	if maxNarrativeTokens <= 0 {
		maxNarrativeTokens = DefaultMaxNarrativeTokens
	}
	return systemPrompt(maxNarrativeTokens), userPrompt(req)
}

// promptVocabulary is the part of the key vocabulary (families.go) the
// prompt suggests.
const promptVocabulary = "name, phone, email, delivery_address, billing_address, user_id, account_id, " +
	"order_id, case_id, ticket_id, reservation_id, booking_id, tracking_number, sku, " +
	"amount, refund_amount, total, price, date, deadline, status, preference, constraint, allergy, request, decision"

func systemPrompt(maxNarrativeTokens int) string {
	cats := make([]string, len(Categories))
	for i, c := range Categories {
		cats[i] = string(c)
	}
	return fmt.Sprintf(`You are a conversation summarizer. Read the conversation and respond with a JSON object with two fields:

"narrative": a concise summary of the conversation flow, tone and key points. Maximum ~%d tokens. Focus on the user's goal, what was discussed, the decisions made, the emotional tone and any unresolved items. Write it in the language the conversation is written in (the user's language): a conversation in Korean gets a Korean narrative, one in Japanese a Japanese narrative; never translate it into English.
"facts": an array of objects, each with:
  "key": a short identifier (e.g. order_number, customer_name, agreed_price)
  "value": the exact value
  "category": one of %s
  "replaces" (optional): the previous value this fact updates
  "stated" (optional): true when the user gave this value about themselves in their own words (not the assistant, a tool result or another person)
  "remove" (optional): true to delete the fact with this key

Rules:
- Extract all numbers, dates, names and specific conditions as facts.
- Preserve exact values: amounts, codes, identifiers, dates and spellings exactly as written.
- Keep every value verbatim in its own script: names, addresses, amounts with their units and honorifics stay as written (김민지 님, 129,990원, 東京都渋谷区神南1丁目2-3, 12万円, 王先生); never transliterate, romanize or translate them. Keys stay in English.
- Prefer these keys when they fit: %s. Number further values of a kind: order_id_2, price_2.
- State preferences and constraints as whole clauses (e.g. "no calls after 6pm").
- Mark with "stated": true what the user says about themselves (their name, contact details, order and case numbers, amounts and dates they give): it outranks what others say.
- If previously extracted facts are provided, merge them: update facts whose value changed, keep unchanged facts, add new ones.
- When a value changes, reuse the existing key exactly (never a new key for the same thing).
- Leave out facts you have nothing new about; they are kept as they are. Never use placeholder values such as "unknown", "not mentioned", "N/A", "none" or null.
- To remove a fact that no longer holds, return {"key": "<its key>", "remove": true}. An empty or missing value never removes anything.
- Respond ONLY with valid JSON, no markdown code fences.

Example (a conversation in English):
{"narrative": "The customer asked for a refund of order #1234. The agent confirmed a refund of 50,000 KRW and said it is being processed.", "facts": [{"key": "order_id", "value": "#1234", "category": "ENTITY"}, {"key": "refund_amount", "value": "50,000 KRW", "category": "NUMERIC"}, {"key": "refund_status", "value": "processing", "category": "STATE"}]}
Example (a conversation in Korean: the narrative in Korean, the values as written):
{"narrative": "김민지 님이 주문 ORD-58213의 환불을 요청했고, 상담원이 129,990원 환불을 접수했다고 안내했다.", "facts": [{"key": "order_id", "value": "ORD-58213", "category": "ENTITY"}, {"key": "refund_amount", "value": "129,990원", "category": "NUMERIC"}, {"key": "refund_status", "value": "접수됨", "category": "STATE"}]}`,
		maxNarrativeTokens, strings.Join(cats, ", "), promptVocabulary)
}

// Headers of the optional sections of the user prompt.
const (
	existingFactsHeader  = "Previously extracted facts (merge and update as needed):"
	existingKeysHeader   = "Existing keys (reuse them for updates): "
	summarySoFarHeader   = "Summary so far (extend it with the new messages; do not drop earlier points):"
	transcriptLineFormat = "[%s]: %s"
)

func userPrompt(req Request) string {
	lines := make([]string, 0, len(req.Messages))
	for _, m := range req.Messages {
		if m == nil {
			continue
		}
		lines = append(lines, fmt.Sprintf(transcriptLineFormat, roleLabel(m), messageText(m)))
	}
	var b strings.Builder
	b.WriteString(strings.Join(lines, "\n"))
	if ex := req.Existing; ex != nil {
		if len(ex.Facts) > 0 {
			b.WriteString("\n\n" + existingFactsHeader)
			keys := make([]string, 0, len(ex.Facts))
			for _, f := range ex.Facts {
				fmt.Fprintf(&b, "\n- %s: %s [%s]", f.Key, f.Value, ParseCategory(string(f.Category)))
				keys = append(keys, f.Key)
			}
			b.WriteString("\n" + existingKeysHeader + strings.Join(keys, ", "))
		}
		if req.Incremental && !isBlank(ex.Narrative) {
			b.WriteString("\n\n" + summarySoFarHeader + "\n" + strings.TrimSpace(ex.Narrative))
		}
	}
	return strings.TrimSpace(b.String())
}

// roleLabel is the upper-case role of a transcript line.
func roleLabel(m llms.ChatMessage) string {
	switch m.GetType() {
	case llms.ChatMessageTypeHuman:
		return "USER"
	case llms.ChatMessageTypeAI:
		return "ASSISTANT"
	case llms.ChatMessageTypeSystem:
		return "SYSTEM"
	case llms.ChatMessageTypeTool, llms.ChatMessageTypeFunction:
		return "TOOL"
	case llms.ChatMessageTypeGeneric:
		if g, ok := m.(llms.GenericChatMessage); ok && strings.TrimSpace(g.Role) != "" {
			return strings.ToUpper(strings.TrimSpace(g.Role))
		}
	}
	return strings.ToUpper(string(m.GetType()))
}

// messageText is a message's content plus, for an assistant message, its
// tool calls as "(calls name {args})".
func messageText(m llms.ChatMessage) string {
	parts := []string{}
	if c := strings.TrimSpace(m.GetContent()); c != "" {
		parts = append(parts, c)
	}
	for _, call := range chatmsg.ToolCalls(m) {
		parts = append(parts, "(calls "+strings.TrimSpace(call.Name+" "+call.Arguments)+")")
	}
	return strings.Join(parts, " ")
}
