package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/strata-go/strata/autoconfig"
	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

// instrumentationName names the server's tracer.
const instrumentationName = "github.com/strata-go/strata/server"

// readyTimeout bounds the store check of GET /readyz.
const readyTimeout = 2 * time.Second

// Server is Strata's HTTP API over one runtime (manager, stores, catalogue).
// Build it with Open (from configuration) or New, serve it with Serve or
// ListenAndServe (or mount Handler), and it releases the runtime when it
// stops. A Server is safe for concurrent use.
type Server struct {
	cfg     Config
	rt      *autoconfig.Runtime
	mgr     *memory.Manager
	store   memory.MessageStore
	sums    summary.Store
	cat     *catalog.Catalog
	keys    *keyring
	log     *slog.Logger
	est     trimmer.Estimator
	tracer  trace.Tracer
	pending *pendingSessions
	ready   []func(context.Context) error
	routes  []route
	handler http.Handler

	serving   atomic.Bool
	draining  atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// Option configures a Server.
type Option func(*options)

type options struct {
	logger    *slog.Logger
	cat       *catalog.Catalog
	ready     []func(context.Context) error
	buildOpts []autoconfig.BuildOption
	catOpts   []catalog.Option
}

// WithLogger sets the logger of the access log and of the server's own
// messages (default slog.Default()). Open also gives it to the runtime.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithCatalog sets the conversation catalogue behind GET /v1/sessions
// (listing and search); register its Observer with the manager
// (memory.WithFoldObserver) so that titles and search follow folds. The
// Server closes it when it stops. Without one, New lists sessions through
// the message store (memory.SessionLister) and answers search with 501;
// Open always builds one.
func WithCatalog(c *catalog.Catalog) Option {
	return func(o *options) { o.cat = c }
}

// WithReadiness adds a check to GET /readyz: the server is ready when the
// message store answers and every check returns nil. Each runs with a short
// deadline.
func WithReadiness(check func(ctx context.Context) error) Option {
	return func(o *options) {
		if check != nil {
			o.ready = append(o.ready, check)
		}
	}
}

// WithBuildOptions passes options to autoconfig.BuildRuntime (Open only),
// e.g. autoconfig.WithSummarizer.
func WithBuildOptions(opts ...autoconfig.BuildOption) Option {
	return func(o *options) { o.buildOpts = append(o.buildOpts, opts...) }
}

// WithCatalogOptions passes options to catalog.New (Open only), e.g. an
// embedder for semantic search.
func WithCatalogOptions(opts ...catalog.Option) Option {
	return func(o *options) { o.catOpts = append(o.catOpts, opts...) }
}

// Open builds everything strata serve runs from Strata's configuration:
// the runtime (autoconfig.BuildRuntime: manager and stores, PostgreSQL or
// in memory), a conversation catalogue over the same stores whose titles
// and search documents follow every fold, and the Server (ConfigFrom).
// The Server owns all of it: Serve, ListenAndServe or Close release it.
func Open(ctx context.Context, acfg *autoconfig.Config, opts ...Option) (*Server, error) {
	if acfg == nil {
		acfg = autoconfig.Default()
	}
	o := collect(opts)
	cfg, err := ConfigFrom(acfg)
	if err != nil {
		return nil, err
	}
	// The catalogue needs the stores BuildRuntime makes, and the manager
	// needs the catalogue's fold observer: bind it late.
	var catRef atomic.Pointer[catalog.Catalog]
	observe := func(ctx context.Context, s summary.Summary) {
		if c := catRef.Load(); c != nil {
			c.Observer()(ctx, s)
		}
	}
	forget := func(ctx context.Context, sessionID string) {
		if c := catRef.Load(); c != nil {
			c.DeleteObserver()(ctx, sessionID)
		}
	}
	bopts := append([]autoconfig.BuildOption{autoconfig.WithLogger(o.logger),
		autoconfig.WithManagerOptions(memory.WithFoldObserver(observe), memory.WithDeleteObserver(forget))}, o.buildOpts...)
	rt, err := autoconfig.BuildRuntime(ctx, acfg, bopts...)
	if err != nil {
		return nil, err
	}
	if o.cat == nil {
		var idx catalog.Index
		if rt.DB != nil {
			// pgvector when the server has it; the portable column otherwise.
			// It is DDL, so only where the schema is managed on start.
			if acfg.Datasource.MigrateOnStart {
				if err := db.EnableVectorSearch(ctx, rt.DB); err != nil {
					o.logger.InfoContext(ctx, "strata serve: catalogue scores in process (no pgvector)", "reason", err)
				}
			}
			idx = db.NewCatalogIndex(rt.DB)
		} else {
			idx = catalog.NewMemoryIndex()
		}
		copts := append([]catalog.Option{catalog.WithLogger(o.logger)}, o.catOpts...)
		o.cat = catalog.New(rt.Messages, rt.Summaries, idx, copts...)
	}
	catRef.Store(o.cat)
	opts = append(opts, WithCatalog(o.cat))
	s, err := New(rt, cfg, opts...)
	if err != nil {
		_ = o.cat.Close()
		_ = rt.Close()
		return nil, err
	}
	return s, nil
}

func collect(opts []Option) options {
	o := options{logger: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// New returns a Server over rt — its manager, stores and, when rt.DB is set,
// its database pool (checked by GET /readyz). The Server takes ownership of
// rt (and of the catalogue given with WithCatalog): it closes them when it
// stops. On error nothing is closed.
//
// cfg's zero fields take the defaults; a budget of 0 becomes
// rt.Config's max-context-window-tokens − max-output-tokens. At least one
// API key is required. Plain keys are hashed at once: only their SHA-256
// digests are kept.
func New(rt *autoconfig.Runtime, cfg Config, opts ...Option) (*Server, error) {
	if rt == nil || rt.Manager == nil {
		return nil, errors.New("server: nil runtime or manager")
	}
	o := collect(opts)
	budget := DefaultContextBudget
	if rt.Config != nil {
		budget = rt.Config.Memory.ContextWindowTokens - rt.Config.LLM.MaxOutputTokens
	}
	cfg = cfg.withDefaults(budget)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	keys, err := newKeyring(cfg.APIKeys)
	if err != nil {
		return nil, err
	}
	for _, k := range cfg.APIKeys {
		if k.Plaintext {
			o.logger.Warn("strata serve: an API key is written in plain text in the configuration; prefer key-env or sha256 in server.api-keys", "user_id", k.UserID)
		}
	}
	// Keep the digests only.
	cfg.APIKeys = nil
	store := rt.Messages
	if store == nil {
		store = rt.Manager.Store()
	}
	sums := rt.Summaries
	if sums == nil {
		sums = rt.Manager.SummaryStore()
	}
	s := &Server{
		cfg:     cfg,
		rt:      rt,
		mgr:     rt.Manager,
		store:   store,
		sums:    sums,
		cat:     o.cat,
		keys:    keys,
		log:     o.logger,
		est:     trimmer.NewEstimator(),
		tracer:  otel.Tracer(instrumentationName),
		pending: newPendingSessions(maxPendingSessions, pendingTTL),
		ready:   o.ready,
	}
	if rt.DB != nil {
		s.ready = append([]func(context.Context) error{rt.DB.PingContext}, s.ready...)
	}
	s.handler = s.buildHandler()
	return s, nil
}

// Handler returns the server's HTTP handler: the API, /healthz, /readyz
// and /openapi.json, with request ids, the access log, panic recovery,
// tracing and authentication. Mounting it elsewhere (httptest, another
// mux) is fine; the timeouts of Config then belong to that server.
func (s *Server) Handler() http.Handler { return s.handler }

// Config returns the server's configuration, without API keys.
func (s *Server) Config() Config { return s.cfg }

// Catalog returns the conversation catalogue, nil when there is none.
func (s *Server) Catalog() *catalog.Catalog { return s.cat }

// Manager returns the conversation manager the server uses.
func (s *Server) Manager() *memory.Manager { return s.mgr }

// ListenAndServe listens on Config.Addr and serves until ctx is done, then
// shuts down gracefully (see Serve).
func (s *Server) ListenAndServe(ctx context.Context) error {
	if s.cfg.Addr == "" {
		return errors.New("server: no listen address (arc.reactor.memory.server.listen)")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx is done or ln fails, then shuts down
// gracefully within Config.ShutdownTimeout: it stops accepting connections
// and waits for in-flight requests (connections still busy at the
// deadline are closed), then waits for background folds and catalogue
// refreshes with the rest of the deadline, then closes the catalogue and
// the runtime (folds still running are cancelled, their results
// discarded). It returns nil after a graceful stop, or what went wrong.
// Serve may be called once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if !s.serving.CompareAndSwap(false, true) {
		_ = ln.Close()
		return errors.New("server: Serve called twice")
	}
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		// In-flight requests must survive ctx: they are drained below.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	s.log.Info("strata serve: listening", "addr", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()

	var serveErr error
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			serveErr = fmt.Errorf("server: %w", err)
		}
		errc <- nil
	case <-ctx.Done():
	}
	return errors.Join(serveErr, s.shutdown(hs, errc))
}

// shutdown drains hs, flushes background work and closes everything.
func (s *Server) shutdown(hs *http.Server, errc chan error) error {
	s.draining.Store(true)
	start := time.Now()
	s.log.Info("strata serve: shutting down", "timeout", s.cfg.ShutdownTimeout.String())
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	var errs []error
	if err := hs.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("server: in-flight requests not finished within %s: %w", s.cfg.ShutdownTimeout, err))
		_ = hs.Close()
	}
	<-errc // hs.Serve has returned
	if err := s.Flush(ctx); err != nil {
		errs = append(errs, fmt.Errorf("server: background folds not finished within %s: %w", s.cfg.ShutdownTimeout, err))
	}
	if err := s.Close(); err != nil {
		errs = append(errs, err)
	}
	err := errors.Join(errs...)
	if err != nil {
		s.log.Error("strata serve: stopped", "duration", time.Since(start).String(), "error", err)
	} else {
		s.log.Info("strata serve: stopped", "duration", time.Since(start).String())
	}
	return err
}

