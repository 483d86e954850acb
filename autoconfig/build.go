package autoconfig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/providers/gemini"
	"github.com/strata-go/strata/providers/openai"
	"github.com/strata-go/strata/summary"
)

// Build returns a manager wired as cfg says (nil cfg: Default()):
//
//   - summaries off (arc.reactor.memory.summary.enabled false): a takeLast-only
//     manager, without a summary store or summarizer;
//   - summaries on: a summary store and the configured summarizer
//     (extractive, gemini or openai);
//   - a datasource URL: PostgreSQL message (and summary) stores, migrated
//     first when datasource.migrate-on-start is true; otherwise in-memory
//     stores.
//
// The manager does not own the database pool: use BuildRuntime when the pool
// must be closed before the process ends.
func Build(ctx context.Context, cfg *Config) (*memory.Manager, error) {
	rt, err := BuildRuntime(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return rt.Manager, nil
}

// Runtime is everything BuildRuntime wired together.
type Runtime struct {
	// Config is the configuration the runtime was built from.
	Config *Config
	// Manager is the conversation memory.
	Manager *memory.Manager
	// Messages is the manager's message store.
	Messages memory.MessageStore
	// Summaries is the summary store; nil when summaries are off.
	Summaries summary.Store
	// Summarizer is the summary service; nil when summaries are off.
	Summarizer summary.Service
	// DB is the PostgreSQL pool; nil with in-memory stores.
	DB *sqlx.DB

	closers []func() error
}

// Close closes the manager (stopping background folds), the summarizer's
// client and the database pool, in that order, and returns the first error.
func (r *Runtime) Close() error {
	var first error
	if r.Manager != nil {
		first = r.Manager.Close()
	}
	for i := len(r.closers) - 1; i >= 0; i-- {
		if err := r.closers[i](); err != nil && first == nil {
			first = err
		}
	}
	r.closers = nil
	return first
}

// BuildOption customizes BuildRuntime.
type BuildOption func(*buildOptions)

type buildOptions struct {
	logger     *slog.Logger
	httpClient *http.Client
	svc        summary.Service
	mgrOpts    []memory.Option
}

// WithLogger sets the logger of the manager, the stores and the summarizer
// (default slog.Default()).
func WithLogger(l *slog.Logger) BuildOption {
	return func(o *buildOptions) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithHTTPClient sets the HTTP client of the openai summarizer (proxies,
// custom TLS).
func WithHTTPClient(c *http.Client) BuildOption {
	return func(o *buildOptions) { o.httpClient = c }
}

// WithSummarizer replaces the configured summarizer with svc (used only
// when summaries are on), like a user-supplied bean in the reference.
func WithSummarizer(svc summary.Service) BuildOption {
	return func(o *buildOptions) { o.svc = svc }
}

// WithManagerOptions adds options to memory.NewManager.
func WithManagerOptions(opts ...memory.Option) BuildOption {
	return func(o *buildOptions) { o.mgrOpts = append(o.mgrOpts, opts...) }
}

// BuildRuntime is Build returning the stores, the summarizer and the pool as
// well; Close the Runtime to release them. On error everything opened so far
// is closed.
func BuildRuntime(ctx context.Context, cfg *Config, opts ...BuildOption) (_ *Runtime, err error) {
	if cfg == nil {
		cfg = Default()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := buildOptions{logger: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	rt := &Runtime{Config: cfg}
	defer func() {
		if err != nil {
			_ = rt.Close()
		}
	}()

	dsn, err := cfg.DatabaseURL()
	if err != nil {
		return nil, err
	}
	if dsn != "" {
		d, err := db.Open(ctx, dsn)
		if err != nil {
			return nil, fmt.Errorf("datasource: %w", err)
		}
		rt.DB = d
		rt.closers = append(rt.closers, d.Close)
		if cfg.Datasource.MigrateOnStart {
			if err := db.Migrate(ctx, d); err != nil {
				return nil, fmt.Errorf("datasource: migrate: %w", err)
			}
		}
		rt.Messages = db.NewMessageStore(d, db.WithLogger(o.logger))
	} else {
		rt.Messages = memory.NewInMemoryStore()
	}

	mopts := []memory.Option{memory.WithLogger(o.logger)}
	if cfg.Memory.Enabled {
		if rt.DB != nil {
			rt.Summaries = db.NewSummaryStore(rt.DB, db.WithLogger(o.logger))
		} else {
			rt.Summaries = summary.NewInMemoryStore(cfg.Store.MaxSummaries)
		}
		svc := o.svc
		if svc == nil {
			svc, err = newSummarizer(ctx, cfg, &o)
			if err != nil {
				return nil, err
			}
			if c, ok := svc.(io.Closer); ok {
				rt.closers = append(rt.closers, c.Close)
			}
		}
		rt.Summarizer = svc
		mopts = append(mopts, memory.WithSummaries(rt.Summaries, svc))
		// A fold must not outlive its cross-process lock.
		if ttl := 2*cfg.Summarizer.Timeout + 30*time.Second; ttl > 2*time.Minute {
			mopts = append(mopts, memory.WithFoldLockTTL(ttl))
		}
	}
	mopts = append(mopts, o.mgrOpts...)
	rt.Manager, err = memory.NewManager(rt.Messages, cfg.Memory, mopts...)
	if err != nil {
		return nil, cfg.translateMemoryError(err)
	}
	return rt, nil
}

// NewSummarizer returns the summarizer cfg selects (EffectiveProvider),
// whether or not summaries are enabled. Close it when it implements
// io.Closer (the gemini one does).
func NewSummarizer(ctx context.Context, cfg *Config) (summary.Service, error) {
	o := buildOptions{logger: slog.Default()}
	return newSummarizer(ctx, cfg, &o)
}

func newSummarizer(ctx context.Context, cfg *Config, o *buildOptions) (summary.Service, error) {
	sc := cfg.Summarizer
	switch p := cfg.EffectiveProvider(); p {
	case ProviderExtractive:
		return summary.NewExtractiveService(), nil
	case ProviderGemini:
		key, err := cfg.apiKey(p)
		if err != nil {
			return nil, err
		}
		s, err := gemini.New(ctx, gemini.Config{
			APIKey:             key,
			Model:              cfg.Model(),
			BaseURL:            sc.BaseURL,
			Timeout:            sc.Timeout,
			MaxNarrativeTokens: cfg.Summary.MaxNarrativeTokens,
		})
		if err != nil {
			return nil, fmt.Errorf("summarizer: %w", err)
		}
		return s, nil
	case ProviderOpenAI:
		key, err := cfg.apiKey(p)
		if err != nil {
			return nil, err
		}
		s, err := openai.New(openai.Config{
			APIKey:             key,
			Model:              cfg.Model(),
			BaseURL:            sc.BaseURL,
			Timeout:            sc.Timeout,
			MaxNarrativeTokens: cfg.Summary.MaxNarrativeTokens,
			DisableJSONMode:    !sc.JSONMode,
			JSONSchema:         sc.JSONSchema,
			HTTPClient:         o.httpClient,
			Logger:             o.logger,
		})
		if err != nil {
			return nil, fmt.Errorf("summarizer: %w", err)
		}
		return s, nil
	default:
		return nil, cfg.errorFor(keySummarizerProvider, "must be one of "+strings.Join(Providers, ", "))
	}
}

// placeholderAPIKey is sent to OpenAI-compatible local servers that need no
// key (langchaingo's client insists on one).
const placeholderAPIKey = "strata-no-key"

// apiKey reads the provider's API key from the environment.
func (c *Config) apiKey(provider string) (string, error) {
	name := c.APIKeyEnv()
	if v, _ := c.LookupEnv(name); strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v), nil
	}
	explicit := c.Summarizer.APIKeyEnv != ""
	if provider == ProviderGemini && !explicit {
		if v, _ := c.LookupEnv("GEMINI_API_KEY"); strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), nil
		}
	}
	if provider == ProviderOpenAI && !explicit && isLocalOpenAI(c.Summarizer.BaseURL) {
		return placeholderAPIKey, nil
	}
	msg := fmt.Sprintf("summarizer %s: the environment variable %s holding the API key is empty or unset", provider, name)
	if !explicit {
		msg += " (" + keySummarizerAPIKeyEnv + " names another variable)"
	}
	return "", errors.New(msg)
}

// isLocalOpenAI reports whether base points at a server on this machine or
// a private network (localhost, loopback and private addresses, single-label
// host names such as a Docker service, *.local, *.internal): such
// OpenAI-compatible servers (Ollama, vLLM, llama.cpp) usually need no key.
func isLocalOpenAI(base string) bool {
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
