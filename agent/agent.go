package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/calib"
	"github.com/strata-go/strata/internal/nilcheck"
	"github.com/strata-go/strata/internal/usage"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/trimmer"
)

// ErrMaxToolRounds is wrapped by the error Run returns when the model still
// asks for tools after the last allowed round (WithMaxToolRounds).
var ErrMaxToolRounds = errors.New("agent: too many tool-call rounds")

// ErrEmptyResponse is wrapped by the error Run returns when the model
// answers with no choices.
var ErrEmptyResponse = errors.New("agent: model returned no choices")

// ErrBudgetMismatch is wrapped by the error New returns when
// WithContextWindow states a budget other than the memory manager's.
var ErrBudgetMismatch = errors.New("agent: context window differs from the memory manager's")

// failedSaveTimeout bounds the save of a failed turn's user message when the
// caller's context is already done.
const failedSaveTimeout = 5 * time.Second

// Agent runs a langchaingo model over a memory.Manager: every turn loads the
// session's history, has the manager fit [system prompt][facts][narrative]
// [recent…][input] into its budget, runs the tool calls the model asks for,
// and saves the whole turn. An Agent is immutable and safe for concurrent
// use; concurrent turns of one session each see the history saved before
// they started.
type Agent struct {
	model     llms.Model
	mgr       *memory.Manager // the manager's view for the model (memory.Manager.ForModel)
	tools     toolSet
	system    string
	noteCost  int
	maxRounds int
	provider  Provider
	callOpts  []llms.CallOption
	variant   string
	log       *slog.Logger
	// calibrated is set once the manager has accepted a usage report of
	// this agent: tool definitions are then priced by the calibrated
	// estimator instead of trimmer.ToolDefinitionTokens each.
	calibrated atomic.Bool
}

// New returns an Agent that answers with model and remembers with mgr.
//
// It fails on a nil model, including a typed nil such as the *openai.LLM
// that a failed openai.New returns next to its error, on a nil manager, on
// WithContextWindow values that differ from the manager's budget (the error
// wraps ErrBudgetMismatch), an unknown provider, a tool-round bound below 1,
// and tools that are nil, unnamed or share a name.
func New(model llms.Model, mgr *memory.Manager, opts ...Option) (*Agent, error) {
	if model == nil {
		return nil, errors.New("agent: nil model")
	}
	if nilcheck.IsNil(model) {
		return nil, fmt.Errorf("agent: the model is a nil %T; check the error its constructor returned (e.g. openai.New without an API key)", model)
	}
	if mgr == nil {
		return nil, errors.New("agent: nil memory manager (build one with memory.NewManager or autoconfig.Build)")
	}
	cfg := config{maxRounds: DefaultMaxToolRounds}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if w := cfg.window; w != nil {
		mc := mgr.Config()
		if w.tokens != mc.ContextWindowTokens || w.outputReserve != mc.OutputReserveTokens {
			return nil, fmt.Errorf("%w: WithContextWindow(%d, %d), but the manager has a %d-token context window with a %d-token output reserve; "+
				"the budget is defined once: set memory.Config.ContextWindowTokens and memory.Config.OutputReserveTokens "+
				"(arc.reactor.llm.max-context-window-tokens and max-output-tokens) and make WithContextWindow match or drop it",
				ErrBudgetMismatch, w.tokens, w.outputReserve, mc.ContextWindowTokens, mc.OutputReserveTokens)
		}
	}
	if cfg.maxRounds < 1 {
		return nil, fmt.Errorf("agent: max tool rounds must be at least 1, got %d", cfg.maxRounds)
	}
	if !cfg.provider.valid() {
		return nil, fmt.Errorf("agent: unknown provider %q", cfg.provider)
	}
	if cfg.provider == ProviderAuto {
		cfg.provider = DetectProvider(model)
	}
	ts, err := newToolSet(cfg.tools)
	if err != nil {
		return nil, err
	}
	if cfg.log == nil {
		cfg.log = slog.New(slog.DiscardHandler)
	}
	mgr = mgr.ForModel(modelName(cfg.callOptions))
	return &Agent{
		model: model, mgr: mgr, tools: ts, system: cfg.systemPrompt,
		noteCost:  trimmer.MessageOverheadTokens + mgr.Config().Estimator.Estimate(OmittedHistoryNote),
		maxRounds: cfg.maxRounds, provider: cfg.provider, callOpts: cfg.callOptions,
		variant: cfg.modelVariant, log: cfg.log,
	}, nil
}

