// Package store is the contract between a memory.Manager and the stores
// that keep its sessions, in the manner of database/sql/driver: one
// contract per session, Store, that keeps a session's messages, its
// summary (facts, narrative, cursor, provenance, forgotten digests) and
// its fold lease together, and that the in-memory store
// (memory.NewInMemoryStore) and the PostgreSQL store (package db) both
// implement fully; the conformance suite in package memory/memorytest runs
// all of it on both. A memory.Manager talks to a Store only, so the code
// that runs on a laptop is the code that runs in production.
//
// The data — Message, Summary, Fact — is package record's, the vocabulary;
// this package adds the bookkeeping types (Tail, AppendResult,
// SessionInfo), the errors stores return, and depends on nothing heavier
// than record.
//
// # Migration from a pair of stores
//
// Before this contract a store kept the messages only (what is now
// Messages, with optional capabilities: Replacer, Importer, Forgetter,
// ParticipantLister, FoldLocker) and a summary.Store kept the summaries
// apart. Such a pair still works: memory.NewManager takes a Messages and,
// through memory.WithSummaries, a summary store, and composes them with
// Compose, the one adapter, whose documentation lists its fallbacks (what
// it cannot make atomic across two stores). A store written for this
// contract implements Store; when it also hands out its summaries as a
// summary store of its own (memstore's Summaries, db's SummaryStore on the
// same pool), its KeepsSummaries method lets Compose recognise them and use
// the store itself, with no adapter. The capabilities SnapshotReader,
// AfterSummaryReader and FoldSaveLocker are gone: their work is Store's
// Snapshot, SnapshotAfterSummary and TryLockFold; the …SummariesOf probes
// are replaced by KeepsSummaries, asked by Compose only.
package store

import (
	"context"
	"time"

	"github.com/strata-go/strata/internal/owner"
	"github.com/strata-go/strata/record"
)

// The stored form of a message lives in package record, the vocabulary
// every package shares; these are its names here.
type (
	// Role is the stored role of a message (record.Role).
	Role = record.Role
	// Message is one stored message of a session (record.Message).
	Message = record.Message
)

// The stored roles (record's). Unknown role strings read back from a store
// are treated as RoleUser, as arc-reactor does.
const (
	RoleUser      = record.RoleUser
	RoleAssistant = record.RoleAssistant
	RoleSystem    = record.RoleSystem
	RoleTool      = record.RoleTool
)

// MetadataModelVariant is the metadata key for the model variant that
// produced an assistant message.
const MetadataModelVariant = record.MetadataModelVariant

// AppendResult reports the outcome of an append.
type AppendResult struct {
	// Total is the number of messages the session holds after the append,
	// read atomically with it.
	Total int
	// LastSeq is the sequence number of the last message appended (0 when
	// nothing was appended).
	LastSeq int64
	// Epoch identifies the incarnation of the session the messages went to
	// (see Tail.Epoch).
	Epoch int64
}

// Tail is the newest part of a session.
type Tail struct {
	// Total is the number of messages the session holds.
	Total int
	// Epoch identifies this incarnation of the session: it is fixed when the
	// session is created and differs for a session re-created under the same
	// id after a delete. Summaries record it, so a summary made for a deleted
	// session is never shown for its successor.
	Epoch int64
	// Messages are at most the requested number of newest messages, oldest
	// first.
	Messages []Message
}

// SessionInfo describes one session of a user, for listings.
type SessionInfo struct {
	SessionID    string
	UserID       string
	MessageCount int
	CreatedAt    time.Time
	LastActivity time.Time
	// Preview is the first user message, cut to 50 characters plus "..."
	// ("Empty conversation" when there is none), as arc-reactor shows it.
	Preview string
}

