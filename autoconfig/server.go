package autoconfig

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/server"
)

// Defaults of strata serve (arc.reactor.memory.server.*). Those of the HTTP
// server itself are package server's.
const (
	// DefaultServerListen is the address strata serve listens on: loopback
	// only, so that a server started by mistake is not reachable from the
	// network. Containers set ":8080".
	DefaultServerListen = "127.0.0.1:8080"
	// DefaultServerMaxBodyBytes caps request bodies (1 MiB).
	DefaultServerMaxBodyBytes = server.DefaultMaxBodyBytes
	// DefaultServerReadHeaderTimeout bounds reading a request's headers.
	DefaultServerReadHeaderTimeout = server.DefaultReadHeaderTimeout
	// DefaultServerReadTimeout bounds reading a whole request.
	DefaultServerReadTimeout = server.DefaultReadTimeout
	// DefaultServerWriteTimeout bounds a request from the end of its headers
	// to the end of the response. It exceeds the summarizer's default
	// timeout because a context load may fold synchronously.
	DefaultServerWriteTimeout = server.DefaultWriteTimeout
	// DefaultServerIdleTimeout closes idle keep-alive connections.
	DefaultServerIdleTimeout = server.DefaultIdleTimeout
	// DefaultServerHistoryPageBytes caps the messages of one history page
	// (8 MiB of JSON).
	DefaultServerHistoryPageBytes = server.DefaultMaxHistoryBytes
	// DefaultServerShutdownTimeout bounds a graceful shutdown: in-flight
	// requests, then background folds.
	DefaultServerShutdownTimeout = server.DefaultShutdownTimeout
)

// Server keys.
const (
	keyServerListen            = "arc.reactor.memory.server.listen"
	keyServerAPIKeys           = "arc.reactor.memory.server.api-keys"
	keyServerAPIKeysFile       = "arc.reactor.memory.server.api-keys-file"
	keyServerMaxBodyBytes      = "arc.reactor.memory.server.max-body-bytes"
	keyServerReadHeaderTimeout = "arc.reactor.memory.server.read-header-timeout"
	keyServerReadTimeout       = "arc.reactor.memory.server.read-timeout"
	keyServerWriteTimeout      = "arc.reactor.memory.server.write-timeout"
	keyServerIdleTimeout       = "arc.reactor.memory.server.idle-timeout"
	keyServerShutdownTimeout   = "arc.reactor.memory.server.shutdown-timeout"
	keyServerContextBudget     = "arc.reactor.memory.server.context-budget"
	keyServerHistoryPageBytes  = "arc.reactor.memory.server.history-page-bytes"
)

// ServerConfig configures strata serve, the HTTP API over the manager
// (arc.reactor.memory.server.*; package server). Its server settings are
// package server's own Config, one definition under the keys:
//
//	listen               Config.Addr (default DefaultServerListen)
//	api-keys-file        Config.KeysFile
//	max-body-bytes       Config.MaxBodyBytes
//	read-header-timeout, read-timeout, write-timeout, idle-timeout,
//	shutdown-timeout     the Config fields of those names
//	context-budget       Config.ContextBudget
//	history-page-bytes   Config.MaxHistoryBytes
//
// The keys themselves are configured in APIKeys; OpenServer resolves them
// into Config.APIKeys (after any given there).
type ServerConfig struct {
	server.Config
	// APIKeys are the accepted API keys as configured (api-keys), each
	// bound to one user id (or a service key, acting for the user each
	// request names). With none, no Config.APIKeys and no KeysFile,
	// strata serve refuses to start.
	APIKeys []APIKeyConfig
}

// APIKeyConfig is one entry of arc.reactor.memory.server.api-keys: a key,
// given by exactly one of KeyEnv, SHA256 and Key, and the user id every
// request made with it acts as.
type APIKeyConfig struct {
	// UserID is the user the key authenticates (user-id).
	UserID string
	// KeyEnv names the environment variable holding the key (key-env).
	KeyEnv string
	// SHA256 is the hex SHA-256 digest of the key (sha256), so that the
	// key itself never appears in configuration.
	SHA256 string
	// Key is the key itself (key); allowed, but strata serve warns about
	// it: prefer key-env or sha256.
	Key string
	// Service makes it a service key (service: true): each request acts
	// for the user it names in the X-Strata-User header, and UserID names
	// the service.
	Service bool
}

// Kind returns which field gives the key: "key-env", "sha256" or "key"
// ("" when none is set).
func (a APIKeyConfig) Kind() string {
	switch {
	case a.KeyEnv != "":
		return "key-env"
	case a.SHA256 != "":
		return "sha256"
	case a.Key != "":
		return "key"
	}
	return ""
}