// Provider returns the request rules the agent follows.
func (a *Agent) Provider() Provider { return a.provider }

// Result describes one completed turn.
type Result struct {
	// Text is the model's final answer.
	Text string
	// Messages is the turn as saved, in order: the user message, each
	// assistant message with tool calls followed by its tool results, and
	// the final answer.
	Messages []llms.ChatMessage
	// ToolRounds is the number of rounds of tool calls that were run.
	ToolRounds int
	// ModelCalls is the number of model calls (ToolRounds + 1 on success,
	// one more when a prompt refused for its size was retried).
	ModelCalls int
	// Prompt is what the last model call was sent, as built by
	// memory.Manager.Prompt and adapted to the provider, system prompt
	// included.
	Prompt []llms.ChatMessage
	// Dropped is how many messages of the loaded history and the turn so
	// far the last call's prompt left out to fit the manager's budget.
	Dropped int
	// Usage sums the token counts the provider reported over all calls.
	Usage Usage
}

// Usage counts the tokens a provider reported.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
}

// Run answers input in the session as userID, in this order: load the
// history (an ownership error, memory.ErrNotOwner, aborts before any model
// call); build the prompt with memory.Manager.Prompt, which fits the system
// prompt, the history and the turn so far into the manager's budget,
// keeping room for the tool definitions (active tools ×
// trimmer.ToolDefinitionTokens until the provider's counts are known, then
// their JSON as calibrated); call the model, reporting the prompt tokens
// the provider counted to the manager (memory.Manager.ObserveUsage), which
// prices later prompts of the model by them; while the model asks for
// tools, run them (a tool error becomes the result text "error: …"), append
// the results and call again, building the prompt again before every call;
// then save the whole turn — user message, tool-call messages, tool results,
// final answer — in one atomic append, which starts the manager's
// background fold.
//
// When the provider refuses a prompt for its size (OpenAI's
// context_length_exceeded, Anthropic's "prompt is too long", Gemini's input
// token count error), the agent reports the count the error states, if
// any, to the manager, builds the prompt again with room for the overflow
// (a quarter of the usable window when no count is stated) and calls
// again, once per turn: a second refusal fails the turn.
//
// When a model call fails (or ctx is done), only the user message is saved,
// as arc-reactor does, and the model's error is returned wrapped. When the
// model still asks for tools after WithMaxToolRounds rounds, the user
// message and the completed rounds (whose tools did run) are saved without an
// answer, and the error wraps ErrMaxToolRounds. When saving a completed turn
// fails, Run returns the Result and the save error. With an empty
// sessionID nothing is loaded or saved.
func (a *Agent) Run(ctx context.Context, sessionID, userID, input string) (*Result, error) {
	return a.run(ctx, sessionID, userID, input, nil)
}

// RunStream is Run with the model's text streamed to onChunk as it arrives
// (through llms.WithStreamingFunc). Text the model writes before asking for
// tools is streamed too; tool-call deltas and empty chunks are not. An error
// from onChunk stops the turn like a failed model call.
func (a *Agent) RunStream(ctx context.Context, sessionID, userID, input string, onChunk func(ctx context.Context, chunk []byte) error) (*Result, error) {
	if onChunk == nil {
		return nil, errors.New("agent: RunStream needs a chunk callback")
	}
	return a.run(ctx, sessionID, userID, input, onChunk)
}

