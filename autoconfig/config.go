package autoconfig

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/server"
	"github.com/strata-go/strata/summary"
)

// Summarizer provider names (arc.reactor.memory.summarizer.provider).
// Only the extractive summarizer is built in; the others are registered by
// importing their packages (see summary.Register).
const (
	// ProviderExtractive is the offline, deterministic summarizer
	// (summary.NewExtractiveService); the default.
	ProviderExtractive = "extractive"
	// ProviderGemini is Google's Gemini API with a response schema, in
	// package github.com/strata-go/strata/providers/gemini.
	ProviderGemini = "gemini"
	// ProviderOpenAI is OpenAI or any OpenAI-compatible server (Ollama,
	// vLLM, llama.cpp, …) selected with summarizer.base-url, in package
	// github.com/strata-go/strata/providers/openai.
	ProviderOpenAI = "openai"
)

// DefaultLLMModel is arc.reactor.memory.summary.llm-model's default,
// arc-reactor's summarization model. It is the Gemini summarizer's model
// when summarizer.provider is gemini and summarizer.model is empty; it
// selects no provider by itself (the default summarizer stays the offline
// extractive one).
const DefaultLLMModel = "gemini-2.0-flash"

// Config is Strata's whole configuration. Start from Default or Load; the
// zero value is not usable.
type Config struct {
	// Memory is the manager's configuration, with memory.DefaultConfig's
	// defaults. Its fields are set from arc.reactor.memory.summary.*
	// (Enabled, TriggerMessageCount, RecentMessageCount),
	// arc.reactor.llm.max-conversation-turns,
	// arc.reactor.llm.max-context-window-tokens (ContextWindowTokens) and
	// max-output-tokens (OutputReserveTokens), which are the one prompt
	// budget, arc.reactor.memory.store.*, arc.reactor.memory.policy.* and
	// arc.reactor.memory.fold.*. Memory.Validate checks them; Validate
	// reports its errors under the keys.
	Memory memory.Config
	// Summary holds arc-reactor's other summary.* properties.
	Summary SummaryConfig
	// Summarizer chooses and configures the summarizer.
	Summarizer SummarizerConfig
	// LLM holds arc-reactor's arc.reactor.llm.* settings that are not in
	// Memory.
	LLM LLMConfig
	// Datasource is Strata's own datasource (arc.reactor.memory.datasource).
	Datasource DatasourceConfig
	// Spring is arc-reactor's datasource switch (spring.datasource.*).
	Spring SpringConfig
	// Store holds store limits that are not in Memory.
	Store StoreConfig
	// Server configures strata serve, the HTTP API
	// (arc.reactor.memory.server.*).
	Server ServerConfig
	// TokenEncoding chooses Memory.Estimator
	// (arc.reactor.memory.token-encoding): empty for Strata's script-aware
	// estimator, or trimmer.EncodingCL100kBase / EncodingO200kBase for an
	// exact, offline tiktoken count. Build refuses it beside an Estimator
	// set in code: the manager has one budget.
	TokenEncoding string

	// set records, for keys set by a file, the environment or an override,
	// where the value came from.
	set map[string]string
	// unused records the keys set by a file or an override that Strata
	// accepts without using them (see Unused), with their source.
	unused map[string]string
	// lookupEnv reads environment variables (API keys, placeholders);
	// nil means os.LookupEnv.
	lookupEnv func(string) (string, bool)
}

// LLMConfig holds arc-reactor's arc.reactor.llm.* settings other than
// those in memory.Config.
type LLMConfig struct {
	// DefaultProvider is arc-reactor's llm.default-provider, the provider
	// arc-reactor summarizes with when summary.llm-model is unset. When it
	// is set and neither summarizer.provider nor summary.llm-model is, it
	// selects the summarizer (see Config.SummarizerChoice).
	DefaultProvider string
}

// SummaryConfig holds arc.reactor.memory.summary.* settings other than
// those in memory.Config.
type SummaryConfig struct {
	// LLMModel is arc-reactor's llm-model, the summarization model
	// (default DefaultLLMModel). When it is set and summarizer.provider is
	// not, it selects the summarizer: a provider name (gemini, openai,
	// extractive; arc-reactor's code reads it so) selects that provider
	// with its default model, a Gemini model name (gemini-…) the Gemini
	// summarizer and an OpenAI one (gpt-…, o1…, o3…) the OpenAI
	// summarizer, with that model. A model name is also the model of its
	// provider when summarizer.model is empty (see EffectiveModel).
	LLMModel string
	// MaxNarrativeTokens is the narrative length asked of LLM summarizers
	// (default 500).
	MaxNarrativeTokens int
}

