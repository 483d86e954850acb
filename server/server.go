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

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/memory"
)

// instrumentationName names the server's tracer.
const instrumentationName = "github.com/strata-go/strata/server"

// Server is Strata's HTTP API over one conversation manager and,
// optionally, a conversation catalogue. Build it with New, serve it with
// Serve or ListenAndServe (or mount Handler); it closes the manager and the
// catalogue when it stops. A Server is safe for concurrent use.
type Server struct {
	cfg     Config
	mgr     *memory.Manager
	cat     *catalog.Catalog
	keys    *keySource
	log     *slog.Logger
	tracer  trace.Tracer
	routes  []route
	handler http.Handler

	// budget is the manager's prompt budget, the ceiling of every context;
	// ctxBudget is the budget of a context request without one.
	budget    int
	ctxBudget int

	ready      []readiness
	readyLimit time.Duration // GET /readyz answers within this
	onClose    []func() error

	serving   atomic.Bool
	draining  atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// readiness is one named check of GET /readyz.
type readiness struct {
	name  string
	check func(context.Context) error
}

// Option configures a Server.
type Option func(*options)

type options struct {
	logger  *slog.Logger
	ready   []readiness
	onClose []func() error
}

// WithLogger sets the logger of the access log and of the server's own
// messages (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithReadiness adds a check to GET /readyz, e.g. a ping of the database
// the stores use: the server is ready when every check returns nil. The
// checks run concurrently, each with a deadline of 1.5 s; one that has not
// returned shortly after counts as failed, so /readyz answers within 2 s
// even when a check ignores its context. name identifies the check in the
// log.
func WithReadiness(name string, check func(ctx context.Context) error) Option {
	return func(o *options) {
		if check != nil {
			o.ready = append(o.ready, readiness{name: name, check: check})
		}
	}
}

// WithOnClose adds a function Close calls after closing the manager and the
// catalogue, e.g. to close the database pool under the stores. Functions
// run in the reverse order of their options.
func WithOnClose(fn func() error) Option {
	return func(o *options) {
		if fn != nil {
			o.onClose = append(o.onClose, fn)
		}
	}
}

// readyLimit is the time GET /readyz answers within. Each check gets
// three quarters of it, and the probe stops waiting at seven eighths.
const readyLimit = 2 * time.Second

// New returns a Server over mgr and, when cat is not nil, the conversation
// catalogue that keeps titles and answers listings and search (without one,
// sessions are listed through the manager without titles, and search
// answers 501). The catalogue must read through mgr (catalog.New(mgr, …)
// subscribes it to mgr's folds and deletes).
//
// The Server takes ownership of mgr and cat: it closes them when it stops
// (Serve, Close). On error nothing is closed.
//
// cfg's zero fields take the defaults. At least one API key is required.
// Plain keys are hashed at once: only their SHA-256 digests are kept.
func New(mgr *memory.Manager, cat *catalog.Catalog, cfg Config, opts ...Option) (*Server, error) {
	if mgr == nil {
		return nil, errors.New("server: nil manager")
	}
	o := options{logger: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	mc := mgr.Config()
	budget := mc.ContextWindowTokens - mc.OutputReserveTokens
	if budget < 1 {
		return nil, fmt.Errorf("server: the manager's prompt budget is %d tokens (context window %d − output reserve %d), want >= 1",
			budget, mc.ContextWindowTokens, mc.OutputReserveTokens)
	}
	keys, err := newKeySource(cfg.APIKeys, cfg.KeysFile, cfg.KeysFileInterval, o.logger)
	if err != nil {
		return nil, err
	}
	for _, k := range cfg.APIKeys {
		if k.Plaintext {
			o.logger.Warn("strata serve: an API key is written in plain text in the configuration; prefer a key from the environment or its SHA-256", "user_id", k.UserID)
		}
	}
	// Keep the digests only.
	cfg.APIKeys = nil
	ctxBudget := cfg.ContextBudget
	switch {
	case ctxBudget == 0:
		ctxBudget = budget
	case ctxBudget > budget:
		o.logger.Warn("strata serve: the context budget exceeds the manager's prompt budget; using the manager's",
			"context_budget", ctxBudget, "manager_budget", budget)
		ctxBudget = budget
	}
	s := &Server{
		cfg:        cfg,
		mgr:        mgr,
		cat:        cat,
		keys:       keys,
		log:        o.logger,
		tracer:     otel.Tracer(instrumentationName),
		budget:     budget,
		ctxBudget:  ctxBudget,
		ready:      o.ready,
		readyLimit: readyLimit,
		onClose:    o.onClose,
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

// ListenAndServe listens on Config.Addr and serves until ctx is done, then
// shuts down gracefully (see Serve).
func (s *Server) ListenAndServe(ctx context.Context) error {
	if s.cfg.Addr == "" {
		return errors.New("server: no listen address (Config.Addr)")
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
// refreshes with the rest of the deadline, then closes everything (see
// Close; folds still running are cancelled, their results discarded). It
// returns nil after a graceful stop, or what went wrong. Serve may be
// called once.
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

// Close closes the manager, the catalogue, then runs the WithOnClose
// functions, without waiting for background folds: they are cancelled.
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
		for i := len(s.onClose) - 1; i >= 0; i-- {
			if err := s.onClose[i](); err != nil {
				errs = append(errs, err)
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// checkReady runs the readiness checks concurrently, each bounded by three
// quarters of s.readyLimit, and returns their failures within seven
// eighths of it. A check that has not returned by then (it ignores its
// context) counts as failed and is left to finish on its own.
func (s *Server) checkReady(ctx context.Context) error {
	if len(s.ready) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.readyLimit*3/4)
	defer cancel()
	results := make(chan error, len(s.ready)) // never blocks a late check
	for _, rc := range s.ready {
		go func() {
			err := func() (err error) {
				defer func() {
					if v := recover(); v != nil {
						err = fmt.Errorf("panic: %v", v)
					}
				}()
				return rc.check(ctx)
			}()
			if err != nil {
				err = fmt.Errorf("%s: %w", rc.name, err)
			}
			results <- err
		}()
	}
	// Checks that honour their context have returned by their deadline;
	// an eighth more lets them report before the probe answers.
	grace := time.NewTimer(s.readyLimit * 7 / 8)
	defer grace.Stop()
	var errs []error
	for range s.ready {
		select {
		case err := <-results:
			if err != nil {
				errs = append(errs, err)
			}
		case <-grace.C:
			return errors.Join(append(errs, fmt.Errorf("readiness checks did not answer within %s", s.readyLimit*7/8))...)
		}
	}
	return errors.Join(errs...)
}
