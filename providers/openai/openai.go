// Package openai builds a Strata summarizer (summary.Service) on langchaingo's
// OpenAI client, for OpenAI and any OpenAI-compatible server (Ollama, vLLM,
// llama.cpp, LM Studio, Gemini's OpenAI endpoint, …) selected by its base
// URL.
//
// The summarizer asks for JSON mode (response_format json_object) by
// default, or for a strict JSON schema (response_format json_schema) for
// servers that support structured outputs. The prompt is
// summary.BuildPrompt's and the reply goes through summary.ParseReply (see
// summary.NewLLMService).
//
// Importing the package registers the summarizer provider "openai" with
// summary.Register, as database/sql drivers register themselves, so that
// configuration (package autoconfig) can select it:
//
//	import _ "github.com/strata-go/strata/providers/openai"
//
//	arc.reactor.memory.summarizer.provider: openai
//	arc.reactor.memory.summarizer.base-url: http://localhost:11434/v1  # e.g. Ollama
package openai

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
	lcopenai "github.com/tmc/langchaingo/llms/openai"

	"github.com/strata-go/strata/summary"
)

// Defaults.
const (
	// DefaultModel is the model used when Config.Model is empty.
	DefaultModel = "gpt-4o-mini"
	// DefaultBaseURL is OpenAI's API.
	DefaultBaseURL = "https://api.openai.com/v1"
	// SchemaName is the name of the JSON schema sent in json_schema mode.
	SchemaName = "conversation_summary"
)

// Config configures New.
type Config struct {
	// APIKey is sent as the bearer token. Required by OpenAI; local servers
	// usually accept any value.
	APIKey string
	// Model is the model name (default DefaultModel).
	Model string
	// BaseURL is the API root including the version, e.g.
	// http://localhost:11434/v1 for Ollama (default DefaultBaseURL). The
	// OPENAI_BASE_URL environment variable is not consulted.
	BaseURL string
	// Timeout bounds one call (default summary.DefaultTimeout).
	Timeout time.Duration
	// MaxNarrativeTokens is the narrative length the prompt asks for
	// (default summary.DefaultMaxNarrativeTokens).
	MaxNarrativeTokens int
	// DisableJSONMode stops asking for response_format json_object, for
	// servers that reject it.
	DisableJSONMode bool
	// JSONSchema sends ResponseFormat (a strict json_schema) with every
	// call instead of json_object.
	JSONSchema bool
	// HTTPClient is the client used for the calls (default: langchaingo's).
	HTTPClient *http.Client
	// Logger receives one debug record per call (default: none).
	Logger *slog.Logger
}

// New returns a summarizer calling an OpenAI-compatible chat-completions API.
// It does not contact the server.
func New(cfg Config) (summary.Service, error) {
	if cfg.APIKey == "" {
		return nil, errors.New("openai: no API key")
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	model := cfg.Model
	if model == "" {
		model = DefaultModel
	}
	opts := []lcopenai.Option{
		lcopenai.WithToken(cfg.APIKey),
		lcopenai.WithModel(model),
		lcopenai.WithBaseURL(base),
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, lcopenai.WithHTTPClient(cfg.HTTPClient))
	}
	if cfg.JSONSchema {
		opts = append(opts, lcopenai.WithResponseFormat(ResponseFormat()))
	}
	llm, err := lcopenai.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	sopts := []summary.LLMOption{
		summary.WithTimeout(cfg.Timeout),
		summary.WithMaxNarrativeTokens(cfg.MaxNarrativeTokens),
		summary.WithLogger(cfg.Logger),
		// The model named in the call too, so that the summarizer can say
		// which model it calls (the fold journal records it).
		summary.WithCallOptions(llms.WithModel(model)),
	}
	if cfg.DisableJSONMode && !cfg.JSONSchema {
		sopts = append(sopts, summary.WithoutJSONMode())
	}
	return summary.NewLLMService(llm, sopts...), nil
}

// ResponseFormat is the strict JSON schema of a summary: an object with a
// "narrative" string and a "facts" array of {key, value, category} objects,
// category being one of summary.Categories; no other fields.
func ResponseFormat() *lcopenai.ResponseFormat {
	cats := make([]any, len(summary.Categories))
	for i, c := range summary.Categories {
		cats[i] = string(c)
	}
	type prop = lcopenai.ResponseFormatJSONSchemaProperty
	return &lcopenai.ResponseFormat{
		Type: "json_schema",
		JSONSchema: &lcopenai.ResponseFormatJSONSchema{
			Name:   SchemaName,
			Strict: true,
			Schema: &prop{
				Type: "object",
				Properties: map[string]*prop{
					"narrative": {Type: "string", Description: "Concise summary of the conversation flow, tone, decisions and unresolved items."},
					"facts": {
						Type:        "array",
						Description: "Every number, date, name, identifier and specific condition, with its exact value.",
						Items: &prop{
							Type: "object",
							Properties: map[string]*prop{
								"key":      {Type: "string"},
								"value":    {Type: "string"},
								"category": {Type: "string", Enum: cats},
							},
							Required: []string{"key", "value", "category"},
						},
					},
				},
				Required: []string{"narrative", "facts"},
			},
		},
	}
}
