package autoconfig

import (
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/strata-go/strata/memory"
)

// memoryPrefix is Strata's section: arc-reactor's memory section, extended.
const memoryPrefix = "arc.reactor.memory"

// Keys referred to by code.
const (
	keyEnabled             = "arc.reactor.memory.summary.enabled"
	keyTrigger             = "arc.reactor.memory.summary.trigger-message-count"
	keyRecent              = "arc.reactor.memory.summary.recent-message-count"
	keyLLMModel            = "arc.reactor.memory.summary.llm-model"
	keyMaxNarrative        = "arc.reactor.memory.summary.max-narrative-tokens"
	keySummarizerProvider  = "arc.reactor.memory.summarizer.provider"
	keySummarizerModel     = "arc.reactor.memory.summarizer.model"
	keySummarizerBaseURL   = "arc.reactor.memory.summarizer.base-url"
	keySummarizerAPIKeyEnv = "arc.reactor.memory.summarizer.api-key-env"
	keySummarizerTimeout   = "arc.reactor.memory.summarizer.timeout"
	keySummarizerJSONMode  = "arc.reactor.memory.summarizer.json-mode"
	keySummarizerSchema    = "arc.reactor.memory.summarizer.json-schema"
	keySessionTokenBudget  = "arc.reactor.memory.summarizer.session-daily-token-budget"
	keyDatasourceURL       = "arc.reactor.memory.datasource.url"
	keyMigrateOnStart      = "arc.reactor.memory.datasource.migrate-on-start"
	keyPreparedStatements  = "arc.reactor.memory.datasource.prepared-statements"
	keyMaxMessageBytes     = "arc.reactor.memory.store.max-message-bytes"
	keyMaxSummaries        = "arc.reactor.memory.store.max-summaries"
	keyMaxSessions         = "arc.reactor.memory.store.max-sessions"
	keyMaxSessionsPerUser  = "arc.reactor.memory.store.max-sessions-per-user"
	keySharedPrefixes      = "arc.reactor.memory.shared-session-prefixes"
	keySharedViewers       = "arc.reactor.memory.shared-session-viewers"
	keyTokenEncoding       = "arc.reactor.memory.token-encoding"
	keyFailureCooldown     = "arc.reactor.memory.store.failure-cooldown"
	keyMaxFailureCooldown  = "arc.reactor.memory.store.max-failure-cooldown"
	keyMaxFacts            = "arc.reactor.memory.store.max-facts"
	keyMaxFactValueLen     = "arc.reactor.memory.store.max-fact-value-length"
	keyMaxFactsPerFamily   = "arc.reactor.memory.store.max-facts-per-family"
	keyFactsTokenBudget    = "arc.reactor.memory.store.facts-token-budget"
	keyPinnedFactKeys      = "arc.reactor.memory.store.pinned-fact-keys"
	keyShowPrevious        = "arc.reactor.memory.store.show-previous-values"
	keyPolicy              = "arc.reactor.memory.policy.name"
	keyBuffer              = "arc.reactor.memory.policy.buffer-message-count"
	keyFoldTokenThreshold  = "arc.reactor.memory.policy.fold-token-threshold"
	keyFoldTokenFraction   = "arc.reactor.memory.policy.fold-token-fraction"
	keySafetyTurns         = "arc.reactor.memory.policy.safety-turns"
	keyFoldMode            = "arc.reactor.memory.policy.fold-mode"
	keyMaxFoldInput        = "arc.reactor.memory.policy.max-fold-input-tokens"
	keyPromptBudget        = "arc.reactor.memory.policy.prompt-memory-budget"
	keyMinTail             = "arc.reactor.memory.policy.min-tail-messages"
	keyLoadGrace           = "arc.reactor.memory.fold.load-grace"
	keyFoldWait            = "arc.reactor.memory.fold.wait"
	keyFoldLockTTL         = "arc.reactor.memory.fold.lock-ttl"
	keySupersedeDelay      = "arc.reactor.memory.fold.supersede-delay"
	keyMaxConcurrentFolds  = "arc.reactor.memory.fold.max-concurrent"
	keyCloseTimeout        = "arc.reactor.memory.fold.close-timeout"
	keyMaxTurns            = "arc.reactor.llm.max-conversation-turns"
	keyWindow              = "arc.reactor.llm.max-context-window-tokens"
	keyMaxOutput           = "arc.reactor.llm.max-output-tokens"
	keyDefaultProvider     = "arc.reactor.llm.default-provider"
	keySpringURL           = "spring.datasource.url"
	keySpringUser          = "spring.datasource.username"
	keySpringPassword      = "spring.datasource.password"
)