// SummarizerConfig configures the summarizer
// (arc.reactor.memory.summarizer.*).
type SummarizerConfig struct {
	// Provider names a registered summarizer provider: extractive
	// (default, built in), or gemini or openai once their packages are
	// imported (see summary.Register).
	Provider string
	// Model is the provider's model name; empty means the provider's
	// default model.
	Model string
	// BaseURL points the provider at another server: an OpenAI-compatible
	// one (http://localhost:11434/v1 for Ollama) or a Gemini endpoint.
	BaseURL string
	// APIKeyEnv names the environment variable holding the API key; empty
	// means the provider's default variable. The key itself never appears
	// in configuration files.
	APIKeyEnv string
	// Timeout bounds one summarization call (default 60s).
	Timeout time.Duration
	// JSONMode asks OpenAI-compatible servers for a JSON object
	// (response_format json_object; default true). Turn it off for servers
	// that reject it.
	JSONMode bool
	// JSONSchema sends a strict JSON schema (response_format json_schema)
	// to OpenAI-compatible servers that support it (default false).
	JSONSchema bool
}

// DatasourceConfig is arc.reactor.memory.datasource.*.
type DatasourceConfig struct {
	// URL is a PostgreSQL URL (postgres://…) or key=value connection string;
	// it wins over spring.datasource.url. Empty: in-memory stores unless
	// spring.datasource.url is set.
	URL string
	// MigrateOnStart applies the schema migrations when the stores are built
	// (default true).
	MigrateOnStart bool
	// PreparedStatements runs the message store's load and append
	// statements as named prepared statements (db.WithPreparedStatements;
	// default false): only on a direct connection, a session-mode pooler,
	// or PgBouncer 1.21+ with max_prepared_statements.
	PreparedStatements bool
}

// SpringConfig is arc-reactor's datasource switch (spring.datasource.*).
type SpringConfig struct {
	// DatasourceURL is spring.datasource.url: a JDBC URL
	// (jdbc:postgresql://host:5432/db) or a PostgreSQL URL.
	DatasourceURL string
	// DatasourceUsername and DatasourcePassword are added to a JDBC URL
	// that carries no credentials.
	DatasourceUsername string
	DatasourcePassword string
}

// StoreConfig holds store limits other than those in memory.Config.
type StoreConfig struct {
	// MaxSummaries is accepted (and validated) for compatibility and no
	// longer bounds anything: with the in-memory store, a session's
	// summary lives in the session (memstore.Store.Summaries), bounded by
	// MaxSessions and MaxSessionsPerUser, so no tenant evicts another's
	// summaries.
	MaxSummaries int
	// MaxSessions bounds the in-memory message store, a development store
	// used without a datasource: past it a new session evicts the least
	// recently used session of the same user, never another user's
	// (memstore.WithMaxSessions; 0 means its default, 10000).
	MaxSessions int
	// MaxSessionsPerUser bounds one user's sessions in the in-memory
	// message store (memstore.WithMaxSessionsPerUser; 0 means its default,
	// 1000).
	MaxSessionsPerUser int
}

// Default returns the default configuration: memory.DefaultConfig (the
// reference's defaults: summaries off, trigger 20, recent 10, 10 turns; a
// 128000-token window with a 4096-token output reserve), in-memory stores
// and the extractive summarizer.
func Default() *Config {
	return &Config{
		Memory: memory.DefaultConfig(),
		Summary: SummaryConfig{
			LLMModel:           DefaultLLMModel,
			MaxNarrativeTokens: summary.DefaultMaxNarrativeTokens,
		},
		Summarizer: SummarizerConfig{
			Provider: ProviderExtractive,
			Timeout:  summary.DefaultTimeout,
			JSONMode: true,
		},
		Datasource: DatasourceConfig{MigrateOnStart: true},
		Store:      StoreConfig{MaxSummaries: summary.DefaultMaxSummaries},
		Server:     defaultServerConfig(),
	}
}

// IsSet reports whether key was set by a file, the environment or an
// override (as opposed to keeping its default).
func (c *Config) IsSet(key string) bool {
	_, ok := c.set[key]
	return ok
}

// Source returns where key's value came from: a file name, an environment
// variable, "override", or "default".
func (c *Config) Source(key string) string {
	if s, ok := c.set[key]; ok {
		return s
	}
	return "default"
}

// SetKeys lists the keys set by a file, the environment or an override,
// in the order of Keys.
func (c *Config) SetKeys() []string {
	var out []string
	for _, k := range keyTable {
		if c.IsSet(k.name) {
			out = append(out, k.name)
		}
	}
	return out
}