func defaultServerConfig() ServerConfig {
	return ServerConfig{Config: server.Config{
		Addr:              DefaultServerListen,
		MaxBodyBytes:      DefaultServerMaxBodyBytes,
		ReadHeaderTimeout: DefaultServerReadHeaderTimeout,
		ReadTimeout:       DefaultServerReadTimeout,
		WriteTimeout:      DefaultServerWriteTimeout,
		IdleTimeout:       DefaultServerIdleTimeout,
		ShutdownTimeout:   DefaultServerShutdownTimeout,
		MaxHistoryBytes:   DefaultServerHistoryPageBytes,
	}}
}

// apiKeysDoc describes arc.reactor.memory.server.api-keys: a YAML list of
// maps, or, from the environment and --set, a JSON list or the compact form
// "user=key-env:NAME,user2=sha256:HEX" (see parseAPIKeys).
const apiKeysDoc = "strata serve: API keys, each bound to one user id: a list of {user-id: U, key-env: NAME} (the key is read from $NAME) or {user-id: U, sha256: HEX} (the key's SHA-256); {user-id: U, key: K} works but puts a secret in the file. " +
	"Add service: true for a service key, which acts for the user each request names in X-Strata-User (user-id then names the service). " +
	"In the environment or --set: a JSON list, or user=key-env:NAME,user2=sha256:HEX. Empty: strata serve refuses to start."

// parseAPIKeys reads the api-keys value: a YAML list of maps, or a string
// (JSON list or compact form). An empty list is nil.
func parseAPIKeys(c *Config, raw any) ([]APIKeyConfig, error) {
	switch v := raw.(type) {
	case nil:
		return nil, nil
	case []any:
		var out []APIKeyConfig
		for i, e := range v {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("entry %d: want a map such as {user-id: alice, key-env: STRATA_KEY_ALICE}, got %s", i+1, describe(e))
			}
			k, err := apiKeyFromMap(c, m)
			if err != nil {
				return nil, fmt.Errorf("entry %d: %v", i+1, err)
			}
			out = append(out, k)
		}
		return out, nil
	case string:
		s := strings.TrimSpace(v)
		switch {
		case s == "" || s == "[]":
			return nil, nil
		case strings.HasPrefix(s, "["):
			var list []map[string]any
			dec := json.NewDecoder(strings.NewReader(s))
			if err := dec.Decode(&list); err != nil {
				return nil, fmt.Errorf("malformed JSON list: %v", err)
			}
			items := make([]any, len(list))
			for i, m := range list {
				items[i] = m
			}
			return parseAPIKeys(c, items)
		}
		var out []APIKeyConfig
		for i, item := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
			user, spec, ok := strings.Cut(item, "=")
			kind, val, ok2 := strings.Cut(spec, ":")
			if !ok || !ok2 {
				return nil, fmt.Errorf("entry %d: want USER=key-env:NAME, USER=sha256:HEX or USER=key:KEY", i+1)
			}
			m := map[string]any{"user-id": user, kind: val}
			k, err := apiKeyFromMap(c, m)
			if err != nil {
				return nil, fmt.Errorf("entry %d: %v", i+1, err)
			}
			out = append(out, k)
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a list of {user-id, key-env | sha256 | key} maps, got %s", describe(raw))
}

// apiKeyFromMap reads one api-keys entry; its keys are matched like every
// other key (case and "-"/"_" do not matter). Values may use ${NAME}
// placeholders.
func apiKeyFromMap(c *Config, m map[string]any) (APIKeyConfig, error) {
	var k APIKeyConfig
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s, err := toString(m[name])
		if err != nil {
			return k, fmt.Errorf("%s: %v", name, err)
		}
		if strings.Contains(s, "${") {
			if s, err = c.resolvePlaceholders(s); err != nil {
				return k, fmt.Errorf("%s: %v", name, err)
			}
		}
		switch canonical(name) {
		case "userid":
			k.UserID = s
		case "keyenv":
			k.KeyEnv = s
		case "sha256":
			k.SHA256 = strings.ToLower(s)
		case "key":
			k.Key = s
		case "service":
			b, err := strconv.ParseBool(s)
			if err != nil {
				return k, fmt.Errorf("service: want true or false, got %q", s)
			}
			k.Service = b
		default:
			return k, fmt.Errorf("unknown field %q (want user-id, one of key-env, sha256, key, and optionally service)", name)
		}
	}
	return k, nil
}

