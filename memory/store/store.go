// Package store is the contract between a memory.Manager and the stores
// that keep its sessions, in the manner of database/sql/driver: the stored
// form of a message, the Store interface every message store implements, the
// errors stores return, and the optional capabilities (FoldLocker,
// FoldSaveLocker, SnapshotReader, AfterSummaryReader, Replacer, Importer,
// Forgetter) a store may add, each with a documented fallback. Users of
// a Manager rarely need more of it than its errors and, for tool-aware
// pages of a session, Message; the in-memory store (memory.NewInMemoryStore)
// and the PostgreSQL store (package db) implement it and both run the
// conformance suite in package memory/memorytest.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/owner"
	"github.com/strata-go/strata/summary"
)

// Role is the stored role of a message.
type Role string

// The stored roles. Unknown role strings read back from a store are treated
// as RoleUser, as arc-reactor does.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleSystem    Role = "system"
	RoleTool      Role = "tool"
)

// Message is one stored message of a session. It holds everything a
// langchaingo chat message carries, losslessly, plus the store's bookkeeping.
type Message struct {
	// Seq is the message's sequence number, assigned by the store on append:
	// strictly increasing within a session and never reused for a later
	// message of the same session id. Both of Strata's stores count it per
	// session, so another session's writes never show in it; it is not
	// necessarily dense (erased messages leave gaps, and a session created
	// again under a deleted id goes on from its predecessor's numbers).
	Seq     int64
	Role    Role
	Content string
	// ToolCalls are the tool calls requested by an assistant message.
	ToolCalls []llms.ToolCall
	// ToolCallID is the id of the call a tool message answers.
	ToolCallID string
	// Name is the tool's name on a tool message (Gemini needs it on function
	// responses), when known.
	Name string
	// Metadata carries free-form per-message annotations, e.g.
	// "model_variant". Stored and returned, ignored by the memory policy.
	Metadata map[string]string
	// UserID is the user that wrote the message: given to Append (and
	// Replace, Import), the author the caller names — memory.Manager names
	// the user acting, who for a shared session is not its owner — and
	// when empty the session's owner; read back, the author the store
	// recorded. Stores that record participants (ParticipantLister) take
	// them from it.
	UserID string
	// CreatedAt is set by the store on append.
	CreatedAt time.Time
}

// MetadataModelVariant is the metadata key for the model variant that
// produced an assistant message.
const MetadataModelVariant = "model_variant"

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

// Store is the message store contract behind a memory.Manager (which names
// it memory.MessageStore): it persists the raw messages of sessions and who
// owns them. The in-memory store (memory.NewInMemoryStore) and the
// PostgreSQL store (package db) implement it, and both run the conformance
// suite in package memory/memorytest.
//
// Ownership is part of every operation: each takes the caller's user id and
// checks it in the same atomic step as the work it guards (one SQL
// statement, or one critical section), so no interleaving of another
// caller's create or delete can expose one user's messages to another.
// Operations on a session that does not exist return ErrNotFound; on a
// session another user owns, ErrNotOwner. Implementations must be safe for
// concurrent use.
type Store interface {
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
	// Delete removes every message and the ownership of the session.
	Delete(ctx context.Context, sessionID, userID string) error
	// Sessions lists userID's sessions, newest activity first. total is
	// the number of the user's sessions before pagination; limit <= 0
	// means no limit; a negative offset counts as 0.
	Sessions(ctx context.Context, userID string, limit, offset int) (page []SessionInfo, total int, err error)
}

// AnonymousUser is the owner recorded for, and checked against, the
// operations of a caller that gives no user id: a missing user id never
// bypasses the ownership check. Derived indexes (such as the catalogue's)
// normalise an empty user id to it too.
const AnonymousUser = owner.Anonymous

// Errors returned by the stores, and passed on by the manager; check them
// with errors.Is.
var (
	// ErrNotOwner: the session belongs to another user. HTTP layers answer
	// it exactly as they answer ErrNotFound, so that ids of other users'
	// sessions cannot be probed.
	ErrNotOwner = errors.New("memory: session is owned by another user")
	// ErrNotFound: no session has this id.
	ErrNotFound = errors.New("memory: session not found")
	// ErrSessionExists: Create was given an id that is already in use.
	ErrSessionExists = errors.New("memory: session already exists")
	// ErrInvalidMessage: a message cannot be stored as given (unknown type,
	// invalid UTF-8, NUL byte, tool result without call id, ...).
	ErrInvalidMessage = errors.New("memory: invalid message")
	// ErrMessageTooLarge: a message exceeds Config.MaxMessageBytes.
	ErrMessageTooLarge = errors.New("memory: message too large")
	// ErrStoreFull: a bounded store (the in-memory one) holds as many
	// sessions as it may and would have to evict another user's to make
	// room, so Create made nothing. HTTP layers answer it with 507.
	ErrStoreFull = errors.New("memory: store full")
	// ErrUnavailable: the store could not be reached or did not answer in
	// time (database down, connection refused, statement timeout). Stores
	// wrap such failures with it so that callers can tell an outage, worth
	// retrying later, from a bad request.
	ErrUnavailable = errors.New("memory: store unavailable")
)