// KeyInfo describes one configuration key.
type KeyInfo struct {
	// Key is the property name, e.g.
	// "arc.reactor.memory.summary.trigger-message-count".
	Key string
	// Env is the environment variable that sets it, e.g.
	// "ARC_REACTOR_MEMORY_SUMMARY_TRIGGER_MESSAGE_COUNT".
	Env string
	// Type is "bool", "int", "float", "duration", "string" or "list"
	// (server.api-keys).
	Type string
	// Default is the default value in YAML syntax.
	Default string
	// Doc is a one-line description with the allowed range.
	Doc string
	// Reference is true for arc-reactor's own properties.
	Reference bool
}

// Keys lists every configuration key Strata reads, in documentation order.
func Keys() []KeyInfo {
	def := Default()
	out := make([]KeyInfo, len(keyTable))
	for i, k := range keyTable {
		out[i] = KeyInfo{Key: k.name, Env: envName(k.name), Type: k.kind(), Default: k.format(def), Doc: k.doc, Reference: k.reference}
	}
	return out
}

// keySpec is one entry of the key table: a key, its description and the
// field of a Config it sets. koanf's Unmarshal binds the values (see
// bind.go); what a key accepts follows from its field's type.
type keySpec struct {
	name      string
	doc       string
	reference bool
	secret    bool
	// keepBlank keeps the blank entries of a list for validation to refuse
	// (other lists drop them).
	keepBlank bool
	// typ is the type of the field: bool, int, int64, float64, time.Duration, a
	// string type, []string or []APIKeyConfig.
	typ reflect.Type
	// field returns a pointer to the field of c the key sets.
	field func(c *Config) any
}

// key is the key name, described by doc, that sets the field of a Config
// that field returns.
func key[T any](name, doc string, field func(*Config) *T) keySpec {
	return keySpec{name: name, doc: doc, typ: reflect.TypeFor[T](),
		field: func(c *Config) any { return field(c) }}
}

// kind is the key's type as KeyInfo.Type says it.
func (k *keySpec) kind() string {
	switch {
	case k.typ == durationType:
		return "duration"
	case k.typ.Kind() == reflect.Slice:
		return "list"
	case k.typ.Kind() == reflect.Float64:
		return "float"
	case k.typ.Kind() == reflect.Int64:
		return "int"
	}
	return k.typ.Kind().String() // bool, int, string
}

// format renders the key's value in c as YAML scalar (or flow list)
// syntax.
func (k *keySpec) format(c *Config) string {
	switch v := k.field(c).(type) {
	case *bool:
		return strconv.FormatBool(*v)
	case *int:
		return strconv.Itoa(*v)
	case *int64:
		return strconv.FormatInt(*v, 10)
	case *float64:
		return strconv.FormatFloat(*v, 'g', -1, 64)
	case *time.Duration:
		return formatDuration(*v)
	case *[]string:
		q := make([]string, len(*v))
		for i, e := range *v {
			q[i] = strconv.Quote(e)
		}
		return "[" + strings.Join(q, ", ") + "]"
	case *[]APIKeyConfig:
		return formatAPIKeys(*v)
	}
	return strconv.Quote(reflect.ValueOf(k.field(c)).Elem().String()) // a string type
}

func ref(k keySpec) keySpec    { k.reference = true; return k }
func secret(k keySpec) keySpec { k.secret = true; return k }

// keepBlank makes a list key keep its blank entries, so that validation
// refuses them rather than they mean nothing (a value blank as a whole is
// still the empty list, and a trailing comma adds no entry).
func keepBlank(k keySpec) keySpec { k.keepBlank = true; return k }