// Messages is the part of a store that keeps the raw messages of
// sessions and who owns them: what every store implements, and all that a
// store written before Store implemented (memory.MessageStore names it;
// memory.NewManager composes it with a summary store, see Compose).
//
// Ownership is part of every operation: each takes the caller's user id and
// checks it in the same atomic step as the work it guards (one SQL
// statement, or one critical section), so no interleaving of another
// caller's create or delete can expose one user's messages to another.
// Operations on a session that does not exist return ErrNotFound; on a
// session another user owns, ErrNotOwner. Implementations must be safe for
// concurrent use.
type Messages interface {
	// Create makes an empty session owned by userID, visible at once to
	// every user of the store. It returns ErrSessionExists when the id is
	// already in use, whoever owns it.
	Create(ctx context.Context, sessionID, userID string) error
	// Append atomically appends msgs to userID's session: either all of
	// them are stored, contiguously and in order, or none. Append never
	// creates a session (only Create does): a session that does not exist
	// returns ErrNotFound, one another user owns ErrNotOwner, and neither
	// stores anything. The ownership check and the write are one atomic
	// step, so a concurrent Delete or Create cannot slip between them. With
	// no msgs, Append on the caller's session stores nothing and reports
	// its Total and Epoch (LastSeq 0).
	Append(ctx context.Context, sessionID, userID string, msgs ...Message) (AppendResult, error)
	// Tail returns the message count, the epoch and the newest n messages
	// (n <= 0: none), without reading the rest of the history.
	Tail(ctx context.Context, sessionID, userID string, n int) (Tail, error)
	// Range returns the messages with afterSeq < Seq <= throughSeq, oldest
	// first; limit > 0 caps how many (the oldest ones are returned).
	Range(ctx context.Context, sessionID, userID string, afterSeq, throughSeq int64, limit int) ([]Message, error)
	// Delete removes every message and the ownership of the session (for
	// a Store, its summary too, in the same atomic step).
	Delete(ctx context.Context, sessionID, userID string) error
	// Sessions lists userID's sessions, newest activity first. total is
	// the number of the user's sessions before pagination; limit <= 0
	// means no limit; a negative offset counts as 0.
	Sessions(ctx context.Context, userID string, limit, offset int) (page []SessionInfo, total int, err error)
}

// Store is the one storage contract behind a memory.Manager: a session's
// messages (Messages), its summary and its fold lease, kept together, so
// that deleting, replacing, importing or erasing a session changes its
// messages and its summary in one atomic step. The in-memory store and
// the PostgreSQL store implement it fully and run the conformance suite
// in package memory/memorytest; Compose builds one over a Messages and a
// separate summary store. Implementations must be safe for concurrent
// use.
type Store interface {
	Messages
	Replacer
	Importer
	Forgetter
	ParticipantLister
	Journaler

	// Summary returns the session's stored summary, nil when it has none,
	// whatever its epoch (the caller compares it with the session's). It
	// checks no ownership, as the summary belongs to the session id.
	Summary(ctx context.Context, sessionID string) (*record.Summary, error)
	// SaveSummary stores s as the summary of s.SessionID, as
	// summary.Store's Save does: an upsert that never lowers the cursor of
	// the same epoch (a lower UpToSeq writes nothing and returns
	// ErrStale), keeping CreatedAt from the first save of an epoch,
	// refreshing UpdatedAt and incrementing Version, and keeping every
	// other field (provenance, Forgotten, ForgetKey) as given. A summary
	// for a session that is not live in the store, or of another epoch
	// than the session's, is refused with ErrSessionGone; one without a
	// SessionID with record.ErrNoSessionID.
	SaveSummary(ctx context.Context, s record.Summary) error
	// Snapshot returns what Tail(ctx, sessionID, userID, n) returns, with
	// the same errors, and the session's stored summary (nil when none)
	// whatever its epoch, read atomically with the tail. A store that
	// read the tail but not the summary may return the tail, a nil summary
	// and an error wrapping ErrSummaryUnavailable: the caller then shows
	// the messages without the summary.
	Snapshot(ctx context.Context, sessionID, userID string, n int) (Tail, *record.Summary, error)
	// SnapshotAfterSummary returns what Snapshot returns, with the same
	// errors, except that its messages are the newest n of those after
	// the returned summary's cursor (Summary.UpToSeq) when that summary has
	// the tail's epoch, else the newest n of all; Tail.Total still counts
	// every message. A load of a policy that shows every message its
	// summary does not cover then reads no message it would drop.
	SnapshotAfterSummary(ctx context.Context, sessionID, userID string, n int) (Tail, *record.Summary, error)
	// TryLockFold tries to take the session's fold lease for at most ttl,
	// so that two processes never summarize one session at the same time.
	// ok is false while another holder has it. When ok, release must be
	// called (it is safe to call more than once, and after save), and
	// save, when not nil, stores a summary as SaveSummary does and
	// releases the lease in the same atomic step, provided the lease is
	// still the caller's (else it refuses with an error wrapping ErrStale
	// and stores nothing); when save is nil the caller saves with
	// SaveSummary and then releases. Deleting a session does not release
	// or remove its lease: a fold still running keeps it until it ends or
	// the lease expires. A store used by one process may grant the lease
	// in process only (the in-memory store does).
	TryLockFold(ctx context.Context, sessionID string, ttl time.Duration) (release func(), save func(context.Context, record.Summary) error, ok bool, err error)
}

