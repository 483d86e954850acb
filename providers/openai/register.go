package openai

import (
	"context"
	"net"
	"net/url"
	"strings"

	"github.com/strata-go/strata/summary"
)

// DefaultAPIKeyEnv names the environment variable the registered provider
// reads the API key from when arc.reactor.memory.summarizer.api-key-env is
// empty.
const DefaultAPIKeyEnv = "OPENAI_API_KEY"

// placeholderAPIKey is sent to OpenAI-compatible local servers that need no
// key (langchaingo's client insists on one).
const placeholderAPIKey = "strata-no-key"

// providerName is the name this package registers its summarizer under.
const providerName = "openai"

// Importing this package registers the summarizer provider "openai" with
// summary.Register (autoconfig: arc.reactor.memory.summarizer.provider:
// openai).
func init() {
	summary.Register(providerName, fromSettings)
}

// fromSettings builds the summarizer of the registry's settings. The API
// key comes from the variable Settings.APIKeyEnv names, else OPENAI_API_KEY;
// a server on this machine or a private network needs none unless
// APIKeyEnv names a variable.
func fromSettings(_ context.Context, s summary.Settings) (summary.Service, error) {
	key, err := s.APIKey(DefaultAPIKeyEnv)
	if err != nil {
		if s.APIKeyEnv != "" || !isLocal(s.BaseURL) {
			return nil, err
		}
		key = placeholderAPIKey
	}
	return New(Config{
		APIKey:             key,
		Model:              s.Model,
		BaseURL:            s.BaseURL,
		Timeout:            s.Timeout,
		MaxNarrativeTokens: s.MaxNarrativeTokens,
		DisableJSONMode:    !s.JSONMode,
		JSONSchema:         s.JSONSchema,
		HTTPClient:         s.HTTPClient,
		Logger:             s.Logger,
	})
}

// isLocal reports whether base points at a server on this machine or a
// private network (localhost, loopback and private addresses, single-label
// host names such as a Docker service, *.local, *.internal): such
// OpenAI-compatible servers (Ollama, vLLM, llama.cpp) usually need no key.
func isLocal(base string) bool {
	if strings.TrimSpace(base) == "" {
		return false
	}
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified()
	}
	return host == "localhost" || !strings.Contains(host, ".") ||
		strings.HasSuffix(host, ".localhost") || strings.HasSuffix(host, ".local") || strings.HasSuffix(host, ".internal")
}
