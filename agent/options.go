package agent

import (
	"context"
	"log/slog"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/tools"
)

// DefaultMaxToolRounds bounds the tool-call rounds of one turn unless
// WithMaxToolRounds says otherwise.
const DefaultMaxToolRounds = 5

// Option configures an Agent.
type Option func(*config)

type config struct {
	systemPrompt string
	tools        []toolSpec
	window       *contextWindow
	maxRounds    int
	provider     Provider
	callOptions  []llms.CallOption
	modelVariant string
	log          *slog.Logger
}

// contextWindow is what WithContextWindow asserts about the manager's
// budget.
type contextWindow struct{ tokens, outputReserve int }

// WithSystemPrompt sets the system prompt, sent first in every request.
func WithSystemPrompt(prompt string) Option {
	return func(c *config) { c.systemPrompt = prompt }
}

// WithTools offers langchaingo tools to the model as functions. A tool that
// implements SchemaTool is described by its own JSON schema and receives the
// model's JSON arguments unchanged; any other tool gets one string parameter,
// "input", and receives its value (like langchaingo's functions agent).
// Names must be unique across all tools and functions.
func WithTools(ts ...tools.Tool) Option {
	return func(c *config) {
		for _, t := range ts {
			c.tools = append(c.tools, specFromTool(t))
		}
	}
}

// WithFunctions offers function definitions to the model; call runs them
// with the function's name and the model's JSON arguments. Parameters must be
// a JSON schema as a map[string]any (with nested maps, not structs, for
// Gemini).
func WithFunctions(defs []llms.FunctionDefinition, call func(ctx context.Context, name, argsJSON string) (string, error)) Option {
	return func(c *config) {
		for _, d := range defs {
			spec := toolSpec{def: d} // a nil call makes New fail
			if call != nil {
				name := d.Name
				spec.call = func(ctx context.Context, args string) (string, error) { return call(ctx, name, args) }
			}
			c.tools = append(c.tools, spec)
		}
	}
}

// WithContextWindow states the model's context window and the tokens kept
// free for its answer, as a consistency check. The budget itself is defined
// once, in the manager's configuration (memory.Config.ContextWindowTokens
// and memory.Config.OutputReserveTokens), and every prompt is fitted to it
// by memory.Manager.Prompt. New fails when window or outputReserve differs
// from the manager's values, so an agent written for one model cannot
// silently run with another budget. Without this option the manager's
// budget applies as configured.
func WithContextWindow(window, outputReserve int) Option {
	return func(c *config) { c.window = &contextWindow{tokens: window, outputReserve: outputReserve} }
}

// WithMaxToolRounds bounds how many rounds of tool calls one turn may run
// (default DefaultMaxToolRounds; at least 1). When the model still asks for
// tools after n rounds, Run stops with an error wrapping ErrMaxToolRounds
// (see Run for what is saved).
func WithMaxToolRounds(n int) Option {
	return func(c *config) { c.maxRounds = n }
}

// WithProvider sets the request rules to follow (default ProviderAuto:
// detected from the model's concrete type). Set it when the model is wrapped
// in another type, e.g. a caching or tracing decorator.
func WithProvider(p Provider) Option {
	return func(c *config) { c.provider = p }
}

// WithCallOptions adds options to every model call (model name, temperature,
// max tokens, …). The model named by llms.WithModel is the one the
// manager's budget is calibrated for (memory.Manager.ForModel): with an
// OpenAI model's name and no memory.Config.Estimator, prompts are priced
// by the model's exact tokenizer from the first call. Do not pass tools or a streaming function here: the agent
// sets those itself. A max-tokens option should not exceed the manager's
// output reserve (memory.Config.OutputReserveTokens), which is the room the
// prompt leaves for the answer.
func WithCallOptions(opts ...llms.CallOption) Option {
	return func(c *config) { c.callOptions = append(c.callOptions, opts...) }
}

// WithModelVariant records variant (e.g. "gpt-4o-mini" or "prompt-v2")
// in the metadata of every assistant message the agent saves, under
// store.MetadataModelVariant.
func WithModelVariant(variant string) Option {
	return func(c *config) { c.modelVariant = variant }
}

// WithLogger sets the structured logger. By default the agent logs nothing;
// with a logger it writes a debug record per model call, an info record per
// failed tool call, and warnings for requests that break a provider's
// ordering rules and for failed turns whose user message could not be
// saved.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.log = l }
}
