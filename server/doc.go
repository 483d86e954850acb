// Package server is Strata's HTTP API (strata serve): a small JSON API over
// the same manager, stores and configuration a Go application links, for
// backends in other languages.
//
// # Endpoints
//
// Every /v1 request needs Authorization: Bearer <key>. The OpenAPI document
// (served at GET /openapi.json, also OpenAPI()) describes every field.
//
//	POST   /v1/sessions                 201 {id, title, stored, total}       new session (random UUID), optional title and messages
//	POST   /v1/sessions/{id}/messages   200 {id, stored, total}              append {"turn": {user, assistant, model_variant}} or {"messages": […]}
//	GET    /v1/sessions/{id}/context    200 {messages, tokens, mode, …}      what the model should receive, trimmed to ?budget=N tokens
//	GET    /v1/sessions/{id}            200 {title, messages, summary, …}    full history for a UI, ?limit=&after_seq= pages
//	GET    /v1/sessions                 200 {sessions, total, …}             the caller's sessions, ?limit=&offset=
//	GET    /v1/sessions?search=q        200 {matches, best, ambiguous}       search by what conversations were about
//	DELETE /v1/sessions/{id}            204                                  cancel fold → delete messages → summary (idempotent)
//	GET    /healthz                     200                                  the process is up
//	GET    /readyz                      200 | 503                            the store answers
//	GET    /openapi.json                200                                  the API's OpenAPI 3.1 document
//
// Errors are {"error": "…", "code": "…", "request_id": "…"}: 400 for
// malformed JSON, unknown fields (named), trailing data and invalid messages;
// 401 with WWW-Authenticate: Bearer without a valid key; 404 "session not
// found" both for a session that does not exist and for another user's (the
// same body, so a session's existence is never revealed); 413 for a body over
// the limit or a message over store.max-message-bytes; 415 for a non-JSON
// Content-Type; 503 with Retry-After on timeouts and during shutdown.
//
// Messages are OpenAI-like: {role: user|assistant|system|tool, content,
// tool_calls?: [{id, type: "function", function: {name, arguments}}],
// tool_call_id?, name?, metadata?: {model_variant: …}}. The context
// endpoint returns the facts and summary system messages first, then the
// verbatim window, trimmed without separating a tool call from its results,
// so the list passes trimmer.Validate and can be sent to a provider as is.
//
// # Sessions, users and titles
//
// Each API key is bound to one user id, and every manager call is made as
// that user: the first writer of a session owns it. Clients with ids of
// their own (a chat UUID) append to /v1/sessions/{their-id}/messages
// directly; POST /v1/sessions is for clients that want the server to pick
// an id. A title given at creation is stored as metadata (MetadataTitle) of
// the session's first message, so it needs no schema of its own and
// survives restarts; a session created without messages is remembered by
// this process only (for 24 hours, 100 000 at most) until its first
// message. Without a given title, the title is the catalogue's, generated
// from the summary.
//
// Listing and search go through the conversation catalogue (package
// catalog; Open builds it over the runtime's stores, with db.NewCatalogIndex
// on PostgreSQL — using pgvector when the server has it and the schema is
// migrated on start), whose documents follow every fold and every delete. A search first indexes
// the caller's sessions that have no document yet or a stale one (bounded
// to a few seconds), so a short conversation that was never folded is found
// too. The default embedder is lexical and offline; give the catalogue a
// model embedder (WithCatalogOptions(catalog.WithEmbedder(…))) for semantic
// search.
//
// # Security and robustness
//
// Only SHA-256 digests of the API keys are kept in memory; a request's key is
// hashed and compared with every digest in constant time, without an early
// exit. Request bodies are limited (http.MaxBytesReader) and decoded strictly;
// the server has read, header, write and idle timeouts, and each request's
// context ends at the write timeout. Serve shuts down gracefully: it stops
// accepting connections, finishes in-flight requests, waits for background
// folds and catalogue refreshes, then closes the runtime, all within
// Config.ShutdownTimeout.
//
// Every request gets an id (X-Request-Id, taken from the client when
// reasonable), one access-log line (log/slog: method, route pattern, status,
// duration, bytes, request id, user id — never the key) and an OpenTelemetry
// server span from the global tracer provider, parented by an incoming
// traceparent when a propagator is installed; the manager's
// strata.memory.load/save/fold spans are its children. Panics become 500s
// with the request id.
//
// # Configuration
//
// Open builds a Server from autoconfig (arc.reactor.memory.server.*: listen,
// api-keys, max-body-bytes, the timeouts, context-budget; see
// config.example.yaml), with the catalogue wired to the manager's folds; New
// takes an existing runtime.
package server