// Value returns key's current value as text (YAML scalar syntax), and false
// when key is not a known key. Secrets are returned masked.
func (c *Config) Value(key string) (string, bool) {
	k, ok := keyIndex[key]
	if !ok {
		return "", false
	}
	v := k.format(c)
	if k.secret && v != `""` {
		v = `"*****"`
	}
	return v, true
}

// LookupEnv reads an environment variable from the environment the
// configuration was loaded with (LoadWithEnv), or from the process
// environment.
func (c *Config) LookupEnv(name string) (string, bool) {
	if c.lookupEnv != nil {
		return c.lookupEnv(name)
	}
	return os.LookupEnv(name)
}

// EffectiveProvider is the summarizer provider in use (see
// SummarizerChoice).
func (c *Config) EffectiveProvider() string {
	p, _ := c.SummarizerChoice()
	return p
}

// SummarizerChoice returns the summarizer provider in use and why, as one
// sentence naming the keys that decided and where they were set. In
// order: summarizer.provider when set; else summary.llm-model when set
// (the provider it names or whose model it names, see
// SummaryConfig.LLMModel); else arc-reactor's llm.default-provider when
// set and that provider can run here — it is compiled into the program
// and its API key is in the environment (or, for openai, summarizer.base-url
// names a server) — as arc-reactor summarizes with its default provider;
// else summarizer.provider's default, the offline extractive summarizer.
func (c *Config) SummarizerChoice() (provider, why string) {
	provider, why, _ = c.summarizerChoice()
	return provider, why
}

// summarizerChoice is SummarizerChoice, and whether arc-reactor's default
// provider was set but cannot run here (the start-up log warns).
func (c *Config) summarizerChoice() (provider, why string, fellBack bool) {
	p := summary.ProviderName(c.Summarizer.Provider)
	if c.IsSet(keySummarizerProvider) {
		return p, fmt.Sprintf("%s is %s (%s)", keySummarizerProvider, p, c.Source(keySummarizerProvider)), false
	}
	if c.IsSet(keyLLMModel) {
		if lp := llmModelProvider(c.Summary.LLMModel); lp != "" {
			return lp, fmt.Sprintf("%s is %s (%s)", keyLLMModel, strings.TrimSpace(c.Summary.LLMModel), c.Source(keyLLMModel)), false
		}
	}
	dp := summary.ProviderName(c.LLM.DefaultProvider)
	if !c.IsSet(keyDefaultProvider) || dp == "" {
		return p, fmt.Sprintf("the default (none of %s, %s or %s is set)", keySummarizerProvider, keyLLMModel, keyDefaultProvider), false
	}
	from := fmt.Sprintf("arc-reactor's %s is %s (%s)", keyDefaultProvider, dp, c.Source(keyDefaultProvider))
	if dp == p {
		return p, from, false
	}
	if !isProvider(dp) {
		return p, fmt.Sprintf("%s, which Strata has no summarizer for (it has %s): %s runs instead", from, joinNames(knownProviders()), p), true
	}
	if _, ok := summary.LookupProvider(dp); !ok {
		return p, fmt.Sprintf("%s, whose summarizer is not compiled into this program (import _ %q): %s runs instead", from, strataProviders[dp], p), true
	}
	vars := providerKeyEnvs[dp]
	if e := strings.TrimSpace(c.Summarizer.APIKeyEnv); e != "" {
		vars = []string{e}
	}
	for _, v := range vars {
		if val, ok := c.LookupEnv(v); ok && strings.TrimSpace(val) != "" {
			return dp, fmt.Sprintf("%s and $%s holds its API key, as arc-reactor summarizes with its default provider when %s is unset", from, v, keyLLMModel), false
		}
	}
	if dp == ProviderOpenAI && strings.TrimSpace(c.Summarizer.BaseURL) != "" {
		return dp, fmt.Sprintf("%s and %s names its server", from, keySummarizerBaseURL), false
	}
	if len(vars) == 0 {
		return dp, from, false
	}
	return p, fmt.Sprintf("%s, but no API key is set ($%s): the offline %s summarizer runs instead", from, strings.Join(vars, ", $"), p), true
}

// EffectiveModel is the summarizer's model: summarizer.model, else
// summary.llm-model when it is a model of the provider in use (its default,
// gemini-2.0-flash, for gemini), else "" (the provider's default model).
func (c *Config) EffectiveModel() string {
	if m := strings.TrimSpace(c.Summarizer.Model); m != "" {
		return m
	}
	lm := strings.TrimSpace(c.Summary.LLMModel)
	if isProvider(summary.ProviderName(lm)) {
		return ""
	}
	if p := llmModelProvider(lm); p != "" && p == c.EffectiveProvider() {
		return lm
	}
	return ""
}