// AnonymousUser is the owner recorded for, and checked against, the
// operations of a caller that gives no user id: a missing user id never
// bypasses the ownership check. Derived indexes (such as the catalogue's)
// normalise an empty user id to it too.
const AnonymousUser = owner.Anonymous

// Errors returned by the stores, and passed on by the manager; check them
// with errors.Is. They are record's (see there for each).
var (
	ErrNotOwner        = record.ErrNotOwner
	ErrNotFound        = record.ErrNotFound
	ErrSessionExists   = record.ErrSessionExists
	ErrInvalidMessage  = record.ErrInvalidMessage
	ErrMessageTooLarge = record.ErrMessageTooLarge
	ErrStoreFull       = record.ErrStoreFull
	ErrUnavailable     = record.ErrUnavailable
)

// ParticipantLister is part of Store (and an optional capability of a
// Messages, which Compose uses): the store records, with each append, replace and
// import in the same atomic step, the participants of a session — the
// authors of its messages (Message.UserID) other than its owner, such as
// the users writing in a shared session, whose owner is the manager's
// "shared" — and lists the sessions a user took part in. The participants
// of an incarnation go with it (Delete, Replace). Both stores of this
// module record at most 64 participants per session, the first to write;
// later authors are stored with their messages but not listed.
type ParticipantLister interface {
	// ParticipantSessions lists the sessions owned by ownerID that
	// participant wrote in, with the contract of Sessions: newest activity
	// first, total before pagination, limit <= 0 means no limit, a
	// negative offset counts as 0. participant == ownerID lists nothing.
	ParticipantSessions(ctx context.Context, ownerID, participant string, limit, offset int) (page []SessionInfo, total int, err error)
}

// FoldLocker is the fold lease of a Messages or a summary store that is
// no Store (db.SummaryStore has it): Compose uses it, when either store of
// the pair has it, for the Store's TryLockFold. Without it, a composed
// store's folds are coordinated within one process only.
type FoldLocker interface {
	// TryLockFold tries to take the session's fold lock for at most ttl. ok
	// is false when another holder has it. release must be called when ok.
	TryLockFold(ctx context.Context, sessionID string, ttl time.Duration) (release func(), ok bool, err error)
}

// Replacer is part of Store (and an optional capability of a Messages,
// which Compose uses): it replaces a session's
// whole history in one atomic step (one transaction, or one critical
// section), the way langchaingo's ChatMessageHistory.SetMessages wants it.
// Without it, Compose falls back to a delete then an append (under the
// manager's write lock of the session: atomic within one process, but a
// replica, or another user creating the id in between, can slip between
// the two steps).
type Replacer interface {
	// Replace validates every message (see Message.Validate) and, only
	// when all are valid, makes msgs the whole history of userID's session
	// sessionID: a new incarnation (a new Epoch, so that no summary of the
	// old history applies) holding exactly msgs, still owned by userID. A
	// session that does not exist is created for userID. A session another
	// user owns returns ErrNotOwner; an invalid message ErrInvalidMessage;
	// in both cases nothing changes. The ownership check and the writes are
	// one atomic step; a Store removes the old incarnation's summary in it.
	Replace(ctx context.Context, sessionID, userID string, msgs ...Message) (AppendResult, error)
}