// ParticipantLister is an optional capability of a Store (both stores of
// this module have it): the store records, with each append, replace and
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

// FoldLocker is an optional capability of a Store or summary.Store
// that coordinates summarization across processes (the PostgreSQL stores
// have it). When either store implements it, every fold of a session first
// takes this lock, so two replicas never summarize one session at the same
// time. Without it, folds are single-flight within one process only.
type FoldLocker interface {
	// TryLockFold tries to take the session's fold lock for at most ttl. ok
	// is false when another holder has it. release must be called when ok.
	// Deleting a session does not release or remove its lock: a fold that
	// is still running keeps it until it ends or the lock expires.
	TryLockFold(ctx context.Context, sessionID string, ttl time.Duration) (release func(), ok bool, err error)
}

// SnapshotReader is an optional capability of a Store that keeps
// its sessions' summaries beside their messages (the PostgreSQL store
// does). It lets a load read the tail and the summary in one call — for a
// database, one statement: one round trip and one snapshot.
//
// The manager uses it only when ReadsSummariesOf(its summary store) is
// true, that is when Snapshot's summary is exactly what that summary store
// would return. Otherwise, and for stores without the capability, a load
// reads the tail (Store.Tail) and then the summary (summary.Store.Get):
// two calls, with the same result.
type SnapshotReader interface {
	// ReadsSummariesOf reports whether Snapshot returns the summaries that
	// sums stores. When it does, the store keeps them beside its sessions:
	// its Delete (and Replace, for a Replacer) removes the session's
	// summary in the same atomic step, and the manager does not delete it
	// again by id, which could remove the summary of an incarnation
	// re-created meanwhile.
	ReadsSummariesOf(sums summary.Store) bool
	// Snapshot returns what Tail(ctx, sessionID, userID, n) returns, with
	// the same errors, and the session's stored summary (nil when it has
	// none) whatever its epoch, read atomically with the tail.
	Snapshot(ctx context.Context, sessionID, userID string, n int) (Tail, *summary.Summary, error)
}

// AfterSummaryReader is an optional capability of a SnapshotReader (the
// PostgreSQL store has it). SnapshotAfterSummary returns what Snapshot
// returns, with the same errors, except that its messages are the newest n
// of those after the returned summary's cursor (Summary.UpToSeq) when that
// summary has the tail's epoch, else the newest n of all; Tail.Total still
// counts every message. A load of a policy that shows every message its
// summary does not cover (chunked) then reads no message it would drop.
// Stores without it are read with Snapshot.
type AfterSummaryReader interface {
	SnapshotAfterSummary(ctx context.Context, sessionID, userID string, n int) (Tail, *summary.Summary, error)
}

// FoldSaveLocker is an optional capability of a FoldLocker (the
// PostgreSQL stores have it) that ends a fold in one write. Beside the
// lock's release, TryLockFoldSaving may return save, which stores a summary
// in sums (as sums.Save would, with its errors) and releases the lock in
// the same step, provided the lock is still the caller's (else it refuses
// with an error wrapping summary.ErrStale and stores nothing). save is nil
// when the locker cannot write to sums. Then, and for lockers without the
// capability, a fold saves through sums.Save and calls release: release
// must be safe to call after save.
type FoldSaveLocker interface {
	TryLockFoldSaving(ctx context.Context, sessionID string, ttl time.Duration, sums summary.Store) (release func(), save func(context.Context, summary.Summary) error, ok bool, err error)
}

// Replacer is an optional capability of a Store: it replaces a session's
// whole history in one atomic step (one transaction, or one critical
// section), the way langchaingo's ChatMessageHistory.SetMessages wants it.
// Both stores of this module have it. A Manager without it falls back to a
// delete then an append under the session's write lock: atomic within one
// process, but a replica, or another user creating the id in between, can
// slip between the two steps.
type Replacer interface {
	// Replace validates every message (see Message.Validate) and, only
	// when all are valid, makes msgs the whole history of userID's session
	// sessionID: a new incarnation (a new Epoch, so that no summary of the
	// old history applies) holding exactly msgs, still owned by userID. A
	// session that does not exist is created for userID. A session another
	// user owns returns ErrNotOwner; an invalid message ErrInvalidMessage;
	// in both cases nothing changes. The ownership check and the writes are
	// one atomic step.
	Replace(ctx context.Context, sessionID, userID string, msgs ...Message) (AppendResult, error)
}
