// Package server is Strata's HTTP API (strata serve): a small JSON API over
// a conversation manager (package memory) and, optionally, a conversation
// catalogue (package catalog), for backends in other languages.
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
//	DELETE /v1/sessions/{id}            204                                  cancel fold → delete messages → summary
//	DELETE /v1/sessions/{id}/messages/{seq}, …/messages?seq=…, …/facts/{key}  204   erase messages, or a fact, and what came of them
//	GET    /v1/sessions/{id}/export     200 snapshot (streamed)              the whole session, portable
//	GET    /v1/sessions/{id}/inspect    200 HTML page                        messages, a turn's prompt, folds, costs, fact histories (?turn=N)
//	POST   /v1/sessions/import          201 {id, stored}                     create a session from a snapshot (8 × the body limit)
//	GET    /healthz                     200                                  the process is up
//	GET    /readyz                      200 | 503                            every readiness check passes
//	GET    /openapi.json                200                                  the API's OpenAPI 3.1 document
//
// Errors are {"error": "…", "code": "…", "request_id": "…"}: 400 for
// malformed JSON, unknown fields (named), trailing data and invalid messages;
// 401 with WWW-Authenticate: Bearer without a valid key; 404 "session not
// found" for a session that does not exist (never created, or deleted) and
// for another user's, on every endpoint and method, with the same body, so
// that a session's existence is never revealed; 413 for a body over the
// limit or a message over the manager's MaxMessageBytes; 415 for a non-JSON
// Content-Type; 503 with Retry-After when the store is unreachable
// (store.ErrUnavailable, which includes an erasure waiting in vain for
// another replica's fold of the session), on timeouts and during shutdown —
// an outage is never a 500. A path with an empty, "." or ".." segment
// (percent-encoded or not) answers 400 before routing: ServeMux's redirect
// to the cleaned path is never sent, so no DELETE is ever redirected.
//
// Responses are bounded: a history page holds at most
// Config.MaxHistoryBytes of JSON, summary included (a summary over half
// of it is left out, summary_omitted); an export is streamed from the
// store in chunks (memory.Manager.WriteExport), whatever the session's
// size. The user ids "anonymous" and "shared", the owners the stores
// record for sessions saved without a user id and for shared sessions,
// cannot be given to a key.
//
// Messages are OpenAI-like: {role: user|assistant|system|tool, content,
// tool_calls?: [{id, type: "function", function: {name, arguments}}],
// tool_call_id?, name?, metadata?: {model_variant: …}}. A tool result is
// accepted only when its call precedes it in the request or is stored in
// the session (400 otherwise). The context endpoint returns the manager's
// assembled history (facts and summary system messages first, then the
// verbatim window) fitted to the budget exactly as the manager fits an
// agent's prompt (memory.Manager.Prompt, priced by the manager's
// estimator; a budget larger than the manager's is lowered to it). The
// last user message always stays. Older messages between the facts and
// summary messages and that message go first, oldest first; then the facts
// and summary messages, one at a time, but only to keep the tool rounds
// that follow the last user message; then those rounds (and a trailing
// answer), oldest first. What is left and still too large is cut to fit,
// each cut content ending with "…[truncated]". A context is never larger
// than its budget, and is empty with over_budget only when not even the
// last user message cut fits. Tool calls are never separated from their
// results, so the list passes trimmer.Validate and can be sent to a
// provider as is.
//
// # Sessions, users and titles
//
// Each user key is bound to one user id, and every manager call is made as
// that user. A service key (APIKey.Service), for a backend that
// authenticates its own users, acts for the user each request names in
// X-Strata-User (UserHeader), with exactly the checks of that user's own
// key; a missing, empty, repeated or odd user id (whitespace, control
// characters, over 256 bytes, or the reserved anonymous and shared) is a
// 400, and a user key sending the header is a 403 with one body whatever it
// names. Keys of Config.KeysFile are added and removed without a restart:
// the file is re-read, when its content changed, at most every
// Config.KeysFileInterval. The manager is the only door to session data: the server
// holds no store of its own. POST /v1/sessions creates the session in the
// store (memory.Manager.Create) with a random id, owned by the caller and
// visible at once to every server sharing the store, even while empty;
// appending to an id that was never created answers 404 and creates
// nothing. A title given at creation is kept by the catalogue, which also
// generates titles from summaries; without a catalogue there are no titles.
//
// Listing and search go through the catalogue when the server has one
// (search answers 501 without); a shared session is listed and found for
// the users who wrote in it and the configured viewers only; its documents follow every fold and every
// delete when its observers are registered with the manager. A search
// first indexes the caller's sessions that have no document yet or a stale
// one (bounded to a few seconds), so a short conversation that was never
// folded is found too.
//
// # Security and robustness
//
// Only SHA-256 digests of the API keys are kept in memory; a request's key is
// hashed and compared with every digest in constant time, without an early
// exit. Request bodies are limited (http.MaxBytesReader) and decoded strictly;
// the server has read, header, write and idle timeouts, and each request's
// context ends at the write timeout. GET /readyz runs the checks given with
// WithReadiness concurrently, each with a deadline, and answers within two
// seconds even when a check hangs. Serve shuts down gracefully: it stops
// accepting connections, finishes in-flight requests, waits for background
// folds and catalogue refreshes, then closes the manager, the catalogue and
// whatever WithOnClose names, all within Config.ShutdownTimeout.
//
// Every request gets an id (X-Request-Id, taken from the client when
// reasonable), one access-log line (log/slog at debug level, error for a
// 5xx answer: method, route pattern, status, duration, bytes, request id,
// user id — never the key) and an OpenTelemetry
// server span from the global tracer provider, parented by an incoming
// traceparent when a propagator is installed; the manager's
// strata.memory.load/save/fold spans are its children. Panics become 500s
// with the request id.
//
// # Wiring
//
// New takes a manager, an optional catalogue and a Config; package
// autoconfig builds all three from Strata's configuration
// (autoconfig.OpenServer: arc.reactor.memory.server.*, the stores, the
// catalogue wired to the manager's folds and deletes, and a readiness
// check pinging the database). This package depends on neither autoconfig
// nor a database driver.
package server