// keyTable is the list of every key, in documentation order.
var keyTable = []keySpec{
	// arc-reactor's memory.summary properties.
	ref(key(keyEnabled,
		"Turn hierarchical memory on: facts + narrative + a verbatim window once a session passes the trigger. Off: the last 2 × max-conversation-turns messages (takeLast).",
		func(c *Config) *bool { return &c.Memory.Enabled })),
	ref(key(keyTrigger,
		"Hierarchical mode applies only when a session stores strictly more messages than this. It may be below recent-message-count: the session is then shown in full until a message precedes the verbatim window. Must be >= 0 (0 = every non-empty session).",
		func(c *Config) *int { return &c.Memory.TriggerMessageCount })),
	ref(key(keyRecent,
		"Number of newest messages kept verbatim in hierarchical mode. Must be >= 0 (0, as arc-reactor allows: no verbatim window, only facts and narrative once past the trigger).",
		func(c *Config) *int { return &c.Memory.RecentMessageCount })),
	ref(key(keyLLMModel,
		"arc-reactor's summarization model. Set (and summarizer.provider not set), it selects the summarizer: a Gemini model (gemini-2.0-flash) the Gemini summarizer with that model, an OpenAI model (gpt-4o-mini) the OpenAI one, a provider name (gemini, openai, extractive) that provider with its default model. Not set, the summarizer stays extractive and this is only the Gemini model used when summarizer.provider is gemini without summarizer.model.",
		func(c *Config) *string { return &c.Summary.LLMModel })),
	ref(key(keyMaxNarrative,
		"Narrative length, in tokens, that LLM summarizers are asked for, and the cap of every stored narrative (cut at a sentence boundary). Must be >= 1.",
		func(c *Config) *int { return &c.Summary.MaxNarrativeTokens })),

	// Strata: summarizer.
	key(keySummarizerProvider,
		"Summarizer: extractive (offline, deterministic, no LLM; built in), gemini (Gemini API with a response schema) or openai (OpenAI or any OpenAI-compatible server); gemini and openai need their packages imported (github.com/strata-go/strata/providers/...), as the strata command does.",
		func(c *Config) *string { return &c.Summarizer.Provider }),
	key(keySummarizerModel,
		"Model name; empty = the provider's default model (its package's DefaultModel). For Ollama, vLLM or llama.cpp, the model the server serves.",
		func(c *Config) *string { return &c.Summarizer.Model }),
	key(keySummarizerBaseURL,
		"Server URL; empty = the provider's public API. For OpenAI-compatible servers e.g. http://localhost:11434/v1 (Ollama), http://localhost:8000/v1 (vLLM).",
		func(c *Config) *string { return &c.Summarizer.BaseURL }),
	key(keySummarizerAPIKeyEnv,
		"Name of the environment variable holding the API key (never the key itself); empty = GOOGLE_API_KEY (then GEMINI_API_KEY) for gemini, OPENAI_API_KEY for openai. Not needed for a local OpenAI-compatible server.",
		func(c *Config) *string { return &c.Summarizer.APIKeyEnv }),
	key(keySummarizerTimeout,
		"Time limit of one summarization call (e.g. 60s, 2m; a bare number is milliseconds), enforced by the provider's client and by the manager (memory.Config.SummarizeTimeout), which stops waiting even for a summarizer that ignores its context and releases the session's fold lock. A timeout is a failed fold, never an empty summary. Must be > 0.",
		func(c *Config) *time.Duration { return &c.Summarizer.Timeout }),
	key(keySummarizerJSONMode,
		"openai: ask for a JSON object (response_format json_object). Turn off for servers that reject it; the reply parser is tolerant either way.",
		func(c *Config) *bool { return &c.Summarizer.JSONMode }),
	key(keySummarizerSchema,
		"openai: send a strict JSON schema (response_format json_schema) for narrative + facts; for OpenAI and servers that support structured outputs.",
		func(c *Config) *bool { return &c.Summarizer.JSONSchema }),
	key(keySessionTokenBudget,
		"Summarizer tokens (input + output, as the provider reports them or estimated) one session may spend per day (UTC); past it the session folds with the offline extractive summarizer until the day ends, and its fold journal and the metrics say so. Counted from the session's journal, so replicas share it. Must be >= 0 (0 = no budget).",
		func(c *Config) *int { return &c.Memory.SessionDailyTokenBudget }),

	// Strata: datasource.
	secret(key(keyDatasourceURL,
		"PostgreSQL URL (postgres://user:pass@host:5432/db?sslmode=disable) or key=value string; wins over spring.datasource.url. Empty (and no spring.datasource.url) = in-memory stores.",
		func(c *Config) *string { return &c.Datasource.URL })),
	key(keyMigrateOnStart,
		"Apply Strata's schema migrations when the stores are built (idempotent; safe with several replicas). Migrations need a direct connection to PostgreSQL: behind a transaction-mode pooler (PgBouncer, Supabase's port 6543, a managed PgBouncer) set the pooled URL as the datasource with migrate-on-start: false, and run `strata migrate up` with the direct URL (--set arc.reactor.memory.datasource.url=postgres://…direct… or DATABASE_URL); through a pooler that refuses start-up parameters a migration is refused with that advice. The stores themselves work through such a pooler.",
		func(c *Config) *bool { return &c.Datasource.MigrateOnStart }),
	key(keyPreparedStatements,
		"Run the message store's load and append statements as named prepared statements, which spares the server parsing and planning them on every call. Only on a direct connection to PostgreSQL, a session-mode pooler, or PgBouncer 1.21+ with max_prepared_statements set: through a transaction-mode pooler without that support (PgBouncer 1.20 and earlier) a statement can reach a server connection it was not prepared on, or one where another client's statement has its name.",
		func(c *Config) *bool { return &c.Datasource.PreparedStatements }),

	// Strata: store limits.
	key(keyMaxMessageBytes,
		"Reject messages larger than this many bytes. Must be >= 0 (0 = no limit).",
		func(c *Config) *int { return &c.Memory.MaxMessageBytes }),
	key(keyMaxSummaries,
		"Accepted for compatibility; bounds nothing any more (a warning says so at start-up): with the in-memory store a session's summary lives in the session, within max-sessions and max-sessions-per-user. Must be >= 0.",
		func(c *Config) *int { return &c.Store.MaxSummaries }),
	key(keyMaxSessions,
		"Most sessions the in-memory message store keeps (used without a datasource); past it a new session evicts the least recently used session of the same user, with a log line, and never another user's: a user who holds none is refused (HTTP 507). The in-memory store is a development store: its sessions go when the process ends. arc-reactor keeps 1000. Must be >= 0 (0 = 10000).",
		func(c *Config) *int { return &c.Store.MaxSessions }),
	key(keyMaxSessionsPerUser,
		"Most sessions one user may keep in the in-memory message store; past it the user's least recently used session is evicted, so that no user fills the store for the others. Never above max-sessions. Must be >= 0 (0 = 1000).",
		func(c *Config) *int { return &c.Store.MaxSessionsPerUser }),
	key(keyFailureCooldown,
		"Pause after a failed summarization before the session is summarized again; doubles per consecutive failure. Must be >= 0.",
		func(c *Config) *time.Duration { return &c.Memory.FailureCooldown }),
	key(keyMaxFailureCooldown,
		"Upper bound of the doubling failure cool-down. Must be >= failure-cooldown.",
		func(c *Config) *time.Duration { return &c.Memory.MaxFailureCooldown }),
	key(keyMaxFacts,
		"Most facts a session's ledger keeps (oldest dropped first). Must be >= 0 (0 = the default).",
		func(c *Config) *int { return &c.Memory.MaxFacts }),
	key(keyMaxFactValueLen,
		"Longest fact value kept, in characters (longer values are cut). Must be >= 0 (0 = the default).",
		func(c *Config) *int { return &c.Memory.MaxFactValueLen }),
	key(keyMaxFactsPerFamily,
		"Most facts of one multi-valued kind (price, price_2, …) the ledger keeps, so that one kind of chatter cannot flush the rest. Must be >= 0 (0 = the default).",
		func(c *Config) *int { return &c.Memory.MaxFactsPerFamily }),
	key(keyFactsTokenBudget,
		"Cap of the facts block, in tokens; beyond it the least important facts are dropped (pinned and identity facts never). Must be >= 0 (0 = the default).",
		func(c *Config) *int { return &c.Memory.FactsTokenBudget }),
	key(keyPinnedFactKeys,
		"Fact keys never evicted nor removed by a summarizer: path.Match patterns over normalised keys, e.g. [order_id, case_*]. Default none.",
		func(c *Config) *[]string { return &c.Memory.PinnedFactKeys }),
	key(keyShowPrevious,
		"Render a superseded fact value on its fact's line, \"- phone: 555-2222 (previously 555-1111)\", counted in the facts token budget. Off by default: only current values are shown.",
		func(c *Config) *bool { return &c.Memory.ShowPreviousValues }),

	// Strata: shared sessions.
	keepBlank(key(keySharedPrefixes,
		"Session id prefixes (e.g. [slack-]) of sessions shared by all their participants: any user may read, append to and delete them by id, and listings and search show them to the users who wrote in them (and to shared-session-viewers). Off by default (every session belongs to the user who created it); arc-reactor shares slack- sessions implicitly.",
		func(c *Config) *[]string { return &c.Memory.SharedSessionPrefixes })),
	keepBlank(key(keySharedViewers,
		"User ids (e.g. administrators; keep it short) to whom listings and search show every shared session; every other user sees only the shared sessions they wrote in. Empty by default.",
		func(c *Config) *[]string { return &c.Memory.SharedSessionViewers })),

	// Strata: how tokens are counted.
	key(keyTokenEncoding,
		"How the prompt budget, the token triggers and the fact caps count tokens: empty for Strata's script-aware estimator, or a tiktoken encoding counted exactly and offline: cl100k_base (GPT-4, GPT-3.5) or o200k_base (GPT-4o, GPT-4.1, GPT-5, o-series).",
		func(c *Config) *string { return &c.TokenEncoding }),

	// Strata: folding policy.
	key(keyPolicy,
		"When to fold: parity (everything before the verbatim window after every save above the trigger, like arc-reactor) or chunked (the knobs below).",
		func(c *Config) *memory.Policy { return &c.Memory.Policy }),
	key(keyBuffer,
		"chunked: the verbatim window may grow from recent-message-count to recent + this before a fold. Must be >= 0.",
		func(c *Config) *int { return &c.Memory.BufferMessageCount }),
	key(keyFoldTokenThreshold,
		"chunked: fold when summary + unfolded messages exceed this many tokens. Must be >= 0 (0 = off).",
		func(c *Config) *int { return &c.Memory.FoldTokenThreshold }),
	key(keyFoldTokenFraction,
		"chunked: fold when summary + unfolded messages exceed this fraction of max-context-window-tokens. Between 0 and 1 (0 = off).",
		func(c *Config) *float64 { return &c.Memory.FoldTokenFraction }),
	key(keySafetyTurns,
		"chunked: fold once the unfolded messages (verbatim window included) hold this many user turns. Must be >= 0 (0 = off).",
		func(c *Config) *int { return &c.Memory.SafetyTurns }),
	key(keyFoldMode,
		"chunked: incremental (existing summary + new messages) or full (re-summarize from the original messages).",
		func(c *Config) *string { return &c.Memory.FoldMode }),
	key(keyMaxFoldInput,
		"Both policies: cap on one summarizer call's input tokens; larger ranges are folded in several calls, each continuing the summary (a parity fold still starts from the original messages). Must be >= 0 (0 = no cap).",
		func(c *Config) *int { return &c.Memory.MaxFoldInputTokens }),
	key(keyPromptBudget,
		"chunked: cap on the tokens of summary + verbatim window in the prompt (oldest verbatim turns dropped first, the narrative cut last). Must be >= 0 (0 = off).",
		func(c *Config) *int { return &c.Memory.PromptMemoryBudget }),
	key(keyMinTail,
		"chunked: verbatim messages always kept under prompt-memory-budget. Must be >= 0.",
		func(c *Config) *int { return &c.Memory.MinTailMessages }),

	// Strata: fold timing.
	key(keyLoadGrace,
		"How long a load waits for a stale summary to be regenerated; past it the load shows the stale summary plus every later message verbatim, and the fold finishes in the background. Must be >= 0.",
		func(c *Config) *time.Duration { return &c.Memory.LoadGrace }),
	key(keyFoldWait,
		"How long a load waits for a session's first summary before it degrades, and a fold for another replica's fold of the same session. Must be >= 0.",
		func(c *Config) *time.Duration { return &c.Memory.FoldWait }),
	key(keyFoldLockTTL,
		"Longest hold of a cross-replica fold lock before another replica may take it over. Must be > summarizer.timeout; when not set it is raised to 2 x summarizer.timeout + 30s if that is longer.",
		func(c *Config) *time.Duration { return &c.Memory.FoldLockTTL }),
	key(keySupersedeDelay,
		"How long a background fold waits before it runs again for the saves made while it ran, so that a burst of saves folds once; a waiting Flush, a load that finds that fold due, or more messages saved meanwhile than a fold queued for a slot waits for (see max-concurrent) ends the wait. Must be >= 0.",
		func(c *Config) *time.Duration { return &c.Memory.SupersedeDelay }),
	key(keyMaxConcurrentFolds,
		"Most background folds of one process running at once, across its sessions; a fold due meanwhile waits its turn and then covers every message saved while it waited. A fold a load found due never queues, nor one while Flush or Close waits, and a queued one starts once more than three times the verbatim window plus buffer (or three times the trigger's count, when larger) were saved meanwhile. Must be >= 0 (0 = half of GOMAXPROCS, at least 1); raise it for a summarizer that mostly waits on a remote model.",
		func(c *Config) *int { return &c.Memory.MaxConcurrentFolds }),
	key(keyCloseTimeout,
		"Longest wait for background folds when the manager closes; a summarizer still running then is abandoned and its result never saved. Must be >= 0.",
		func(c *Config) *time.Duration { return &c.Memory.CloseTimeout }),

	// Strata: strata serve (server.go).
	key(keyServerListen,
		"strata serve: TCP address to listen on (host:port; \":8080\" = every interface, as in a container).",
		func(c *Config) *string { return &c.Server.Addr }),
	key(keyServerAPIKeys, apiKeysDoc, func(c *Config) *[]APIKeyConfig { return &c.Server.APIKeys }),
	key(keyServerAPIKeysFile,
		"strata serve: a file of more API keys, one per line: USER-ID SHA256-HEX, or NAME SHA256-HEX service for a service key (# comments). Re-read when it changes (checked at most every 5s, on a request): keys are added and removed without a restart; a file that no longer parses keeps the keys loaded before, with a warning.",
		func(c *Config) *string { return &c.Server.KeysFile }),
	key(keyServerMaxBodyBytes,
		"strata serve: largest request body accepted, in bytes (larger: 413). Must be >= 1024.",
		func(c *Config) *int64 { return &c.Server.MaxBodyBytes }),
	key(keyServerReadHeaderTimeout,
		"strata serve: time limit for reading a request's headers. Must be > 0.",
		func(c *Config) *time.Duration { return &c.Server.ReadHeaderTimeout }),
	key(keyServerReadTimeout,
		"strata serve: time limit for reading a whole request, body included. Must be > 0.",
		func(c *Config) *time.Duration { return &c.Server.ReadTimeout }),
	key(keyServerWriteTimeout,
		"strata serve: time limit for handling a request and writing its response; keep it above summarizer.timeout (a context load may fold). Must be > 0.",
		func(c *Config) *time.Duration { return &c.Server.WriteTimeout }),
	key(keyServerIdleTimeout,
		"strata serve: idle keep-alive connections are closed after this. Must be > 0.",
		func(c *Config) *time.Duration { return &c.Server.IdleTimeout }),
	key(keyServerShutdownTimeout,
		"strata serve: on SIGINT/SIGTERM, time allowed to finish in-flight requests and then background folds. Must be > 0.",
		func(c *Config) *time.Duration { return &c.Server.ShutdownTimeout }),
	key(keyServerContextBudget,
		"strata serve: token budget of GET /v1/sessions/{id}/context when the request gives none. Must be >= 0 (0 = max-context-window-tokens - max-output-tokens).",
		func(c *Config) *int { return &c.Server.ContextBudget }),
	key(keyServerHistoryPageBytes,
		"strata serve: most bytes of JSON messages in one page of GET /v1/sessions/{id}, beside its count limit; next_after_seq gets the rest (a page holds at least one message). Must be >= 1024 (default 8388608, 8 MiB).",
		func(c *Config) *int64 { return &c.Server.MaxHistoryBytes }),

	// arc-reactor's llm properties.
	ref(key(keyMaxTurns,
		"takeLast window: 2 × this many messages. Must be >= 1.",
		func(c *Config) *int { return &c.Memory.MaxConversationTurns })),
	ref(key(keyWindow,
		"The model's context window in tokens. With max-output-tokens it is the one prompt budget: every prompt is fitted into window - output tokens, and policy.fold-token-fraction is a fraction of it. Must be > max-output-tokens.",
		func(c *Config) *int { return &c.Memory.ContextWindowTokens })),
	ref(key(keyMaxOutput,
		"Tokens of the context window kept free for the model's answer (the prompt budget's output reserve). Must be >= 0 and < max-context-window-tokens.",
		func(c *Config) *int { return &c.Memory.OutputReserveTokens })),
	ref(key(keyDefaultProvider,
		"arc-reactor's default LLM provider (gemini, openai, …). Set, with neither summarizer.provider nor summary.llm-model set, it selects that provider's summarizer, as arc-reactor does, when the provider can run here (compiled in, its API key in the environment); otherwise the extractive summarizer runs, and the start-up log and strata config say why.",
		func(c *Config) *string { return &c.LLM.DefaultProvider })),

	// Spring's datasource.
	ref(secret(key(keySpringURL,
		"arc-reactor's datasource switch: a JDBC (jdbc:postgresql://host:5432/db) or PostgreSQL URL; non-empty = PostgreSQL stores.",
		func(c *Config) *string { return &c.Spring.DatasourceURL }))),
	ref(key(keySpringUser,
		"User added to a spring.datasource.url that carries none.",
		func(c *Config) *string { return &c.Spring.DatasourceUsername })),
	ref(secret(key(keySpringPassword,
		"Password added to a spring.datasource.url that carries none (prefer ${ENV_VAR} placeholders).",
		func(c *Config) *string { return &c.Spring.DatasourcePassword }))),
}