// llmModelProvider is the provider that an llm-model value names: itself
// for a provider name, gemini for a Gemini model (gemini-…), openai for an
// OpenAI one (gpt-…, chatgpt-…, o1…, o3…, o4…), "" otherwise.
func llmModelProvider(v string) string {
	lm := summary.ProviderName(v)
	switch {
	case lm == "":
		return ""
	case isProvider(lm):
		return lm
	case strings.HasPrefix(lm, "gemini-"), strings.HasPrefix(lm, "models/gemini-"):
		return ProviderGemini
	case strings.HasPrefix(lm, "gpt-"), strings.HasPrefix(lm, "chatgpt-"),
		len(lm) >= 2 && lm[0] == 'o' && lm[1] >= '1' && lm[1] <= '9':
		return ProviderOpenAI
	}
	return ""
}

// DatabaseURL returns the PostgreSQL connection string in use, "" for
// in-memory stores: arc.reactor.memory.datasource.url when set, else
// spring.datasource.url translated from JDBC (jdbc:postgresql://… becomes
// postgres://…, with spring.datasource.username and password added when
// the URL carries no credentials, ssl=true becoming sslmode=require and
// currentSchema becoming search_path).
func (c *Config) DatabaseURL() (string, error) {
	if u := strings.TrimSpace(c.Datasource.URL); u != "" {
		if err := checkPostgresURL(u); err != nil {
			return "", newError(keyDatasourceURL, redact(u), c.Source(keyDatasourceURL), err.Error())
		}
		return u, nil
	}
	u := strings.TrimSpace(c.Spring.DatasourceURL)
	if u == "" {
		return "", nil
	}
	out, err := jdbcToPostgres(u, c.Spring.DatasourceUsername, c.Spring.DatasourcePassword)
	if err != nil {
		return "", newError(keySpringURL, redact(u), c.Source(keySpringURL), err.Error())
	}
	return out, nil
}

// Clone returns a deep copy of c.
func (c *Config) Clone() *Config {
	out := *c
	if c.Server.APIKeys != nil {
		out.Server.APIKeys = append([]APIKeyConfig(nil), c.Server.APIKeys...)
	}
	if c.Server.Config.APIKeys != nil {
		out.Server.Config.APIKeys = append([]server.APIKey(nil), c.Server.Config.APIKeys...)
	}
	if c.Memory.PinnedFactKeys != nil {
		out.Memory.PinnedFactKeys = append([]string(nil), c.Memory.PinnedFactKeys...)
	}
	if c.Memory.SharedSessionPrefixes != nil {
		out.Memory.SharedSessionPrefixes = append([]string(nil), c.Memory.SharedSessionPrefixes...)
	}
	if c.Memory.SharedSessionViewers != nil {
		out.Memory.SharedSessionViewers = append([]string(nil), c.Memory.SharedSessionViewers...)
	}
	if c.unused != nil {
		out.unused = make(map[string]string, len(c.unused))
		for k, v := range c.unused {
			out.unused[k] = v
		}
	}
	if c.set != nil {
		out.set = make(map[string]string, len(c.set))
		for k, v := range c.set {
			out.set[k] = v
		}
	}
	return &out
}

// checkPostgresURL accepts postgres:// and postgresql:// URLs and key=value
// connection strings.
func checkPostgresURL(u string) error {
	if !strings.Contains(u, "://") {
		if strings.HasPrefix(strings.ToLower(u), "jdbc:") {
			_, err := jdbcToPostgres(u, "", "")
			if err != nil {
				return err
			}
			return errors.New("a JDBC URL belongs in spring.datasource.url; use postgres://host:5432/db here")
		}
		if !strings.Contains(u, "=") {
			return errors.New("want a PostgreSQL URL (postgres://user:pass@host:5432/db) or a key=value connection string")
		}
		return nil
	}
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("cannot parse URL: %v", unwrapURLError(err))
	}
	switch strings.ToLower(p.Scheme) {
	case "postgres", "postgresql":
		return nil
	}
	return fmt.Errorf("scheme %q is not PostgreSQL (want postgres://…)", p.Scheme)
}