func (a *Agent) run(ctx context.Context, sessionID, userID, input string, onChunk func(context.Context, []byte) error) (*Result, error) {
	// 1. Load.
	history, err := a.mgr.LoadHistory(ctx, sessionID, userID)
	if err != nil {
		return nil, fmt.Errorf("agent: load history: %w", err)
	}
	turn := []llms.ChatMessage{llms.HumanChatMessage{Content: input}}
	res := &Result{}
	retried := false
	for round := 0; ; round++ {
		// 2. Prompt, before every call.
		res.Prompt, res.Dropped = a.prompt(ctx, history, turn, 0)
		a.log.DebugContext(ctx, "strata agent: model call", "session_id", sessionID, "round", round,
			"messages", len(res.Prompt), "dropped", res.Dropped)

		// 3. Call.
		choice, err := a.call(ctx, res.Prompt, onChunk, &res.Usage)
		res.ModelCalls++
		if shrink, ok := a.refused(ctx, err, res.Prompt, retried); ok {
			// Refused for its size: recalibrated, refitted, retried once
			// per turn.
			retried = true
			res.Prompt, res.Dropped = a.prompt(ctx, history, turn, shrink)
			a.log.InfoContext(ctx, "strata agent: prompt refused for its size, retrying once", "session_id", sessionID,
				"round", round, "extra_reserve", shrink, "error", err)
			choice, err = a.call(ctx, res.Prompt, onChunk, &res.Usage)
			res.ModelCalls++
		}
		if err != nil {
			a.saveFailed(ctx, sessionID, userID, input)
			return nil, err
		}
		if len(choice.ToolCalls) == 0 {
			turn = append(turn, llms.AIChatMessage{Content: choice.Content})
			res.Text = choice.Content
			break
		}
		if round == a.maxRounds {
			saveErr := a.save(ctx, sessionID, userID, turn)
			return nil, errors.Join(fmt.Errorf("%w: the model asked for tools after %d rounds", ErrMaxToolRounds, a.maxRounds), saveErr)
		}

		// 4. Tools.
		calls := normalizeCalls(choice.ToolCalls)
		turn = append(turn, llms.AIChatMessage{Content: choice.Content, ToolCalls: calls})
		results, err := a.runTools(ctx, calls)
		if err != nil {
			a.saveFailed(ctx, sessionID, userID, input)
			return nil, fmt.Errorf("agent: tool call: %w", err)
		}
		turn = append(turn, results...)
		res.ToolRounds++
	}

	// 5. Save.
	res.Messages = turn
	if err := a.save(ctx, sessionID, userID, turn); err != nil {
		return res, err
	}
	return res, nil
}

// prompt builds the request of one model call from the history and the turn
// so far: adapted to the provider, fitted into the manager's budget by
// memory.Manager.Prompt (the one prompt builder), with the system prompt
// first. It also returns how many messages were left out.
func (a *Agent) prompt(ctx context.Context, history, turn []llms.ChatMessage, extraReserve int) ([]llms.ChatMessage, int) {
	msgs := make([]llms.ChatMessage, 0, len(history)+len(turn))
	for _, m := range history {
		if m = plain(m); m != nil {
			msgs = append(msgs, m)
		}
	}
	msgs = append(msgs, turn...)
	msgs = systemNotes(msgs, a.provider)
	reserve := a.toolReserve() + extraReserve
	prompt, _ := a.mgr.Prompt(a.system, msgs, reserve)
	added := 0 // messages in prompt that are not from msgs
	if a.system != "" {
		added++
	}
	if a.provider.singleSystem() && !userFirst(prompt) {
		// Gemini and Anthropic want the conversation to open with a user
		// turn: build again with room for a placeholder, then add it.
		prompt, _ = a.mgr.Prompt(a.system, msgs, reserve+a.noteCost)
		if !userFirst(prompt) {
			prompt = insertUserFirst(prompt)
			added++
		}
	}
	dropped := max(len(msgs)-(len(prompt)-added), 0)
	prompt = mergeSystems(prompt, a.provider)
	if err := trimmer.Validate(prompt); err != nil && !(a.provider == ProviderOpenAI && errors.Is(err, trimmer.ErrMisplacedSystem)) {
		a.log.WarnContext(ctx, "strata agent: request breaks provider ordering rules", "provider", a.provider, "error", err)
	}
	return prompt, dropped
}