// Lookup tables built from keyTable.
var (
	keyIndex  = map[string]*keySpec{} // exact key
	keyCanon  = map[string]*keySpec{} // relaxed (canonical) form
	keyEnv    = map[string]*keySpec{} // environment variable name
	sectionOK = map[string]bool{}     // canonical prefixes of known keys
)

func init() {
	for i := range keyTable {
		k := &keyTable[i]
		keyIndex[k.name] = k
		keyCanon[canonical(k.name)] = k
		keyEnv[envName(k.name)] = k
		keyEnv[springEnvName(k.name)] = k
		parts := strings.Split(canonical(k.name), ".")
		for j := 1; j < len(parts); j++ {
			sectionOK[strings.Join(parts[:j], ".")] = true
		}
	}
}

// envName is a key's environment variable: upper case, "." and "-" → "_".
func envName(key string) string {
	return strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))
}

// springEnvName is Spring Boot's canonical form: "." → "_", "-" removed.
func springEnvName(key string) string {
	return strings.ToUpper(strings.NewReplacer(".", "_", "-", "").Replace(key))
}

// canonical is the relaxed form of a key: lower case, "-" and "_" removed
// within each segment (Spring's relaxed binding).
func canonical(key string) string {
	return strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(strings.TrimSpace(key)))
}

// formatDuration renders a duration the way Go parses it back, without
// trailing zero units ("2s", "5m", "1m30s").
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