// jdbcToPostgres translates a JDBC PostgreSQL URL into a lib/pq URL, with
// the JDBC driver's behaviour (see jdbcParams). PostgreSQL URLs and
// key=value strings are returned unchanged.
func jdbcToPostgres(raw, user, pass string) (string, error) {
	lower := strings.ToLower(raw)
	if !strings.HasPrefix(lower, "jdbc:") {
		if err := checkPostgresURL(raw); err != nil {
			return "", err
		}
		return raw, nil
	}
	if !strings.HasPrefix(lower, "jdbc:postgresql:") {
		driver, _, _ := strings.Cut(raw[len("jdbc:"):], ":")
		return "", fmt.Errorf("the stores support PostgreSQL only, not %q (want jdbc:postgresql://… or postgres://…)", driver)
	}
	rest := raw[len("jdbc:postgresql:"):]
	if !strings.HasPrefix(rest, "//") { // jdbc:postgresql:database
		rest = "//localhost/" + rest
	}
	p, err := url.Parse("postgres:" + rest)
	if err != nil {
		return "", fmt.Errorf("cannot parse JDBC URL: %v", unwrapURLError(err))
	}
	if strings.Contains(p.Host, ",") {
		return "", errors.New("JDBC URLs with several hosts are not supported")
	}
	if p.Host == "" {
		p.Host = "localhost"
	}
	q, err := jdbcParams(p.Query(), &user, &pass)
	if err != nil {
		return "", err
	}
	if p.User == nil && user != "" {
		if pass != "" {
			p.User = url.UserPassword(user, pass)
		} else {
			p.User = url.User(user)
		}
	}
	p.RawQuery = q.Encode()
	return p.String(), nil
}

// jdbcParams translates the properties of a JDBC URL into lib/pq's
// parameters, as the JDBC driver reads them:
//
//   - sslmode is the JDBC driver's default, prefer (TLS when the server
//     offers it, else plain), unless the URL sets sslmode, or ssl
//     (ssl=true: require; ssl=false: disable). lib/pq's own default would
//     be require, which fails on a local server without TLS.
//   - user and password fill the credentials (spring.datasource.username
//     and password win); currentSchema becomes search_path,
//     ApplicationName application_name, connectTimeout (or loginTimeout),
//     in seconds, connect_timeout, targetServerType target_session_attrs.
//   - sslrootcert, sslcert, sslkey and options keep their names.
//   - Every other property configures the JDBC driver itself (prepareThreshold,
//     reWriteBatchedInserts, socketTimeout, tcpKeepAlive, …) and is dropped:
//     lib/pq would send it to the server as a setting, which refuses it.
func jdbcParams(in url.Values, user, pass *string) (url.Values, error) {
	get := func(name string) string {
		for k, v := range in {
			if strings.EqualFold(k, name) && len(v) > 0 {
				return v[len(v)-1]
			}
		}
		return ""
	}
	out := url.Values{}
	if v := get("user"); v != "" && *user == "" {
		*user = v
	}
	if v := get("password"); v != "" && *pass == "" {
		*pass = v
	}
	switch mode, ssl := strings.ToLower(get("sslmode")), get("ssl"); {
	case mode != "":
		switch mode {
		case "disable", "allow", "prefer", "require", "verify-ca", "verify-full":
		default:
			return nil, fmt.Errorf("sslmode %q is not one of disable, allow, prefer, require, verify-ca, verify-full", mode)
		}
		out.Set("sslmode", mode)
	case strings.EqualFold(ssl, "true"):
		out.Set("sslmode", "require")
	case ssl != "":
		out.Set("sslmode", "disable")
	default:
		out.Set("sslmode", "prefer")
	}
	if v := get("currentSchema"); v != "" {
		out.Set("search_path", v)
	}
	if v := get("ApplicationName"); v != "" {
		out.Set("application_name", v)
	}
	timeout := get("connectTimeout")
	if timeout == "" {
		timeout = get("loginTimeout")
	}
	if timeout != "" && timeout != "0" {
		out.Set("connect_timeout", timeout)
	}
	if v := get("targetServerType"); v != "" {
		attrs := map[string]string{"any": "any", "primary": "primary", "master": "primary",
			"secondary": "standby", "slave": "standby", "standby": "standby",
			"prefersecondary": "prefer-standby", "preferslave": "prefer-standby", "preferstandby": "prefer-standby"}
		a, ok := attrs[strings.ToLower(v)]
		if !ok {
			return nil, fmt.Errorf("targetServerType %q is not one of any, primary, secondary, preferSecondary", v)
		}
		out.Set("target_session_attrs", a)
	}
	for _, k := range []string{"sslrootcert", "sslcert", "sslkey", "options"} {
		if v := get(k); v != "" {
			out.Set(k, v)
		}
	}
	return out, nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