// call makes one model call and returns its first choice.
func (a *Agent) call(ctx context.Context, prompt []llms.ChatMessage, onChunk func(context.Context, []byte) error, usage *Usage) (*llms.ContentChoice, error) {
	opts := append([]llms.CallOption(nil), a.callOpts...)
	if t := a.tools.llmTools(); t != nil {
		opts = append(opts, llms.WithTools(t))
	}
	var chunkErr error
	if onChunk != nil {
		opts = append(opts, llms.WithStreamingFunc(func(ctx context.Context, chunk []byte) error {
			if chunkErr != nil || len(chunk) == 0 || isToolCallDelta(chunk) {
				return chunkErr
			}
			chunkErr = onChunk(ctx, chunk)
			return chunkErr
		}))
	}
	resp, err := a.model.GenerateContent(ctx, contents(prompt, a.provider), opts...)
	switch {
	case chunkErr != nil: // some providers stop streaming silently
		return nil, fmt.Errorf("agent: stream callback: %w", chunkErr)
	case err != nil:
		return nil, fmt.Errorf("agent: model call: %w", err)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("agent: model call: %w", ctx.Err())
	case resp == nil || len(resp.Choices) == 0 || resp.Choices[0] == nil:
		return nil, ErrEmptyResponse
	}
	choice := resp.Choices[0]
	if a.provider == ProviderAnthropic {
		choice = mergeChoices(resp.Choices)
	}
	usage.add(choice.GenerationInfo)
	a.observe(ctx, prompt, choice.GenerationInfo)
	return choice, nil
}

// observe reports the provider's count of a prompt to the manager, which
// calibrates the model's budget with it. A report it refuses (no count, an
// implausible one) changes nothing and is logged at debug level.
func (a *Agent) observe(ctx context.Context, prompt []llms.ChatMessage, info map[string]any) {
	if err := a.mgr.ObserveUsage(prompt, a.tools.llmTools(), info); err != nil {
		a.log.DebugContext(ctx, "strata agent: usage report not used for the budget", "error", err)
		return
	}
	a.calibrated.Store(true)
}

// refused reports whether err is the provider refusing prompt for its size
// and this turn has not retried yet; then it recalibrates from the count
// the error states, when it states one, and returns the extra reserve the
// retry's prompt keeps: the overflow the error states plus a twentieth of
// the usable window, or a quarter of the usable window when the error
// states no count (or one the manager refused), so that the retry fits
// whatever the calibration says. When the error states a context window
// smaller than the manager's, the usable window is the stated one.
func (a *Agent) refused(ctx context.Context, err error, prompt []llms.ChatMessage, retried bool) (int, bool) {
	if err == nil || retried || ctx.Err() != nil {
		return 0, false
	}
	isRefusal, count := contextRefusal(err)
	if !isRefusal {
		return 0, false
	}
	cfg := a.mgr.Config()
	usable := cfg.ContextWindowTokens - cfg.OutputReserveTokens
	target := usable // what the retry's prompt must fit in
	if w := statedWindow(err); w > 0 && w < cfg.ContextWindowTokens {
		// The model's window is smaller than the manager's budget says.
		a.log.WarnContext(ctx, "strata agent: the provider states a smaller context window than memory.Config.ContextWindowTokens",
			"stated", w, "configured", cfg.ContextWindowTokens)
		target = max(w-cfg.OutputReserveTokens, 0)
	}
	if count > 0 {
		if oerr := a.mgr.ObserveUsage(prompt, a.tools.llmTools(), map[string]any{"PromptTokens": count}); oerr == nil {
			a.calibrated.Store(true)
			return max(count-target, 0) + usable - target + usable/20, true
		}
	}
	return usable - target + (target+3)/4, true
}

// toolReserve is the room kept for the tool definitions: their JSON priced
// by the calibrated estimator once the manager has the provider's counts,
// trimmer.ToolDefinitionTokens per tool before.
func (a *Agent) toolReserve() int {
	if len(a.tools.specs) == 0 {
		return 0
	}
	if !a.calibrated.Load() {
		return len(a.tools.specs) * trimmer.ToolDefinitionTokens
	}
	return a.mgr.Config().Estimator.Estimate(calib.ToolsText(a.tools.llmTools()))
}

// modelName returns the model named by llms.WithModel among opts, "" when
// none does.
func modelName(opts []llms.CallOption) string {
	var co llms.CallOptions
	for _, o := range opts {
		if o != nil {
			o(&co)
		}
	}
	return co.Model
}

// mergeChoices joins the choices of an Anthropic response: langchaingo's
// anthropic client returns one choice per content block (text, each
// tool_use), not alternatives.
func mergeChoices(choices []*llms.ContentChoice) *llms.ContentChoice {
	merged := &llms.ContentChoice{}
	var texts []string
	for _, c := range choices {
		if c == nil {
			continue
		}
		if merged.GenerationInfo == nil {
			merged.GenerationInfo, merged.StopReason = c.GenerationInfo, c.StopReason
		}
		if c.Content != "" {
			texts = append(texts, c.Content)
		}
		merged.ToolCalls = append(merged.ToolCalls, c.ToolCalls...)
	}
	merged.Content = strings.Join(texts, "\n\n")
	return merged
}

