package autoconfig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/internal/nilcheck"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/memstore"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

// Build returns a manager wired as cfg says (nil cfg: Default()):
//
//   - summaries off (arc.reactor.memory.summary.enabled false): a takeLast-only
//     manager, without a summary store or summarizer;
//   - summaries on: a summary store and the summarizer registered under
//     summarizer.provider (the built-in extractive one, or one whose package
//     the program imports; see summary.Register);
//   - a datasource URL: PostgreSQL message (and summary) stores, migrated
//     first when datasource.migrate-on-start is true; otherwise in-memory
//     stores.
//
// The manager's budget (context window, output reserve) is cfg.Memory's.
// The manager does not own the database pool: use BuildRuntime when the pool
// must be closed before the process ends.
func Build(ctx context.Context, cfg *Config) (*memory.Manager, error) {
	rt, err := BuildRuntime(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return rt.Manager, nil
}

// Runtime is what BuildRuntime wired together. Session data — messages,
// summaries, listings — is reached through Manager only.
type Runtime struct {
	// Config is the configuration the runtime was built from.
	Config *Config
	// Manager is the conversation memory.
	Manager *memory.Manager
	// DB is the PostgreSQL pool (nil with in-memory stores), for components
	// that keep their own tables next to the manager's, such as the
	// catalogue index (db.NewCatalogIndex), and for health checks.
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
	svcSet     bool
	mgrOpts    []memory.Option
	// onEvict is told of the in-memory message store's evictions (OpenServer
	// drops the catalogue documents of evicted sessions).
	onEvict func(sessionID, userID string)
}

// WithLogger sets the logger of the manager, the stores and the summarizer.
// Without it nothing is logged.
func WithLogger(l *slog.Logger) BuildOption {
	return func(o *buildOptions) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithHTTPClient sets the HTTP client of summarizers that call an HTTP API
// (proxies, custom TLS); see summary.Settings.HTTPClient.
func WithHTTPClient(c *http.Client) BuildOption {
	return func(o *buildOptions) { o.httpClient = c }
}

// WithSummarizer replaces the configured summarizer with svc (used only
// when summaries are on), like a user-supplied bean in arc-reactor. A nil
// svc makes BuildRuntime fail when summaries are on.
func WithSummarizer(svc summary.Service) BuildOption {
	return func(o *buildOptions) { o.svc, o.svcSet = svc, true }
}

// WithManagerOptions adds options to memory.NewManager, e.g. fold and
// delete observers. (A tokenizer that matches the model is
// Config.Memory.Estimator.)
func WithManagerOptions(opts ...memory.Option) BuildOption {
	return func(o *buildOptions) { o.mgrOpts = append(o.mgrOpts, opts...) }
}

func newBuildOptions(opts []BuildOption) buildOptions {
	o := buildOptions{logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// BuildRuntime is Build returning the database pool as well and a Close
// that releases everything; on error everything opened so far is closed.
// It refuses a configuration that is invalid (Config.Validate) or half
// wired: summaries on with a summarizer provider that is not registered, a
// provider factory that returns no summarizer, or a nil WithSummarizer.
func BuildRuntime(ctx context.Context, cfg *Config, opts ...BuildOption) (_ *Runtime, err error) {
	if cfg == nil {
		cfg = Default()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := newBuildOptions(opts)
	est, err := estimator(cfg)
	if err != nil {
		return nil, err
	}
	if note := cfg.UnusedNote(); note != "" {
		o.logger.Info(note)
	}
	if cfg.Memory.Enabled && !o.svcSet {
		p, why, fellBack := cfg.summarizerChoice()
		level := slog.LevelInfo
		if fellBack {
			level = slog.LevelWarn
		}
		o.logger.Log(ctx, level, "summarizer: "+p+": "+why, "provider", p)
	}
	rt := &Runtime{Config: cfg}
	defer func() {
		if err != nil {
			_ = rt.Close()
		}
	}()

	// The summarizer first: a provider that is not compiled in or lacks
	// its API key fails before any database is touched.
	var svc summary.Service
	if cfg.Memory.Enabled {
		if svc, err = rt.summarizer(ctx, cfg, &o); err != nil {
			return nil, err
		}
	}

	d, err := OpenDatabase(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("datasource: %w", err)
	}
	var store memory.MessageStore
	var mem *memstore.Store
	if d != nil {
		rt.DB = d
		rt.closers = append(rt.closers, d.Close)
		if cfg.Datasource.MigrateOnStart {
			if err := db.Migrate(ctx, d); err != nil {
				return nil, fmt.Errorf("datasource: migrate: %w", err)
			}
		}
		dbOpts := []db.Option{db.WithLogger(o.logger)}
		if cfg.Datasource.PreparedStatements {
			dbOpts = append(dbOpts, db.WithPreparedStatements())
		}
		store = db.NewMessageStore(d, dbOpts...)
	} else {
		mem = memstore.New(memstore.WithMaxSessions(cfg.Store.MaxSessions),
			memstore.WithMaxSessionsPerUser(cfg.Store.MaxSessionsPerUser),
			memstore.WithLogger(o.logger), memstore.WithOnEvict(o.onEvict))
		store = mem
	}

	mcfg := cfg.Memory
	mcfg.Estimator = est
	// One key bounds a summarizer call: the provider's client and the
	// manager's deadline (which holds even for a summarizer that ignores
	// its context).
	mcfg.SummarizeTimeout = cfg.Summarizer.Timeout
	if ttl := foldLockTTL(cfg.Summarizer.Timeout); !cfg.IsSet(keyFoldLockTTL) && ttl > mcfg.FoldLockTTL {
		mcfg.FoldLockTTL = ttl // a fold must not outlive its cross-process lock
	}
	mopts := []memory.Option{memory.WithLogger(o.logger)}
	if cfg.Memory.Enabled {
		var sums summary.Store
		if rt.DB != nil {
			sums = db.NewSummaryStore(rt.DB, db.WithLogger(o.logger))
		} else {
			// Summaries live in their sessions, within the sessions' and
			// users' bounds: no tenant's sessions evict another's
			// summaries (store.max-summaries does not apply).
			sums = mem.Summaries()
			if n := cfg.Store.MaxSummaries; cfg.IsSet(keyMaxSummaries) && n != 0 && n != summary.DefaultMaxSummaries {
				o.logger.Warn("strata: "+keyMaxSummaries+" bounds nothing: a session's summary lives in the session, within "+
					keyMaxSessions+" and "+keyMaxSessionsPerUser, "value", cfg.Store.MaxSummaries)
			}
		}
		mopts = append(mopts, memory.WithSummaries(sums, svc))
	}
	mopts = append(mopts, o.mgrOpts...)
	rt.Manager, err = memory.NewManager(store, mcfg, mopts...)
	if err != nil {
		return nil, cfg.translateMemoryError(err)
	}
	return rt, nil
}

// estimator returns the manager's token estimator: the one set in code
// (Memory.Estimator), the token-encoding key's, or nil for the default.
// Both at once would be two budgets, so they are refused.
func estimator(cfg *Config) (trimmer.Estimator, error) {
	if cfg.TokenEncoding == "" {
		return cfg.Memory.Estimator, nil
	}
	if cfg.Memory.Estimator != nil {
		return nil, cfg.errorFor(keyTokenEncoding, "must be empty when Memory.Estimator is set in code: the manager counts tokens one way")
	}
	est, err := trimmer.NewTiktokenEstimator(cfg.TokenEncoding)
	if err != nil {
		return nil, cfg.errorFor(keyTokenEncoding, err.Error())
	}
	return est, nil
}

// summarizer returns the summarizer of a runtime with summaries on:
// WithSummarizer's, or the configured provider's (whose Close, if any, is
// added to the runtime's closers).
func (rt *Runtime) summarizer(ctx context.Context, cfg *Config, o *buildOptions) (summary.Service, error) {
	if o.svcSet {
		if nilcheck.IsNil(o.svc) {
			return nil, errors.New("autoconfig: WithSummarizer got a nil summarizer, but summaries are on (" + keyEnabled + ") and need one")
		}
		return o.svc, nil
	}
	svc, err := newSummarizer(ctx, cfg, o)
	if err != nil {
		return nil, err
	}
	if c, ok := svc.(io.Closer); ok {
		rt.closers = append(rt.closers, c.Close)
	}
	return svc, nil
}

// NewSummarizer returns the summarizer cfg selects (EffectiveProvider),
// whether or not summaries are enabled, built by its registered factory.
// Close it when it implements io.Closer (the gemini one does).
func NewSummarizer(ctx context.Context, cfg *Config, opts ...BuildOption) (summary.Service, error) {
	if cfg == nil {
		cfg = Default()
	}
	o := newBuildOptions(opts)
	return newSummarizer(ctx, cfg, &o)
}

func newSummarizer(ctx context.Context, cfg *Config, o *buildOptions) (summary.Service, error) {
	name := cfg.EffectiveProvider()
	f, ok := summary.LookupProvider(name)
	if !ok {
		if imp, known := strataProviders[name]; known {
			return nil, cfg.errorFor(keySummarizerProvider, fmt.Sprintf(
				"the %s summarizer is not compiled into this program: add import _ %q to its main package", name, imp))
		}
		return nil, cfg.errorFor(keySummarizerProvider, "must be one of "+joinNames(knownProviders()))
	}
	sc := cfg.Summarizer
	svc, err := f(ctx, summary.Settings{
		Provider:           name,
		Model:              cfg.EffectiveModel(),
		BaseURL:            sc.BaseURL,
		APIKeyEnv:          sc.APIKeyEnv,
		Timeout:            sc.Timeout,
		MaxNarrativeTokens: cfg.Summary.MaxNarrativeTokens,
		JSONMode:           sc.JSONMode,
		JSONSchema:         sc.JSONSchema,
		HTTPClient:         o.httpClient,
		Logger:             o.logger,
		Env:                cfg.LookupEnv,
	})
	if err != nil {
		var ke *summary.APIKeyError
		var ce *Error
		switch {
		case errors.As(err, &ke):
			return nil, cfg.apiKeyError(ke)
		case errors.As(err, &ce):
			return nil, err
		}
		return nil, fmt.Errorf("summarizer %s: %w", name, err)
	}
	if nilcheck.IsNil(svc) {
		return nil, fmt.Errorf("summarizer %s: the provider returned no summarizer", name)
	}
	return svc, nil
}

// apiKeyError reports a provider's missing API key on
// summarizer.api-key-env, with the value and its source when the key names
// the variable.
func (c *Config) apiKeyError(ke *summary.APIKeyError) error {
	msg := ke.Error()
	if !ke.Explicit && len(ke.Vars) > 0 {
		msg += "; set it, or name another variable with this key"
	}
	if !ke.Explicit {
		return newError(keySummarizerAPIKeyEnv, "", "", msg)
	}
	return c.errorFor(keySummarizerAPIKeyEnv, msg)
}

// foldLockTTL is the cross-process fold lock's hold that a summarizer call
// of the given timeout needs: two calls and a margin.
func foldLockTTL(timeout time.Duration) time.Duration { return 2*timeout + 30*time.Second }
