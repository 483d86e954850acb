// Package autoconfig turns configuration — YAML files and environment
// variables — into a ready Strata memory manager, so that an application
// enables and tunes hierarchical memory with configuration, not code.
//
// # Loading
//
// Load reads, in increasing order of precedence: the defaults (Default), each
// YAML file given, and the environment. Keys are arc-reactor's property names
// under the arc.reactor root, so the memory section of an existing arc-reactor
// (Spring) application.yaml works unchanged:
//
//	arc:
//	  reactor:
//	    memory:
//	      summary:
//	        enabled: true
//	        trigger-message-count: 20
//	        recent-message-count: 10
//	    llm:
//	      max-conversation-turns: 10
//	spring:
//	  datasource:
//	    url: jdbc:postgresql://localhost:5432/app
//
// Strata's own keys live under arc.reactor.memory as well (summarizer,
// datasource, store, policy, and server for strata serve); Keys lists them
// all and config.example.yaml at the root of the module shows every key with
// its default and meaning.
//
// List-valued keys are YAML lists; in the environment and in overrides the
// plain ones (shared-session-prefixes, store.pinned-fact-keys) are
// comma-separated (slack-,team-) or written as a YAML list ([slack-, team-]);
// any other value starting with "[" is an error, never a bracketed entry. The structured one, arc.reactor.memory.server.api-keys,
// binds API keys to user ids without putting secrets in the file:
//
//	arc.reactor.memory.server.api-keys:
//	  - {user-id: web-backend, key-env: STRATA_KEY_WEB}   # key read from $STRATA_KEY_WEB
//	  - {user-id: voice-app, sha256: 9f86d08…}           # sha256sum of the key
//
// In the environment (ARC_REACTOR_MEMORY_SERVER_API_KEYS) and in overrides
// it is a JSON list or the compact form
// "web-backend=key-env:STRATA_KEY_WEB,voice-app=sha256:9f86d08…".
//
// Every key has an environment variable: the key upper-cased with "." and "-"
// replaced by "_" (ARC_REACTOR_MEMORY_SUMMARY_TRIGGER_MESSAGE_COUNT,
// SPRING_DATASOURCE_URL). Spring's own form, with the dashes removed
// (ARC_REACTOR_MEMORY_SUMMARY_TRIGGERMESSAGECOUNT), is accepted too. The
// variables are looked up in a table built from the key list, so kebab-case
// keys map correctly.
//
// In YAML, keys are matched the way Spring's relaxed binding matches them:
// case-insensitively and ignoring "-" and "_" (trigger-message-count,
// triggerMessageCount and trigger_message_count are the same key). Under
// arc.reactor every key must be Strata's or one arc-reactor itself defines
// (its properties, listed in arcreactor_keys.txt): any other is an error
// naming it, with the closest known key as a suggestion, so typos never
// pass silently. Outside arc.reactor (server, spring.ai, logging, …) keys
// are accepted, except a misspelling of arc.reactor itself (arc.reacter)
// or of a spring.datasource key Strata reads. arc-reactor's keys and the
// other tools' keys that Strata does not use are listed by Config.Unused
// and, in one line at info level, by Build. YAML files, the environment
// and overrides (the strata command's --set) accept the same keys. Once a
// source's keys are resolved, koanf's Unmarshal binds their values, with
// decode hooks that accept what Spring accepts: numbers written as strings,
// yes/no/on/off, durations as Go durations or bare milliseconds, lists as
// comma-separated strings.
//
// # Coming from arc-reactor
//
// Every value arc-reactor accepts for the keys Strata shares with it is
// accepted, a trigger-message-count below recent-message-count included.
// summary.llm-model is the summarization model, as arc-reactor documents
// it (default gemini-2.0-flash): set, a Gemini or OpenAI model name
// selects that summarizer with that model, a provider name that provider
// (see SummaryConfig.LLMModel). A JDBC spring.datasource.url is translated
// as the JDBC driver reads it, and a postgres:// URL without sslmode
// connects as psql does (both sslmode=prefer; JDBC-only properties
// dropped), and a
// connection that fails because of TLS says which sslmode fixes it
// (OpenDatabase, TLSHint). Sessions are private to the user who created
// them; arc-reactor's implicitly shared slack- threads are declared with
// shared-session-prefixes (memory.Config.SharedSessionPrefixes). Without a datasource
// the stores are in memory, a development store bounded by
// store.max-sessions.
// String values may use Spring placeholders, ${NAME} or ${NAME:default},
// resolved from the environment.
//
// The configuration is validated as it is loaded (Config.Validate); every
// error names the key, the value, where the value came from and the allowed
// range.
//
// # Building
//
// Build returns a memory.Manager wired as the configuration says: with
// summaries off, a takeLast-only manager; with summaries on, a summary store
// and a summarizer. A datasource URL switches both stores to PostgreSQL and,
// unless datasource.migrate-on-start is false, applies the schema migrations
// first. BuildRuntime does the same and also returns the database pool and
// a Close that releases everything; session data is reached through the
// manager only.
//
// The manager's token budget is configured once: max-context-window-tokens
// and max-output-tokens are memory.Config's ContextWindowTokens and
// OutputReserveTokens, which memory.Manager.Prompt and the folding policy
// share. Every default not specific to this package is memory's
// (memory.DefaultConfig) or summary's, and memory.Config.Validate checks the
// memory settings; its field errors are reported under the keys.
//
// # Summarizer providers
//
// Summarizers are registered the way database/sql drivers are: the offline
// extractive summarizer is built in, and a provider package registers
// itself (summary.Register) when a program imports it:
//
//	import _ "github.com/strata-go/strata/providers/gemini" // Gemini, with a response schema
//	import _ "github.com/strata-go/strata/providers/openai" // OpenAI and OpenAI-compatible servers
//
// so that only programs that use a provider link its SDK. Selecting a
// provider that is not imported is a configuration error naming the import
// to add. Logging is off unless WithLogger gives a logger.
package autoconfig
