package agent

import (
	"context"
	"log/slog"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/tools"

	"github.com/strata-go/strata/trimmer"
)

// Defaults of New.
const (
	// DefaultContextWindow is the context window assumed when neither
	// WithContextWindow nor WithTrimmer is given (tokens).
	DefaultContextWindow = 128_000
	// DefaultOutputReserve is the room kept free for the model's answer
	// (tokens).
	DefaultOutputReserve = 4_096
	// DefaultMaxToolRounds bounds the tool-call rounds of one turn.
	DefaultMaxToolRounds = 5
)

// Option configures an Agent.
type Option func(*config)

type config struct {
	systemPrompt string
	tools        []toolSpec
	window       int
	reserve      int
	trim         *trimmer.Trimmer
	maxRounds    int
	provider     Provider
	callOptions  []llms.CallOption
	modelVariant string
	log          *slog.Logger
}

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

// WithContextWindow builds the trimmer from the model's context window and
// the tokens reserved for its answer (defaults DefaultContextWindow and
// DefaultOutputReserve), with trimmer.NewEstimator. WithTrimmer overrides it.
func WithContextWindow(window, outputReserve int) Option {
	return func(c *config) { c.window, c.reserve = window, outputReserve }
}

// WithTrimmer sets the trimmer that fits each request into the context
// window (for example one built with a tiktoken estimator).
func WithTrimmer(t *trimmer.Trimmer) Option {
	return func(c *config) { c.trim = t }
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
// max tokens, …). Do not pass tools or a streaming function here: the agent
// sets those itself.
func WithCallOptions(opts ...llms.CallOption) Option {
	return func(c *config) { c.callOptions = append(c.callOptions, opts...) }
}

// WithModelVariant records variant (e.g. "gpt-4o-mini" or "prompt-v2")
// in the metadata of every assistant message the agent saves, under
// memory.MetadataModelVariant.
func WithModelVariant(variant string) Option {
	return func(c *config) { c.modelVariant = variant }
}

// WithLogger sets the structured logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.log = l }
}