// runTools runs one round of tool calls, in order, and returns one tool
// message per call.
func (a *Agent) runTools(ctx context.Context, calls []llms.ToolCall) ([]llms.ChatMessage, error) {
	out := make([]llms.ChatMessage, 0, len(calls))
	for _, c := range calls {
		text, failed, err := a.tools.run(ctx, c)
		if err != nil {
			return nil, err
		}
		if failed {
			a.log.InfoContext(ctx, "strata agent: tool failed", "tool", c.FunctionCall.Name, "result", text)
		}
		out = append(out, llms.ToolChatMessage{ID: c.ID, Content: text})
	}
	return out, nil
}

// save appends the turn in one atomic call, with the model variant on the
// assistant messages and the function name on the tool results.
func (a *Agent) save(ctx context.Context, sessionID, userID string, turn []llms.ChatMessage) error {
	var names callNames
	stored := make([]store.Message, 0, len(turn))
	for i, cm := range turn {
		m, err := store.FromChatMessage(cm)
		if err != nil {
			return fmt.Errorf("agent: save turn: message %d: %w", i, err)
		}
		names.track(cm)
		switch m.Role {
		case store.RoleAssistant:
			if a.variant != "" {
				if m.Metadata == nil {
					m.Metadata = map[string]string{}
				}
				m.Metadata[store.MetadataModelVariant] = a.variant
			}
		case store.RoleTool:
			m.Name = names.of(m.ToolCallID)
		}
		stored = append(stored, m)
	}
	if _, err := a.mgr.Append(ctx, sessionID, userID, true, stored...); err != nil {
		return fmt.Errorf("agent: save turn: %w", err)
	}
	return nil
}

// saveFailed records a failed turn: the user message only. It still saves
// when ctx is done, within failedSaveTimeout.
func (a *Agent) saveFailed(ctx context.Context, sessionID, userID, input string) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), failedSaveTimeout)
	defer cancel()
	if err := a.mgr.SaveTurn(sctx, sessionID, userID, input, ""); err != nil {
		a.log.WarnContext(ctx, "strata agent: could not save the failed turn's user message", "session_id", sessionID, "error", err)
	}
}

// normalizeCalls gives every call an id (Gemini returns none), the type
// "function" and JSON-object arguments ("{}" when empty or null).
func normalizeCalls(in []llms.ToolCall) []llms.ToolCall {
	out := make([]llms.ToolCall, 0, len(in))
	for _, tc := range in {
		fc := llms.FunctionCall{}
		if tc.FunctionCall != nil {
			fc = *tc.FunctionCall
		}
		if a := strings.TrimSpace(fc.Arguments); a == "" || a == "null" {
			fc.Arguments = "{}"
		}
		if tc.ID == "" {
			tc.ID = newCallID()
		}
		if tc.Type == "" {
			tc.Type = "function"
		}
		tc.FunctionCall = &fc
		out = append(out, tc)
	}
	return out
}

func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// isToolCallDelta reports whether a streamed chunk is the JSON of tool-call
// deltas that langchaingo's openai client passes to the streaming function
// (e.g. [{"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]).
func isToolCallDelta(chunk []byte) bool {
	if len(chunk) < 2 || chunk[0] != '[' || chunk[1] != '{' {
		return false
	}
	var deltas []map[string]json.RawMessage
	if json.Unmarshal(chunk, &deltas) != nil || len(deltas) == 0 {
		return false
	}
	for _, d := range deltas {
		if _, ok := d["function"]; !ok {
			return false
		}
		for k := range d {
			if k != "id" && k != "type" && k != "function" && k != "index" {
				return false
			}
		}
	}
	return true
}

// add counts one call's usage from a choice's GenerationInfo (keys as
// usage.Tokens reads them).
func (u *Usage) add(info map[string]any) {
	in, out, total := usage.Tokens(info)
	u.PromptTokens += in
	u.CompletionTokens += out
	u.TotalTokens += total
}
