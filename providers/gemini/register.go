package gemini

import (
	"context"

	"github.com/strata-go/strata/autoconfig"
	"github.com/strata-go/strata/summary"
)

// The environment variables the registered provider reads the API key from,
// in this order, when arc.reactor.memory.summarizer.api-key-env is empty.
const (
	DefaultAPIKeyEnv  = "GOOGLE_API_KEY"
	FallbackAPIKeyEnv = "GEMINI_API_KEY"
)

// Importing this package registers the summarizer provider "gemini" with
// autoconfig (arc.reactor.memory.summarizer.provider: gemini).
func init() {
	autoconfig.RegisterSummarizer(autoconfig.ProviderGemini, fromSettings)
}

// fromSettings builds the summarizer of autoconfig's settings, with the API
// key from summarizer.api-key-env, else GOOGLE_API_KEY, else GEMINI_API_KEY.
func fromSettings(ctx context.Context, s autoconfig.SummarizerSettings) (summary.Service, error) {
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
