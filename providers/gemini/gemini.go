// Package gemini is a Strata summarizer (summary.Service) on Google's Gemini
// API that asks for strict JSON: the request carries a response schema
// (narrative + facts with the category enum) and the application/json MIME
// type, so the model cannot answer in prose or wrap the JSON in fences.
//
// It is built directly on github.com/google/generative-ai-go, because
// langchaingo's llms/googleai has no response-schema option; agents keep
// using langchaingo's googleai model for their own calls. The prompt is
// summary.BuildPrompt's and the reply goes through summary.ParseReply, like
// every other Strata summarizer.
//
// Importing the package registers the summarizer provider "gemini" with
// summary.Register, as database/sql drivers register themselves, so that
// configuration (package autoconfig) can select it (the API key is read
// from GOOGLE_API_KEY or GEMINI_API_KEY):
//
//	import _ "github.com/strata-go/strata/providers/gemini"
//
//	arc.reactor.memory.summarizer.provider: gemini
//
// Only programs that import it link the Gemini SDK and gRPC.
package gemini

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/generative-ai-go/genai"
	"google.golang.org/api/option"

	"github.com/strata-go/strata/summary"
)

// DefaultModel is the model used when Config.Model is empty.
const DefaultModel = "gemini-2.5-flash"

// Config configures a Summarizer.
type Config struct {
	// APIKey is the Gemini API key. Required unless ClientOptions carry
	// other credentials.
	APIKey string
	// Model is the model name (default DefaultModel).
	Model string
	// BaseURL replaces the API endpoint (https://generativelanguage.googleapis.com),
	// e.g. for a proxy or a test server. A trailing /v1beta is ignored: the
	// client adds the API version itself.
	BaseURL string
	// Timeout bounds one call (default summary.DefaultTimeout). A call that
	// runs out of time fails with an error wrapping summary.ErrTimeout.
	Timeout time.Duration
	// MaxNarrativeTokens is the narrative length the prompt asks for
	// (default summary.DefaultMaxNarrativeTokens).
	MaxNarrativeTokens int
	// ClientOptions are passed to genai.NewClient after the API key and
	// endpoint options.
	ClientOptions []option.ClientOption
}

// Summarizer is a summary.Service on the Gemini API. It is safe for
// concurrent use; Close it to release the client.
type Summarizer struct {
	client       *genai.Client
	model        string
	timeout      time.Duration
	maxNarrative int
}

var _ summary.Service = (*Summarizer)(nil)

// New returns a Summarizer. It does not contact the API.
func New(ctx context.Context, cfg Config) (*Summarizer, error) {
	if cfg.APIKey == "" && len(cfg.ClientOptions) == 0 {
		return nil, errors.New("gemini: no API key")
	}
	var opts []option.ClientOption
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithEndpoint(endpoint(cfg.BaseURL)))
	}
	opts = append(opts, cfg.ClientOptions...)
	client, err := genai.NewClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	s := &Summarizer{
		client:       client,
		model:        cfg.Model,
		timeout:      cfg.Timeout,
		maxNarrative: cfg.MaxNarrativeTokens,
	}
	if s.model == "" {
		s.model = DefaultModel
	}
	if s.timeout <= 0 {
		s.timeout = summary.DefaultTimeout
	}
	if s.maxNarrative <= 0 {
		s.maxNarrative = summary.DefaultMaxNarrativeTokens
	}
	return s, nil
}

// endpoint turns a base URL into the client's endpoint: the API version is
// added by the client, so a trailing /v1beta or /v1 is dropped.
func endpoint(base string) string {
	base = strings.TrimRight(base, "/")
	for _, v := range []string{"/v1beta", "/v1"} {
		base = strings.TrimSuffix(base, v)
	}
	return base
}

// Model returns the model name the summarizer calls.
func (s *Summarizer) Model() string { return s.model }

// Close releases the client.
func (s *Summarizer) Close() error { return s.client.Close() }

// ResponseSchema is the schema every reply must follow: an object with a
// "narrative" string and a "facts" array of {key, value, category} objects,
// category being one of summary.Categories.
func ResponseSchema() *genai.Schema {
	cats := make([]string, len(summary.Categories))
	for i, c := range summary.Categories {
		cats[i] = string(c)
	}
	return &genai.Schema{
		Type: genai.TypeObject,
		Properties: map[string]*genai.Schema{
			"narrative": {
				Type:        genai.TypeString,
				Description: "Concise summary of the conversation flow, tone, decisions and unresolved items.",
			},
			"facts": {
				Type:        genai.TypeArray,
				Description: "Every number, date, name, identifier and specific condition, with its exact value.",
				Items: &genai.Schema{
					Type: genai.TypeObject,
					Properties: map[string]*genai.Schema{
						"key":      {Type: genai.TypeString, Description: "Short identifier, e.g. order_number."},
						"value":    {Type: genai.TypeString, Description: "The exact value; empty to remove the fact."},
						"category": {Type: genai.TypeString, Format: "enum", Enum: cats},
					},
					Required: []string{"key", "value", "category"},
				},
			},
		},
		Required: []string{"narrative", "facts"},
	}
}

// Summarize implements summary.Service: one generateContent call with the
// system instruction and the transcript of summary.BuildPrompt, in JSON mode
// with ResponseSchema. Empty req.Messages give an empty Result without a
// call. A timeout wraps summary.ErrTimeout, a blocked or empty reply wraps
// summary.ErrEmptyReply, and an undecodable one summary.ErrUnparseable.
// Result.Usage comes from the response's usage metadata.
func (s *Summarizer) Summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	if len(req.Messages) == 0 {
		return summary.Result{}, nil
	}
	system, user := summary.BuildPrompt(req, s.maxNarrative)
	m := s.client.GenerativeModel(s.model)
	m.SystemInstruction = &genai.Content{Parts: []genai.Part{genai.Text(system)}}
	m.ResponseMIMEType = "application/json"
	m.ResponseSchema = ResponseSchema()

	callCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	resp, err := m.GenerateContent(callCtx, genai.Text(user))
	if err != nil {
		if ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) {
			return summary.Result{}, fmt.Errorf("gemini: %w after %s", summary.ErrTimeout, s.timeout)
		}
		var blocked *genai.BlockedError
		if errors.As(err, &blocked) {
			return summary.Result{}, fmt.Errorf("gemini: reply blocked (%v): %w", err, summary.ErrEmptyReply)
		}
		return summary.Result{}, fmt.Errorf("gemini: generate content: %w", err)
	}
	usage := usageOf(resp)
	text := replyText(resp)
	res, err := summary.ParseReply(text)
	res.Usage = usage
	if err == nil && res.IsEmpty() {
		err = fmt.Errorf("gemini: %w", summary.ErrEmptyReply)
	}
	if err != nil {
		return summary.Result{Usage: usage}, err
	}
	return res, nil
}

// replyText joins the text parts of the first candidate.
func replyText(resp *genai.GenerateContentResponse) string {
	if resp == nil || len(resp.Candidates) == 0 || resp.Candidates[0] == nil || resp.Candidates[0].Content == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range resp.Candidates[0].Content.Parts {
		if t, ok := p.(genai.Text); ok {
			b.WriteString(string(t))
		}
	}
	return b.String()
}

func usageOf(resp *genai.GenerateContentResponse) summary.Usage {
	if resp == nil || resp.UsageMetadata == nil {
		return summary.Usage{}
	}
	return summary.Usage{
		InputTokens:  int(resp.UsageMetadata.PromptTokenCount),
		OutputTokens: int(resp.UsageMetadata.CandidatesTokenCount),
	}
}
