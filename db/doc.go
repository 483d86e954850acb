// Package db stores Strata's conversation memory in PostgreSQL, so that
// several replicas of a service can share it.
//
// # Use
//
//	d, err := db.Open(ctx, os.Getenv("DATABASE_URL")) // pings, sets pool limits
//	if err != nil { … }
//	if err := db.Migrate(ctx, d); err != nil { … }    // idempotent
//	mgr, err := memory.NewManager(db.NewMessageStore(d), cfg,
//		memory.WithSummaries(db.NewSummaryStore(d), svc))
//
// The stores never close d. The schema is created by golang-migrate from
// SQL files embedded in the binary (db/migrations), recorded in the
// migrations table strata_schema_migrations (MigrationsTable), so it never
// clashes with the host application's own schema_migrations. Tables go to
// the connection's current schema (the first entry of search_path); set
// search_path in the connection string to keep them in a schema of their
// own. MigrateDown, MigrationVersion and MigrateForce serve the command-line
// tool.
//
// # Schema (version 2)
//
// Migration 000002 adds the conversation catalogue's table,
// strata_session_index (one search document per session: title, the exact
// text that was embedded, the embedding as REAL[], the embedder's model and
// dimension, cascading from strata_sessions); its columns are listed in
// catalog.go. EnableVectorSearch is an optional step after Migrate that adds
// a pgvector column when the server has the extension; without it the
// catalogue scores in process. Everything below is version 1.
//
// # Schema (version 1)
//
// strata_sessions — one row per session, the owner row:
//
//	session_id          TEXT PRIMARY KEY
//	user_id             TEXT NOT NULL          the owner: the first writer
//	message_count       BIGINT NOT NULL        kept by every append, so Tail's
//	                                           Total costs nothing
//	first_user_message  TEXT NULL              first 500 characters, for listings
//	created_at          TIMESTAMPTZ NOT NULL
//	last_activity       TIMESTAMPTZ NOT NULL   time of the latest append
//	index (user_id, last_activity DESC, session_id)   "sessions of a user"
//
// strata_messages — the append-only message log:
//
//	seq           BIGSERIAL              from one global sequence (see below)
//	session_id    TEXT NOT NULL          → strata_sessions ON DELETE CASCADE
//	role          TEXT NOT NULL          user | assistant | system | tool
//	content       TEXT NOT NULL
//	tool_calls    JSONB NULL             [{"id","type","function":{"name","arguments"}}]
//	tool_call_id  TEXT NOT NULL          the call a tool message answers, or ''
//	name          TEXT NOT NULL          tool name / generic role, or ''
//	metadata      JSONB NULL             {"model_variant": …, …}
//	user_id       TEXT NOT NULL          the writer (always the owner)
//	created_at    TIMESTAMPTZ NOT NULL   transaction time of the append
//	PRIMARY KEY (session_id, seq)        "last N of a session" (backward scan)
//	                                     and "messages after seq" (range scan)
//
// The primary key is the table's only index. A single-column index on seq
// is deliberately absent: given one, the planner may answer "the newest 20
// messages of a small session" by walking the newest messages of the whole
// table backwards.
//
// conversation_summaries — one summary per session (the reference's table):
//
//	session_id  TEXT PRIMARY KEY        → strata_sessions ON DELETE CASCADE
//	narrative   TEXT NOT NULL
//	facts_json  JSONB NOT NULL          [{"key","value","category","extractedAt"}]
//	up_to_seq   BIGINT NOT NULL         coverage cursor: messages with seq <= it
//	version     BIGINT NOT NULL         1 on insert, +1 on every update
//	title       TEXT NOT NULL
//	created_at  TIMESTAMPTZ NOT NULL    kept by updates
//	updated_at  TIMESTAMPTZ NOT NULL    refreshed by updates
//
// strata_fold_leases — cross-process single-flight for summarization:
//
//	session_id  TEXT PRIMARY KEY
//	holder      TEXT NOT NULL           random token of the lease's holder
//	expires_at  TIMESTAMPTZ NOT NULL    by the server's clock
//
// # Guarantees
//
// Sequence numbers. Message.Seq is drawn from the global sequence of
// strata_messages.seq. Appends to one session are serialized by a lock on
// its strata_sessions row and draw their numbers after taking it, so seq is
// strictly increasing within a session (not dense), and a number is never
// reused: a session deleted and re-created under the same id gets higher
// numbers, so a summary cursor of the old incarnation can never match a
// message of the new one.
//
// Appends. One transaction per Append: an INSERT … ON CONFLICT on
// strata_sessions creates the session for its first writer or, only when
// the caller owns it, adds to its count — either way locking the row; a
// single INSERT … SELECT FROM unnest(…) writes the whole batch. A foreign
// user gets memory.ErrNotOwner; any failure rolls everything back, so a
// user+assistant pair is stored whole or not at all and concurrent pairs
// never interleave.
//
// Loads. Tail is one statement: the session's count plus a backward index
// scan that stops after n rows, so loading costs the same for 100 or
// 100 000 stored messages. Range is a forward index range scan.
//
// Summaries. Save is one INSERT … SELECT … ON CONFLICT (session_id) DO
// UPDATE … WHERE EXCLUDED.up_to_seq >= conversation_summaries.up_to_seq:
// a save never lowers the cursor. Its source row exists only while the
// session is alive and holds the message at the cursor, and it takes a KEY
// SHARE lock on the session row; Delete takes FOR UPDATE on that row first.
// So a summarization that finishes after its session was deleted (or
// deleted and re-created) writes nothing, and a save racing a delete is
// either removed by it or skipped. Facts that fail to decode are dropped
// with a warning on the store's logger; the rest of the summary loads.
//
// Deletion. MessageStore.Delete removes the session's messages, summary,
// fold lease and owner row in one transaction.
//
// Single-flight. Both stores implement memory.FoldLocker with lease rows
// (INSERT … ON CONFLICT DO UPDATE … WHERE expires_at <= clock_timestamp()),
// released by deleting only the caller's own token. Unlike an advisory
// lock it pins no connection while the summarizer runs. A lease is granted
// in slices (WithFoldLeaseSlice, default 15 s) that its holder renews in
// the background up to the requested ttl, so the lease of a crashed holder,
// or one whose release was lost to a broken connection, frees itself
// within a slice. If a holder cannot renew (the database is unreachable)
// its lease may lapse and another replica may fold too; the monotonic save
// keeps that harmless.
//
// Listings. MessageStore also implements memory.SessionLister from
// strata_sessions alone.
//
// Faults. Every database error is returned wrapped ("db: append to session
// …: %w") and leaves stored data as it was. Broken connections are dropped
// by the pool (lib/pq reports them as driver.ErrBadConn), so calls succeed
// again as soon as the server is reachable.
package db