// formatAPIKeys renders the keys as a YAML flow list; plain keys are masked.
func formatAPIKeys(keys []APIKeyConfig) string {
	if len(keys) == 0 {
		return "[]"
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		var v string
		switch k.Kind() {
		case "key-env":
			v = strconv.Quote(k.KeyEnv)
		case "sha256":
			v = strconv.Quote(k.SHA256)
		case "key":
			v = `"*****"`
		}
		parts[i] = fmt.Sprintf("{user-id: %s, %s: %s}", strconv.Quote(k.UserID), k.Kind(), v)
		if k.Service {
			parts[i] = strings.TrimSuffix(parts[i], "}") + ", service: true}"
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// validateServer checks the server keys.
func (c *Config) validateServer() error {
	s := c.Server
	_, port, err := net.SplitHostPort(s.Addr)
	if err != nil {
		return c.errorFor(keyServerListen, "must be host:port, e.g. 127.0.0.1:8080 or :8080")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return c.errorFor(keyServerListen, "the port must be a number between 0 and 65535")
	}
	checks := []struct {
		bad  bool
		key  string
		want string
	}{
		{s.MaxBodyBytes < 1024, keyServerMaxBodyBytes, "must be >= 1024"},
		{s.MaxHistoryBytes < 1024, keyServerHistoryPageBytes, "must be >= 1024 (default 8388608)"},
		{s.ReadHeaderTimeout <= 0, keyServerReadHeaderTimeout, "must be > 0 (e.g. 10s)"},
		{s.ReadTimeout <= 0, keyServerReadTimeout, "must be > 0 (e.g. 30s)"},
		{s.WriteTimeout <= 0, keyServerWriteTimeout, "must be > 0 (e.g. 90s)"},
		{s.IdleTimeout <= 0, keyServerIdleTimeout, "must be > 0 (e.g. 120s)"},
		{s.ShutdownTimeout <= 0, keyServerShutdownTimeout, "must be > 0 (e.g. 30s)"},
		{s.ContextBudget < 0, keyServerContextBudget, "must be >= 0 (0 = max-context-window-tokens - max-output-tokens)"},
	}
	for _, ck := range checks {
		if ck.bad {
			return c.errorFor(ck.key, ck.want)
		}
	}
	seen := map[string]int{}
	for i, k := range s.APIKeys {
		if err := k.validate(); err != nil {
			return newError(keyServerAPIKeys, "", c.Source(keyServerAPIKeys), fmt.Sprintf("entry %d: %v", i+1, err))
		}
		id := k.Kind() + ":" + k.KeyEnv + k.SHA256 + k.Key
		if j, ok := seen[id]; ok {
			return newError(keyServerAPIKeys, "", c.Source(keyServerAPIKeys), fmt.Sprintf("entries %d and %d give the same key", j+1, i+1))
		}
		seen[id] = i
	}
	return nil
}

// validate checks one api-keys entry.
func (a APIKeyConfig) validate() error {
	if strings.TrimSpace(a.UserID) == "" {
		return errors.New("user-id is missing")
	}
	if strings.IndexFunc(a.UserID, func(r rune) bool { return unicode.IsControl(r) }) >= 0 || len(a.UserID) > 256 {
		return errors.New("user-id must be at most 256 characters without control characters")
	}
	n := 0
	for _, f := range []string{a.KeyEnv, a.SHA256, a.Key} {
		if f != "" {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("user %q: want exactly one of key-env, sha256 and key", a.UserID)
	}
	switch {
	case a.KeyEnv != "" && !envNameRE.MatchString(a.KeyEnv):
		return fmt.Errorf("user %q: key-env must be the NAME of an environment variable ([A-Za-z_][A-Za-z0-9_]*), never the key itself", a.UserID)
	case a.SHA256 != "":
		if b, err := hex.DecodeString(a.SHA256); err != nil || len(b) != 32 {
			return fmt.Errorf("user %q: sha256 must be 64 hexadecimal characters (sha256sum of the key)", a.UserID)
		}
	case a.Key != "" && len(a.Key) < MinAPIKeyLength:
		return fmt.Errorf("user %q: key must be at least %d characters", a.UserID, MinAPIKeyLength)
	}
	return nil
}

// MinAPIKeyLength is the shortest API key accepted in plain text or from an
// environment variable.
const MinAPIKeyLength = server.MinKeyLength

// ResolveAPIKey returns the plain key of a key-env or key entry (reading
// the variable from the configuration's environment), or "" for a sha256
// entry. A missing, empty or short variable is an error naming it.
func (c *Config) ResolveAPIKey(a APIKeyConfig) (string, error) {
	switch a.Kind() {
	case "key":
		return a.Key, nil
	case "key-env":
		v, ok := c.LookupEnv(a.KeyEnv)
		v = strings.TrimSpace(v)
		if !ok || v == "" {
			return "", newError(keyServerAPIKeys, "", c.Source(keyServerAPIKeys),
				fmt.Sprintf("user %q: the environment variable %s holding the key is empty or unset", a.UserID, a.KeyEnv))
		}
		if len(v) < MinAPIKeyLength {
			return "", newError(keyServerAPIKeys, "", c.Source(keyServerAPIKeys),
				fmt.Sprintf("user %q: the key in %s must be at least %d characters", a.UserID, a.KeyEnv, MinAPIKeyLength))
		}
		return v, nil
	}
	return "", nil
}

// ServerOptions are the optional parts of OpenServer's wiring.
type ServerOptions struct {
	// Logger is the logger of the server (access log included), the
	// runtime and the catalogue (nil: slog.Default()).
	Logger *slog.Logger
	// Build are more options of BuildRuntime, e.g. WithSummarizer.
	Build []BuildOption
	// Catalog are more options of catalog.New, e.g. an embedder for
	// semantic search.
	Catalog []catalog.Option
	// Server are more options of server.New, e.g. server.WithReadiness.
	Server []server.Option

	// index replaces the catalogue's index (tests inspect it).
	index catalog.Index
}

// readinessName names the database check of GET /readyz in the log.
const readinessName = "postgres"

// OpenServer builds everything strata serve runs from cfg (nil: Default()):
// the runtime (BuildRuntime: manager and stores, PostgreSQL or in memory),
// a conversation catalogue over the manager whose titles and search
// documents follow every fold and delete (on PostgreSQL its index is
// db.NewCatalogIndex, with pgvector when the server has it and the schema
// is migrated on start), and the server (arc.reactor.memory.server.*),
// whose GET /readyz pings the database. The server owns all of it: its
// Serve, ListenAndServe or Close release it. On error everything opened is
// closed.
func OpenServer(ctx context.Context, cfg *Config, o ServerOptions) (*server.Server, error) {
	if cfg == nil {
		cfg = Default()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	scfg, err := serverConfig(cfg)
	if err != nil {
		return nil, err
	}
	// The catalogue reads through the manager, and the manager tells the
	// catalogue about folds and deletes: the observers are bound late.
	// The in-memory store's evictions drop catalogue documents, as deletes
	// do, so that the catalogue holds what the store holds. The store is
	// built before the catalogue; it evicts only on appends, which the
	// server's handlers make once the catalogue is set below (before any
	// handler goroutine starts), and Deleted of a nil catalogue does
	// nothing.
	var cat *catalog.Catalog
	evicted := func(o *buildOptions) {
		o.onEvict = func(sessionID, _ string) { cat.Deleted(context.Background(), sessionID) }
	}
	bopts := append([]BuildOption{WithLogger(o.Logger), evicted}, o.Build...)
	rt, err := BuildRuntime(ctx, cfg, bopts...)
	if err != nil {
		return nil, err
	}
	idx := o.index
	switch {
	case idx != nil:
	case rt.DB != nil:
		// pgvector when the server has it; the portable column otherwise.
		// It is DDL, so only where the schema is managed on start.
		if cfg.Datasource.MigrateOnStart {
			if err := db.EnableVectorSearch(ctx, rt.DB); err != nil {
				o.Logger.DebugContext(ctx, "strata serve: catalogue scores in process (no pgvector)", "reason", err)
			}
		}
		idx = db.NewCatalogIndex(rt.DB)
	default:
		idx = catalog.NewMemoryIndex()
	}
	cat, err = catalog.New(rt.Manager, idx, append([]catalog.Option{catalog.WithLogger(o.Logger)}, o.Catalog...)...)
	if err != nil {
		_ = rt.Close()
		return nil, err
	}
	sopts := []server.Option{server.WithLogger(o.Logger), server.WithOnClose(rt.Close)}
	if rt.DB != nil {
		sopts = append(sopts, server.WithReadiness(readinessName, rt.DB.PingContext))
	}
	srv, err := server.New(rt.Manager, cat, scfg, append(sopts, o.Server...)...)
	if err != nil {
		_ = cat.Close()
		_ = rt.Close()
		return nil, err
	}
	return srv, nil
}

// serverConfig is the server.Config of arc.reactor.memory.server.*:
// key-env entries are read from the configuration's environment (a missing
// variable is an error naming it), and at least one key is required. A
// context budget of 0 stays 0: the server then uses the manager's budget.
func serverConfig(cfg *Config) (server.Config, error) {
	sc := cfg.Server
	if len(sc.APIKeys) == 0 && len(sc.Config.APIKeys) == 0 && sc.KeysFile == "" {
		return server.Config{}, cfg.errorFor(keyServerAPIKeys, "strata serve needs at least one API key, e.g. USER=key-env:NAME, or "+keyServerAPIKeysFile)
	}
	out := sc.Config
	out.APIKeys = slices.Clone(sc.Config.APIKeys)
	for _, k := range sc.APIKeys {
		key, err := cfg.ResolveAPIKey(k)
		if err != nil {
			return server.Config{}, err
		}
		out.APIKeys = append(out.APIKeys, server.APIKey{UserID: k.UserID, Key: key, SHA256: k.SHA256, Plaintext: k.Kind() == "key", Service: k.Service})
	}
	return out, nil
}
