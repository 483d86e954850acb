package autoconfig

import (
	"context"
	"sort"
	"strings"

	"github.com/strata-go/strata/summary"
)

// strataProviders are the summarizer providers of this module that register
// themselves with summary.Register when imported, with their import paths.
var strataProviders = map[string]string{
	ProviderGemini: "github.com/strata-go/strata/providers/gemini",
	ProviderOpenAI: "github.com/strata-go/strata/providers/openai",
}

// providerKeyEnvs are the environment variables this module's providers
// read their API key from by default, in order (their packages'
// DefaultAPIKeyEnv and FallbackAPIKeyEnv), for SummarizerChoice to tell
// whether arc-reactor's default provider can run without building it.
var providerKeyEnvs = map[string][]string{
	ProviderGemini: {"GOOGLE_API_KEY", "GEMINI_API_KEY"},
	ProviderOpenAI: {"OPENAI_API_KEY"},
}

// The offline extractive summarizer is built in: importing autoconfig
// registers it.
func init() {
	summary.Register(ProviderExtractive, func(context.Context, summary.Settings) (summary.Service, error) {
		return summary.NewExtractiveService(), nil
	})
}

// knownProviders lists the names summarizer.provider accepts: the
// registered providers (summary.Providers) and this module's own, which may
// still need an import.
func knownProviders() []string {
	names := summary.Providers()
	for name := range strataProviders {
		if _, ok := summary.LookupProvider(name); !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// isProvider reports whether p is a name summarizer.provider accepts.
func isProvider(p string) bool {
	if _, ok := summary.LookupProvider(p); ok {
		return true
	}
	_, ok := strataProviders[p]
	return ok
}

func joinNames(names []string) string { return strings.Join(names, ", ") }
