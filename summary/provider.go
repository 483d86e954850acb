package summary

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Factory builds the summarizer of one provider from Settings. It must not
// contact the provider (configuration code runs it at start-up). A returned
// summarizer that implements io.Closer is closed by whoever built it.
type Factory func(ctx context.Context, s Settings) (Service, error)

// Settings is what a Factory receives: the summarizer settings of the
// configuration (arc.reactor.memory.summarizer.* and summary.* in package
// autoconfig), an HTTP client, a logger, and the environment to read API
// keys from.
type Settings struct {
	// Provider is the name the factory was registered under.
	Provider string
	// Model is the model name; empty means the provider's default model.
	Model string
	// BaseURL is the server URL; empty means the provider's public API.
	BaseURL string
	// APIKeyEnv names the environment variable holding the API key; empty
	// means the provider's default (see APIKey).
	APIKeyEnv string
	// Timeout bounds one summarization call.
	Timeout time.Duration
	// MaxNarrativeTokens is the narrative length to ask for.
	MaxNarrativeTokens int
	// JSONMode and JSONSchema ask OpenAI-compatible servers for a JSON
	// object and for a strict JSON schema.
	JSONMode   bool
	JSONSchema bool
	// HTTPClient is the HTTP client to use; nil means the provider's
	// default.
	HTTPClient *http.Client
	// Logger is the logger to use; nil means discard.
	Logger *slog.Logger
	// Env reads environment variables (API keys); nil means os.LookupEnv.
	Env func(name string) (string, bool)
}

// LookupEnv reads an environment variable through Env, or from the process
// environment when Env is nil.
func (s Settings) LookupEnv(name string) (string, bool) {
	if s.Env != nil {
		return s.Env(name)
	}
	return os.LookupEnv(name)
}

// APIKey returns the provider's API key: the value of the variable named by
// APIKeyEnv when it is set, else of the first of defaultEnvs that holds a
// non-blank value. When there is none it returns an *APIKeyError naming the
// variables it read.
func (s Settings) APIKey(defaultEnvs ...string) (string, error) {
	names := defaultEnvs
	if s.APIKeyEnv != "" {
		names = []string{s.APIKeyEnv}
	}
	for _, n := range names {
		if v, _ := s.LookupEnv(n); strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), nil
		}
	}
	return "", &APIKeyError{Provider: s.Provider, Vars: append([]string(nil), names...), Explicit: s.APIKeyEnv != ""}
}

// APIKeyError reports a missing API key: none of the environment variables
// that may hold it has a value.
type APIKeyError struct {
	// Provider is the summarizer provider that needs the key.
	Provider string
	// Vars are the environment variables read, in order.
	Vars []string
	// Explicit is true when the variable was named by the configuration
	// (Settings.APIKeyEnv) rather than being the provider's default.
	Explicit bool
}

// Error implements error.
func (e *APIKeyError) Error() string {
	var msg string
	switch len(e.Vars) {
	case 0:
		msg = fmt.Sprintf("the %s summarizer needs an API key: name the environment variable holding it here", e.Provider)
	case 1:
		msg = fmt.Sprintf("the environment variable %s holding the %s API key is empty or unset", e.Vars[0], e.Provider)
	default:
		msg = fmt.Sprintf("none of the environment variables %s holds the %s API key", strings.Join(e.Vars, ", "), e.Provider)
	}
	return msg
}

var registry = struct {
	sync.RWMutex
	factories map[string]Factory
}{factories: map[string]Factory{}}

// Register makes a summarizer provider available under name (matched
// case-insensitively), as database/sql drivers register themselves: a
// provider package calls it from its init function, and a program selects
// the providers it ships by importing them, e.g.
//
//	import _ "github.com/strata-go/strata/providers/gemini"
//
// Register panics when name is blank, f is nil or name is already
// registered.
func Register(name string, f Factory) {
	key := ProviderName(name)
	if key == "" {
		panic("summary: Register with a blank name")
	}
	if f == nil {
		panic("summary: Register " + key + " with a nil factory")
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.factories[key]; dup {
		panic("summary: Register called twice for " + key)
	}
	registry.factories[key] = f
}

// Providers returns the names of the registered summarizer providers,
// sorted.
func Providers() []string {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]string, 0, len(registry.factories))
	for name := range registry.factories {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// LookupProvider returns the factory registered under name (matched
// case-insensitively).
func LookupProvider(name string) (Factory, bool) {
	registry.RLock()
	defer registry.RUnlock()
	f, ok := registry.factories[ProviderName(name)]
	return f, ok
}

// ProviderName is the form provider names are registered and looked up
// in: lower case, without surrounding space.
func ProviderName(name string) string { return strings.ToLower(strings.TrimSpace(name)) }
