// Package db stores Strata's conversation memory in PostgreSQL, so that
// several replicas of a service can share it.
//
// # Use
//
//	d, err := db.Open(ctx, os.Getenv("DATABASE_URL")) // pings, sets pool limits and timeouts
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
// # Connection poolers
//
// The stores work through a connection pooler in transaction mode
// (PgBouncer's pool_mode = transaction and the poolers built like it) as
// they do directly: no statement is prepared by the protocol under a name
// (lib/pq's binary_parameters sends each one unnamed, in one round trip),
// no start-up parameter beyond lib/pq's own is sent, statements are
// bounded on the client rather than by a session setting, and nothing
// relies on session state (fold leases are rows, not advisory locks).
// Migrate is the exception: it needs a direct connection, and is refused
// through a pooler that refuses start-up parameters
// (ErrMigrateThroughPooler).
//
// The load's two statements are named statements the server keeps per
// server connection (SQL PREPARE, under a name that is a hash of the
// statement's text, run by EXECUTE over the simple query protocol with
// their arguments as literals): one round trip that neither parses nor
// plans them again on a server connection that ran them before. A
// connection of a pool made by Open remembers what it was given and sends
// the PREPARE with the first EXECUTE, in the same round trip, so a direct
// connection never has a call refused. Through a transaction-mode pooler a
// call may reach a server connection that lacks the statement (or, with
// the PREPARE, one that has it): the server refuses it before running
// anything, logging the refusal with the statement's text (the session and
// user ids, no message text), and the call is made again as that server
// connection needs; PostgreSQL analyzes a prepared statement again under
// another search_path, so it reads the caller's schema. Each server
// connection keeps these two statements, no more. Appends stay unnamed:
// their literals would be the conversation's text.
//
// WithPreparedStatements makes a MessageStore prepare its load and append
// statements by the protocol instead (database/sql's Stmt, prepared once
// on each pooled connection). It is off by default and is only for a
// direct connection, a pooler in session mode, or PgBouncer 1.21 or later
// with max_prepared_statements set: through a transaction-mode pooler
// without that support a statement may reach a server connection it was
// never prepared on, or one where another client's statement has its
// name (lib/pq names them "1", "2", … on each connection). A prepared
// append is still never run twice: database/sql would run a Stmt again on
// another connection after driver.ErrBadConn, and Append refuses that
// second run (store.ErrUnavailable).
//
// # Citus
//
// Distribute makes a migrated schema a distributed one on Citus: the
// session tables by session_id, colocated with strata_sessions, and
// the functions strata_append, strata_snapshot, strata_load, strata_tail and strata_save_summary on
// their session argument, so that a load, an append and a summary's save
// are each one call Citus delegates to the worker holding the session, and
// every other statement names its session and runs on one shard. No
// statement puts a volatile function (clock_timestamp, nextval) in an
// UPDATE or an ON CONFLICT clause, which Citus refuses on a distributed
// table: times are read into a function's variables or taken from the
// proposed row (EXCLUDED), and Replace draws its new epoch in a statement
// of its own. Migrations run on the coordinator; strata_schema_migrations
// stays a local table there.
//
// # Schema (version 22)
//
// Migration 000022 makes a journal append (strata_journal_append) write
// its header row once: the row is read FOR UPDATE and inserted only when
// the session has none yet, where the append before locked it with an
// upsert that wrote it and then wrote it again. What the journal holds
// and what the function returns are unchanged.
//
// # Schema (version 21)
//
// Migration 000021 compresses strata_summaries.facts_json with LZ4 rather
// than pglz where the server supports it (a fold writes the whole facts
// ledger, and pglz compression was the largest cost it added to the
// server); elsewhere the column keeps its default, with a notice.
//
// # Schema (version 20)
//
// Migration 000020 rewrites the helpers strata_journal_sum and
// strata_merge_participants in PL/pgSQL around the same query, so that
// their plan is kept for the connection's life rather than made again at
// every statement that calls them (a fold's journal append calls the sum
// twice). What they return is unchanged.
//
// # Schema (version 19)
//
// Migration 000019 adds strata_sessions.summary_writes, raised by every
// save of the session's summary (strata_save_summary) and every delete of
// it alone (SummaryStore.Delete), in the statement that writes it, and
// the function strata_tail, strata_load returning also summary_writes and
// the summary's identity: with the epoch, seq counter and erasures it is
// the stamp of the tail and summary a store holds, so the check of a held
// load (heldSQL) reads the session row alone. strata_load stays for
// replicas of the previous version.
//
// # Schema (version 18)
//
// Migration 000018 adds the function strata_load, the load's one call
// (loadSQL) in place of strata_snapshot: it also takes the stamp of the
// tail the caller holds (see Loads below) and returns the session's stamp,
// and then sends only the messages stored after the held ones. Every
// change of a session's stored messages changes its stamp under the
// session row's lock: appends and imports raise seq_counter, an erasure
// (Forget, or the arc-reactor import's rewrite of shared sessions'
// authors) raises erasures, a replace or a re-creation draws a new epoch.
// strata_snapshot stays for replicas of the previous version.
//
// # Schema (version 17)
//
// Migration 000017 makes strata_append insert a batch's messages two per
// INSERT (a turn: the session row's update and one INSERT), and merge
// participants only for a batch by other authors than the owner: on
// Citus every statement of a delegated function is planned afresh on the
// worker on each call, so an append costs about one planning per
// statement. What it stores is as in version 15.
//
// # Schema (version 16)
//
// Migration 000016 stores a fold journal one row per record
// (strata_journal_records, see below), with the totals in strata_journals:
// appending a record (strata_journal_append) inserts it, deletes what
// falls past the retention and updates the totals, never reading the
// other records, and a fold's save with its record is one call
// (strata_save_journaled). Existing JSON journals are moved into rows,
// and back by the down migration.
//
// # Schema (version 15)
//
// Migration 000015 adds the function strata_save_summary, the one call
// of a summary's save (SummaryStore.Save and the save under a fold lease),
// in place of one statement of data-modifying CTEs, and the function
// strata_import_messages, which numbers and inserts an import's messages
// (Import, the arc-reactor import) in statements about the one session.
//
// # Schema (version 14)
//
// Migration 000014 drops the catalogue's liveness trigger (version 3),
// which Citus refuses on a distributed table: the statements that write a
// catalogue document check the session's live row themselves, under a KEY
// SHARE lock. strata_append's statement becomes separate statements (the
// session row's update, then one INSERT per message) without a volatile
// function in them.
//
// # Schema (version 11)
//
// Migration 000011 counts sequence numbers per session:
//
//	strata_sessions.seq_counter  BIGINT NOT NULL DEFAULT 0  the greatest seq
//	                             drawn for the session id: kept by a
//	                             tombstone, a re-creation and a replace
//
// Every statement that stores messages (strata_append, Import, the
// arc-reactor import) raises it on the locked session row and numbers the
// messages after it; strata_messages.seq's column default (the global
// sequence) is no longer used. Existing seqs are not renumbered: each
// counter starts at the greatest seq its session holds or its summary
// covers, or, where messages after those may have been removed (a
// tombstone, an empty session, one with erasures), at the greatest value
// the global sequence gave. The down migration moves the global sequence
// past every counter.
//
// # Schema (version 9)
//
// Migration 000009 records the participants of sessions (see
// store.ParticipantLister):
//
//	strata_sessions.participants  TEXT[] NOT NULL DEFAULT '{}'  the authors of
//	                              the session's messages other than its owner
//	                              (the users of a shared session), first
//	                              writers first, at most 64; cleared on delete,
//	                              re-creation and replace
//	index strata_sessions_participants_idx  GIN (participants): "shared
//	                              sessions a user wrote in"
//
// and strata_messages.user_id is each message's author, which in a shared
// session is not its owner. strata_append takes each message's author and
// the authors new to the session, and adds them to participants in the
// statement that locks the session row. (Version 8 is not in this file.)
//
// # Schema (version 7)
//
// Migration 000006 takes last_activity out of the listing index (now
// strata_sessions_user_idx on user_id alone) and gives strata_sessions a
// fillfactor of 80, so that the session row's update in every append is a
// HOT update. Migration 000007 adds the functions strata_append and
// strata_snapshot, the one statement of an append and of a load, whose
// plans PL/pgSQL keeps per server connection (a load is otherwise planned
// on every call, which costs more than running it); strata_snapshot's plan
// is held to index scans, so that it reads only the rows it returns even on
// a database nothing has analyzed.
//
// # Schema (version 5)
//
// Migration 000005 renames Strata's summary table from
// conversation_summaries to strata_summaries, so that arc-reactor's table
// of that name can share the schema (databases made since create
// strata_summaries directly, and migration 000003 renames it for databases
// still at version 1 or 2). Only a conversation_summaries with Strata's
// up_to_seq column is renamed; arc-reactor's is never touched.
//
// # Schema (version 4)
//
// Migration 000004 adds the catalogue's pinned titles to
// strata_session_index (see catalog.go).
//
// # Schema (version 3)
//
// Migration 000003 gives sessions incarnations and tombstones:
//
//	strata_sessions.epoch       BIGINT NOT NULL    the incarnation, from the
//	                                               sequence strata_session_epoch_seq
//	strata_sessions.deleted_at  TIMESTAMPTZ NULL   set on a tombstone
//	strata_sessions.user_id     now NULL on a tombstone (and only there)
//	strata_summaries.epoch BIGINT NOT NULL   the incarnation summarized
//
// and drops strata_summaries.title (titles live in the catalogue) and
// the summary table's foreign key to strata_sessions (the summary store
// also serves sessions other message stores keep). A CHECK constraint
// pins the shape of a tombstone: no owner, no messages, no first user
// message. A trigger on strata_session_index refuses (SQLSTATE 23503, as a
// foreign key would) a document for a missing or deleted session, under a
// KEY SHARE lock on its row, so a document write racing a delete waits for
// it and then fails (until version 14, which drops it). Existing sessions get an epoch each, existing
// summaries their session's. The down migration drops tombstones and the
// summaries version 2 cannot hold (of unknown sessions or of an earlier
// incarnation).
//
// # Schema (version 2)
//
// Migration 000002 adds the conversation catalogue's table,
// strata_session_index (one search document per session); its columns are
// listed in catalog.go. EnableVectorSearch is an optional step after
// Migrate that adds a pgvector column when the server has the extension;
// without it the catalogue scores in process. Everything below is
// version 1, as amended by version 3.
//
// # Schema (version 1)
//
// strata_sessions — one row per session id, the owner row:
//
//	session_id          TEXT PRIMARY KEY
//	user_id             TEXT NULL              the owner: the creator
//	                                           (NULL on a tombstone)
//	message_count       BIGINT NOT NULL        kept by every append, so Tail's
//	                                           Total costs nothing
//	first_user_message  TEXT NULL              first 500 characters, for listings
//	created_at          TIMESTAMPTZ NOT NULL   creation of this incarnation
//	last_activity       TIMESTAMPTZ NOT NULL   time of the latest append
//	epoch               BIGINT NOT NULL        this incarnation's epoch
//	deleted_at          TIMESTAMPTZ NULL       set while the row is a tombstone
//	erasures            BIGINT NOT NULL        (version 8) Forgets of this session
//	                                           (and rewrites of its stored messages):
//	                                           a catalogue write and a held tail check it
//	seq_counter         BIGINT NOT NULL        (version 11) the greatest seq drawn
//	                                           for the id, kept by a tombstone
//	index (user_id)   "sessions of a user" (last_activity is deliberately
//	                  not indexed: appends then update the row as HOT updates)
//
// strata_messages — the append-only message log:
//
//	seq           BIGINT NOT NULL        from the session's seq_counter
//	                                     (version 11; a BIGSERIAL before,
//	                                     whose default Strata no longer uses)
//	session_id    TEXT NOT NULL          → strata_sessions ON DELETE CASCADE
//	role          TEXT NOT NULL          user | assistant | system | tool
//	content       TEXT NOT NULL
//	tool_calls    JSONB NULL             [{"id","type","function":{"name","arguments"}}]
//	tool_call_id  TEXT NOT NULL          the call a tool message answers, or ''
//	name          TEXT NOT NULL          tool name / generic role, or ''
//	metadata      JSONB NULL             {"model_variant": …, …}
//	user_id       TEXT NOT NULL          the writer (the owner, or since
//	                                     version 9 a shared session's author)
//	created_at    TIMESTAMPTZ NOT NULL   time of the append
//	PRIMARY KEY (session_id, seq)        "last N of a session" (backward scan)
//	                                     and "messages after seq" (range scan)
//
// The primary key is the table's only index. A single-column index on seq
// is deliberately absent: given one, the planner may answer "the newest 20
// messages of a small session" by walking the newest messages of the whole
// table backwards.
//
// strata_summaries — one summary per session. Before version 5 the table
// was named conversation_summaries, like arc-reactor's own summary table
// (session_id, narrative, facts_json, summarized_up_to, timestamps), which
// may therefore share the schema; migration 000005 renamed Strata's.
// ImportArcReactor imports arc-reactor's conversations, summaries
// included, into Strata's tables:
//
//	session_id  TEXT PRIMARY KEY        no foreign key (see version 3)
//	epoch       BIGINT NOT NULL         the incarnation summarized
//	narrative   TEXT NOT NULL
//	facts_json  JSONB NOT NULL          [{"key","value","category","extractedAt"}]
//	up_to_seq   BIGINT NOT NULL         coverage cursor: messages with seq <= it
//	version     BIGINT NOT NULL         1 on the first save of an epoch, +1 on
//	                                    every later save of it
//	created_at  TIMESTAMPTZ NOT NULL    first save of the epoch
//	updated_at  TIMESTAMPTZ NOT NULL    refreshed by every save
//
// strata_fold_leases — cross-process single-flight for summarization:
//
//	session_id  TEXT PRIMARY KEY
//	holder      TEXT NOT NULL           random token of the lease's holder
//	expires_at  TIMESTAMPTZ NOT NULL    by the server's clock
//
// strata_arc_reactor_imports (version 10) — what ImportArcReactor
// imported, so that a re-run adds only arc-reactor's newer rows; a row
// outlives its session (no foreign key), so that a session deleted in
// Strata is not imported again:
//
//	session_id   TEXT PRIMARY KEY
//	last_arc_id  BIGINT NOT NULL        newest conversation_messages.id imported
//	epoch        BIGINT NOT NULL        the incarnation imported into: a session
//	                                    deleted and created anew gets no arc row
//	imported_at  TIMESTAMPTZ NOT NULL
//	updated_at   TIMESTAMPTZ NOT NULL
//
// strata_journals (version 13) — each session's fold journal
// (MessageStore.EditJournal, store.Journaler), its header; Delete and
// Replace delete it, and its records, with the session:
//
//	session_id  TEXT PRIMARY KEY
//	epoch       BIGINT NOT NULL         the incarnation journaled
//	journal     JSONB NOT NULL          store.Journal without its records
//	                                    (since version 16): totals, rolled, day
//	updated_at  TIMESTAMPTZ NOT NULL    refreshed by every edit
//
// strata_journal_records (version 16) — the kept records of a journal,
// one row each; an append inserts one and deletes those past the
// retention (strata_journal_append), never rewriting the others:
//
//	session_id  TEXT NOT NULL
//	epoch       BIGINT NOT NULL         the incarnation
//	n           BIGINT NOT NULL         the record's number (JournalRecord.N)
//	record      JSONB NOT NULL          store.JournalRecord
//	counts      JSONB NOT NULL          what it adds to the totals
//	PRIMARY KEY (session_id, epoch, n)
//
// # Guarantees
//
// Ownership. Every MessageStore method checks the caller's ownership in
// the same statement as its work, or in a transaction that holds the
// session's row lock from the check to the commit; no owner is looked up
// first and acted on later. Create is one INSERT … ON CONFLICT that
// inserts the row or revives a tombstone, and otherwise returns no row
// (store.ErrSessionExists); only Create makes or revives a session.
// Append is one statement whose UPDATE of the session row has "owner =
// caller and live" in its condition: it locks the caller's own session, and
// when it updates nothing the same statement reports the live owner it saw
// (another user: memory.ErrNotOwner; none: store.ErrNotFound, the session
// is missing or deleted). Tail, Range and Snapshot are one SELECT each that
// reads the session row and, in a lateral subquery guarded by "owner =
// caller", the messages: one snapshot decides both. Delete locks the live
// row FOR UPDATE, checks the owner it read, then tombstones the row in the
// same transaction. Missing sessions and tombstones answer
// store.ErrNotFound everywhere, and Sessions never lists a tombstone.
//
// Sequence numbers. Message.Seq is drawn from the session's own counter
// (strata_sessions.seq_counter), raised in the statement that locks the
// session row, so seq is strictly increasing within a session and dense
// but for erased messages: another session's writes never show in it (no
// user can count another's). The counter lives on the session row, which
// a delete keeps as a tombstone, so a number is never reused: a session
// deleted and re-created under the same id, or replaced, goes on from its
// predecessor's numbers.
//
// Epochs. Each incarnation of a session — created by Create, or revived
// from a tombstone by it — takes a new
// value of strata_session_epoch_seq, kept on the row and returned by Tail
// and Append. Values are positive and never reused.
//
// Appends. One statement (one implicit transaction, one commit) per Append
// with messages: a data-modifying CTE updates and locks the session row,
// and an INSERT … SELECT FROM unnest(…) joined to it writes the whole
// batch, so every seq is drawn after the lock. Any failure rolls everything
// back, so a user+assistant pair is stored whole or not at all and
// concurrent pairs never interleave. It runs on a connection of its own
// (*sql.Conn), so database/sql never re-runs it after a broken connection,
// which could store it twice (prepared, WithPreparedStatements, it refuses
// the second run instead). An Append without messages only reads the
// session's count and epoch.
//
// Loads. Tail is one statement: the session's count plus a backward index
// scan that stops after n rows, so loading costs the same for 100 or
// 100 000 stored messages. Range is a forward index range scan. Snapshot
// (store.Store) is Tail plus the session's summary in one statement (a
// call of strata_tail): a manager over this store, with summaries
// kept by it (its own, or a SummaryStore on the same pool), loads in one
// round trip.
// SnapshotAfterSummary is Snapshot whose index scan also stops at the
// summary's cursor: a chunked manager, which shows every message its
// summary does not cover and none before, reads only those.
//
// Held tails. A MessageStore keeps the tail each load read, per session
// (WithTailCache: DefaultTailCacheSessions sessions and
// DefaultTailCacheBytes in all by default), with its stamp: the session's
// epoch, seq counter, erasures and summary_writes, the identity of the
// summary the same read found, the cursor it was read after and how many
// messages it holds. Every change of a session's stored messages or
// summary changes its stamp under the session row's lock (an append or
// import raises the counter, an erasure the erasures, a save or delete of
// the summary summary_writes, a replace or re-creation draws a new epoch).
//
// A load of a session whose tail the store holds first runs one plain
// statement, no function: the live session row by its primary key (the
// owner, count and stamp). When the stamp is the held one and the load
// asks for no more messages, after no earlier cursor, than the held tail
// covers, the load is answered from the held tail and the summary the
// store holds under the held identity (see WithSummaryCache): one round
// trip, one snapshot, which also decided ownership and proved the held
// messages and summary current. A fold's save under this store's lease
// gives its held tail the summary part of the stamp it left, so the load
// after a fold is still answered so. Otherwise the load calls strata_tail with the stamp, which in
// its own snapshot compares it again and sends only the messages stored
// after the held counter when the epoch and erasures still match, the
// whole tail when not; its answer alone makes the result. A load of a
// session the store holds nothing for calls strata_tail directly. So a
// tail is never served without the database confirming it in the
// statement that also checks ownership, and another replica's append,
// erasure, replace, delete or re-creation is seen by the next load.
//
// An append (strata_append) returns the session's epoch, erasures, new
// seq counter and the time its messages were stored; when the held tail's
// stamp has that epoch and those erasures and its counter is the one the
// append raised (no other writer in between), the store adds the messages
// to the held tail as a load would read them back, keeping as many as its
// loads ask for. In an agent loop on one replica (load, append, load …)
// every load after the first is then the plain statement alone, a fold's
// new summary included. Callers get copies.
//
// Deletion. MessageStore.Delete removes the session's messages, summary
// and catalogue document and turns its row into a tombstone, in one
// transaction. It never touches fold leases: a fold that is still running
// keeps its lease until it releases it or the lease expires.
//
// Summaries. Save is one statement (see SummaryStore.Save): it reads the
// session's row, if strata_sessions has one, under FOR KEY SHARE — which
// waits for a Delete in progress (it holds FOR UPDATE) and then reads the
// row as the Delete left it — and writes nothing, returning
// summary.ErrSessionGone, when that row is a tombstone or carries another
// epoch than the summary. A session strata_sessions does not know (another
// message store keeps it) is saved unconditionally. Within an epoch the
// upsert never lowers the cursor (summary.ErrStale); a summary of another
// epoch is replaced. So a fold that finishes on one replica after another
// replica deleted (or deleted and re-created) its session stores nothing.
// Facts that fail to decode are dropped with a warning on the store's
// logger; the rest of the summary loads.
//
// Single-flight. Both stores take fold leases (MessageStore.TryLockFold,
// store.Store's; SummaryStore.TryLockFold) with lease rows
// (INSERT … ON CONFLICT DO UPDATE … WHERE expires_at <= clock_timestamp()),
// released by deleting only the caller's own token. Unlike an advisory
// lock it pins no connection while the summarizer runs. A lease is granted
// in slices (WithFoldLeaseSlice, default 15 s) that its holder renews in
// the background up to the requested ttl, so the lease of a crashed holder,
// or one whose release was lost to a broken connection, frees itself
// within a slice. If a holder cannot renew (the database is unreachable)
// its lease may lapse and another replica may fold too; the monotonic save
// keeps that harmless. The save MessageStore.TryLockFold returns ends a
// fold in one statement and one commit: it saves the summary as Save does and deletes
// the lease, only while the lease is still the caller's (a holder whose
// lapsed lease was taken over saves nothing).
//
// Listings. MessageStore.Sessions reads strata_sessions alone: live
// sessions of the user, empty ones included.
//
// Outages and timeouts. Every database error is returned wrapped ("db:
// append to session …: %w") and leaves stored data as it was. Failures
// that mean the database could not be reached or did not answer in time —
// refused or broken connections (driver.ErrBadConn), network errors and
// timeouts, SQLSTATE classes 08 (connection exception), 53 (insufficient
// resources), 57 (operator intervention: statement timeout 57014, admin
// shutdown 57P01, cannot connect now 57P03, …) and 58 (system error), plus
// lock and idle-in-transaction timeouts — additionally wrap
// store.ErrUnavailable, the original error staying in the chain. A call
// its caller cancelled is not an outage: its error carries
// context.Canceled instead. Open sets a connect timeout
// (DefaultConnectTimeout) on every connection and a statement timeout
// (DefaultStatementTimeout, enforced by the client with a cancel request)
// on every statement unless the data source name or the environment sets
// them, and bounds how long a connection
// waits for a reply (the statement timeout plus the connect timeout), so a
// server that accepts connections but never answers fails calls instead
// of blocking them. Broken connections are dropped by the pool, so calls
// succeed again as soon as the server is reachable.
package db
