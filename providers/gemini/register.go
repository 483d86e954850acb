package gemini

import (
	"context"

	"github.com/strata-go/strata/summary"
)

// The environment variables the registered provider reads the API key from,
// in this order, when arc.reactor.memory.summarizer.api-key-env is empty.
const (
	DefaultAPIKeyEnv  = "GOOGLE_API_KEY"
	FallbackAPIKeyEnv = "GEMINI_API_KEY"
)

// providerName is the name this package registers its summarizer under.
const providerName = "gemini"

// Importing this package registers the summarizer provider "gemini" with
// summary.Register (autoconfig: arc.reactor.memory.summarizer.provider:
// gemini).
func init() {
	summary.Register(providerName, fromSettings)
}

// fromSettings builds the summarizer of the registry's settings, with the
// API key from the variable Settings.APIKeyEnv names, else GOOGLE_API_KEY,
// else GEMINI_API_KEY.
func fromSettings(ctx context.Context, s summary.Settings) (summary.Service, error) {
	key, err := s.APIKey(DefaultAPIKeyEnv, FallbackAPIKeyEnv)
	if err != nil {
		return nil, err
	}
	return New(ctx, Config{
		APIKey:             key,
		Model:              s.Model,
		BaseURL:            s.BaseURL,
		Timeout:            s.Timeout,
		MaxNarrativeTokens: s.MaxNarrativeTokens,
	})
}
