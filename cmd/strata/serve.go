package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/signal"
	"strings"
	"syscall"

	"github.com/strata-go/strata/autoconfig"
	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/memory/memstore"
)

const serveUsage = `Usage: strata serve [flags]

Serves Strata's HTTP API (package server) over the manager and stores the
configuration describes — PostgreSQL when a datasource is set, else in
memory — until SIGINT or SIGTERM, then shuts down gracefully: in-flight
requests finish, background folds are flushed, within
server.shutdown-timeout.

  POST   /v1/sessions                  new session (title, initial messages)
  POST   /v1/sessions/{id}/messages    append a turn or messages to a session
  GET    /v1/sessions/{id}/context     what the model should receive (?budget=N)
  GET    /v1/sessions/{id}             full history, summary and title
  GET    /v1/sessions                  the caller's sessions (?search=q to search)
  DELETE /v1/sessions/{id}             delete
  DELETE /v1/sessions/{id}/messages/{seq}
                                       erase a message and what was derived from it
  DELETE /v1/sessions/{id}/messages    erase several (?seq=N&seq=M…)
  DELETE /v1/sessions/{id}/facts/{key} erase a fact of the summary
  GET    /v1/sessions/{id}/export      the whole session as a snapshot (streamed)
  GET    /v1/sessions/{id}/inspect     one HTML page: a turn's prompt (?turn=N), folds, costs, fact histories
  POST   /v1/sessions/import           create a session from a snapshot
  GET    /healthz, /readyz, /openapi.json

Sessions are created by POST /v1/sessions (or imported); an unknown
session id, like another user's, answers 404. A path with an empty, "."
or ".." segment answers 400, never a redirect.

Bounds: a request body is at most server.max-body-bytes (1 MiB by
default), an import 8 times that (8 MiB); a page of GET /v1/sessions/{id}
holds at most server.history-page-bytes of JSON (8 MiB by default,
summary included). An export is streamed, whatever the session's size:
each request holds at most 8 MiB of messages at a time (one message when
larger) and the summary; the response ends within server.write-timeout.

Requests authenticate with Authorization: Bearer <key>; keys come from
arc.reactor.memory.server.api-keys, each bound to one user id, e.g.

  strata serve --set 'arc.reactor.memory.server.api-keys=web=key-env:STRATA_KEY_WEB'

(the key is read from $STRATA_KEY_WEB; "web=sha256:HEX" takes the key's
SHA-256 instead, printf %s KEY | sha256sum). The user ids "anonymous" and
"shared" are reserved (the owners of sessions saved without a user id and
of shared sessions): a key bound to either is refused at start-up. A
service key (service: true on an api-keys entry, or a line ending in
"service" in server.api-keys-file, which is re-read when it changes) acts
for the user each request names in the X-Strata-User header; a user key
sending that header gets 403. The access log goes to stderr.

Erasure: DELETE .../messages removes the messages and, in the same step,
everything derived from them: the facts and narrative sentences only they
state (what a surviving message still states stays), the catalogue's
title and search entry; erasing a tool call erases its results. A
summary written by an LLM, whose sentences cite no message, is withheld
once an erasure touches it and rebuilt from the surviving messages by the
next fold (one summarizer call). DELETE .../facts/{key} removes a fact's
value from the facts and the narrative, but its messages stay: only
erasing them is a guarantee.

Flags:
`

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var cf commonFlags
	cf.register(fs)
	listen := fs.String("listen", "", "listen on `ADDR` (host:port), overriding arc.reactor.memory.server.listen")
	logFormat := fs.String("log-format", "text", "log format: `text` or json")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	pos, err := parseFlags(fs, args, serveUsage, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("serve: unexpected argument %q (see strata serve --help)", pos[0])
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usagef("serve: --log-level %q: want debug, info, warn or error", *logLevel)
	}
	var handler slog.Handler
	switch opts := (&slog.HandlerOptions{Level: level}); *logFormat {
	case "text":
		handler = slog.NewTextHandler(stderr, opts)
	case "json":
		handler = slog.NewJSONHandler(stderr, opts)
	default:
		return usagef("serve: --log-format %q: want text or json", *logFormat)
	}
	if *listen != "" {
		cf.sets = append(cf.sets, "arc.reactor.memory.server.listen="+*listen)
	}
	cfg, err := cf.load()
	if err != nil {
		return err
	}
	if len(cfg.Server.APIKeys) == 0 && len(cfg.Server.Config.APIKeys) == 0 && cfg.Server.KeysFile == "" {
		return errors.New("serve: no API keys configured: set arc.reactor.memory.server.api-keys (e.g. --set 'arc.reactor.memory.server.api-keys=USER=key-env:NAME') or arc.reactor.memory.server.api-keys-file")
	}
	// main stops on SIGINT; a service manager sends SIGTERM.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()

	logger := slog.New(handler)
	srv, err := autoconfig.OpenServer(ctx, cfg, autoconfig.ServerOptions{Logger: logger})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Server.Addr)
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("serve: %w", err)
	}
	stores := "in-memory"
	if dsn, _ := cfg.DatabaseURL(); dsn != "" {
		stores = "PostgreSQL " + db.RedactDSN(dsn)
	} else {
		logger.WarnContext(ctx, "strata serve: the in-memory store is a development store: sessions are lost when the process ends, and it holds a bounded number of sessions (a user past a bound loses their own least recently used session; a user holding none is refused when it is full); set a datasource for production",
			"max_sessions", cmp.Or(cfg.Store.MaxSessions, memstore.DefaultMaxSessions),
			"max_sessions_per_user", cmp.Or(cfg.Store.MaxSessionsPerUser, memstore.DefaultMaxSessionsPerUser))
	}
	// The server's log announces "listening" (once, at info level); this
	// line says what serves there.
	fmt.Fprintf(stdout, "strata serve: http://%s (API keys: %d, stores: %s, summaries: %s)\n",
		ln.Addr(), len(cfg.Server.APIKeys), stores, summariesState(cfg.Memory.Enabled, cfg.EffectiveProvider()))
	if err := srv.Serve(ctx, ln); err != nil {
		return fmt.Errorf("serve: %s", strings.TrimPrefix(err.Error(), "server: "))
	}
	fmt.Fprintln(stdout, "strata serve: stopped")
	return nil
}

func summariesState(on bool, provider string) string {
	if !on {
		return "off (takeLast)"
	}
	return "on, " + provider
}
