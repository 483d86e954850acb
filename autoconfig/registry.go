package autoconfig

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/strata-go/strata/summary"
)

// SummarizerFactory builds the summarizer of one provider from the
// summarizer settings. It must not contact the provider (Build runs it at
// start-up). A returned summarizer that implements io.Closer is closed with
// the Runtime.
type SummarizerFactory func(ctx context.Context, s SummarizerSettings) (summary.Service, error)

// SummarizerSettings is what a SummarizerFactory receives: the
// arc.reactor.memory.summarizer.* and summary.* settings, the build's HTTP
// client and logger, and the environment the configuration was loaded with.
type SummarizerSettings struct {
	// Provider is the name the factory was registered under.
	Provider string
	// Model is summarizer.model; empty means the provider's default model.
	Model string
	// BaseURL is summarizer.base-url; empty means the provider's public API.
	BaseURL string
	// APIKeyEnv is summarizer.api-key-env: the name of the variable holding
	// the API key; empty means the provider's default (see APIKey).
	APIKeyEnv string
	// Timeout bounds one summarization call (summarizer.timeout).
	Timeout time.Duration
	// MaxNarrativeTokens is the narrative length to ask for
	// (summary.max-narrative-tokens).
	MaxNarrativeTokens int
	// JSONMode and JSONSchema are summarizer.json-mode and
	// summarizer.json-schema, for OpenAI-compatible servers.
	JSONMode   bool
	JSONSchema bool
	// HTTPClient is the client set with WithHTTPClient; nil means the
	// provider's default.
	HTTPClient *http.Client
	// Logger is the build's logger (never nil; it discards by default).
	Logger *slog.Logger

	cfg *Config
}

// LookupEnv reads an environment variable from the environment the
// configuration was loaded with (see Config.LookupEnv).
func (s SummarizerSettings) LookupEnv(name string) (string, bool) {
	if s.cfg == nil {
		return "", false
	}
	return s.cfg.LookupEnv(name)
}

// APIKey returns the provider's API key: the value of the variable named by
// summarizer.api-key-env when it is set, else of the first of defaultEnvs
// that holds a non-blank value. When there is none it returns an *Error on
// summarizer.api-key-env naming the variables it read.
func (s SummarizerSettings) APIKey(defaultEnvs ...string) (string, error) {
	names := defaultEnvs
	if s.APIKeyEnv != "" {
		names = []string{s.APIKeyEnv}
	}
	for _, n := range names {
		if v, _ := s.LookupEnv(n); strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), nil
		}
	}
	var msg string
	switch len(names) {
	case 0:
		msg = fmt.Sprintf("the %s summarizer needs an API key: name the environment variable holding it here", s.Provider)
	case 1:
		msg = fmt.Sprintf("the environment variable %s holding the %s API key is empty or unset", names[0], s.Provider)
	default:
		msg = fmt.Sprintf("none of the environment variables %s holds the %s API key", strings.Join(names, ", "), s.Provider)
	}
	if s.APIKeyEnv == "" && len(names) > 0 {
		msg += "; set it, or name another variable with this key"
	}
	switch {
	case s.cfg == nil:
		return "", newError(keySummarizerAPIKeyEnv, "", "", msg)
	case s.APIKeyEnv == "":
		return "", newError(keySummarizerAPIKeyEnv, "", "", msg)
	}
	return "", s.cfg.errorFor(keySummarizerAPIKeyEnv, msg)
}

// strataProviders are the summarizer providers of this module that register
// themselves when imported, with their import paths.
var strataProviders = map[string]string{
	ProviderGemini: "github.com/strata-go/strata/providers/gemini",
	ProviderOpenAI: "github.com/strata-go/strata/providers/openai",
}

var registry = struct {
	sync.RWMutex
	factories map[string]SummarizerFactory
}{factories: map[string]SummarizerFactory{}}

func init() {
	RegisterSummarizer(ProviderExtractive, func(context.Context, SummarizerSettings) (summary.Service, error) {
		return summary.NewExtractiveService(), nil
	})
}

// RegisterSummarizer makes a summarizer provider available under name
// (matched case-insensitively) to arc.reactor.memory.summarizer.provider, as
// database/sql drivers register themselves: a provider package calls it
// from its init function, and a program selects the providers it ships by
// importing them, e.g.
//
//	import _ "github.com/strata-go/strata/providers/gemini"
//
// The offline extractive summarizer is built in. RegisterSummarizer panics
// when name is blank, f is nil or name is already registered.
func RegisterSummarizer(name string, f SummarizerFactory) {
	key := normalizeProvider(name)
	if key == "" {
		panic("autoconfig: RegisterSummarizer with a blank name")
	}
	if f == nil {
		panic("autoconfig: RegisterSummarizer " + key + " with a nil factory")
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.factories[key]; dup {
		panic("autoconfig: RegisterSummarizer called twice for " + key)
	}
	registry.factories[key] = f
}

// Summarizers returns the names of the registered summarizer providers,
// sorted.
func Summarizers() []string {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]string, 0, len(registry.factories))
	for name := range registry.factories {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func lookupSummarizer(name string) (SummarizerFactory, bool) {
	registry.RLock()
	defer registry.RUnlock()
	f, ok := registry.factories[name]
	return f, ok
}

// knownProviders lists the names summarizer.provider accepts: the
// registered providers and this module's own, which may still need an
// import.
func knownProviders() []string {
	names := Summarizers()
	for name := range strataProviders {
		if _, ok := lookupSummarizer(name); !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// isProvider reports whether p is a name summarizer.provider accepts.
func isProvider(p string) bool {
	if _, ok := lookupSummarizer(p); ok {
		return true
	}
	_, ok := strataProviders[p]
	return ok
}

func joinNames(names []string) string { return strings.Join(names, ", ") }
