package main

import (
	"cmp"

	"github.com/strata-go/strata/autoconfig"
	"github.com/strata-go/strata/providers/gemini"
	"github.com/strata-go/strata/providers/openai"
)

// summarizerDetails returns the model and the API key variable the
// configured summarizer uses, for display: the configured ones, else the
// provider's defaults ("" for the offline extractive summarizer, and for a
// provider this command does not know).
func summarizerDetails(cfg *autoconfig.Config) (model, keyEnv string) {
	var defModel, defEnv string
	switch cfg.EffectiveProvider() {
	case autoconfig.ProviderGemini:
		defModel, defEnv = gemini.DefaultModel, gemini.DefaultAPIKeyEnv+", else $"+gemini.FallbackAPIKeyEnv
	case autoconfig.ProviderOpenAI:
		defModel, defEnv = openai.DefaultModel, openai.DefaultAPIKeyEnv
	default:
		return "", ""
	}
	return cmp.Or(cfg.EffectiveModel(), defModel), cmp.Or(cfg.Summarizer.APIKeyEnv, defEnv)
}