// Flush waits until no background fold, fold observer or catalogue
// refresh is queued or running, or until ctx is done.
func (s *Server) Flush(ctx context.Context) error {
	if err := s.mgr.Flush(ctx); err != nil {
		return err
	}
	if s.cat != nil {
		if err := s.cat.Flush(ctx); err != nil {
			return err
		}
		// A refresh may have been scheduled while folds ran.
		return s.mgr.Flush(ctx)
	}
	return nil
}

// Close closes the catalogue and the runtime (manager, summarizer,
// database pool) without waiting for background folds: they are cancelled.
// Serve calls it after draining; call it yourself when you only used
// Handler. Close is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.draining.Store(true)
		var errs []error
		// The manager first: no more fold observers call the catalogue.
		if err := s.mgr.Close(); err != nil {
			errs = append(errs, err)
		}
		if s.cat != nil {
			if err := s.cat.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := s.rt.Close(); err != nil {
			errs = append(errs, err)
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// pendingSessions remembers sessions created without messages (POST
// /v1/sessions with no messages) until their first message: their owner and
// title. They live in this process only, for at most ttl.
type pendingSessions struct {
	mu  sync.Mutex
	m   map[string]pendingSession
	max int
	ttl time.Duration
}

type pendingSession struct {
	user    string
	title   string
	created time.Time
}

// Bounds of the pending sessions.
const (
	maxPendingSessions = 100_000
	pendingTTL         = 24 * time.Hour
)

func newPendingSessions(max int, ttl time.Duration) *pendingSessions {
	return &pendingSessions{m: map[string]pendingSession{}, max: max, ttl: ttl}
}

func (p *pendingSessions) add(id, user, title string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if len(p.m) >= p.max {
		var oldestID string
		var oldest time.Time
		for k, v := range p.m {
			if now.Sub(v.created) > p.ttl {
				delete(p.m, k)
				continue
			}
			if oldestID == "" || v.created.Before(oldest) {
				oldestID, oldest = k, v.created
			}
		}
		if len(p.m) >= p.max {
			delete(p.m, oldestID)
		}
	}
	p.m[id] = pendingSession{user: user, title: title, created: now}
}

func (p *pendingSessions) get(id string) (pendingSession, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.m[id]
	if ok && time.Since(v.created) > p.ttl {
		delete(p.m, id)
		return pendingSession{}, false
	}
	return v, ok
}

func (p *pendingSessions) remove(id string) {
	p.mu.Lock()
	delete(p.m, id)
	p.mu.Unlock()
}
