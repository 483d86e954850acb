package memory

import (
	"context"
	"errors"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// Role is the stored role of a message.
type Role string

// The stored roles. Unknown role strings read back from a store are treated
// as RoleUser, as the reference does.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleSystem    Role = "system"
	RoleTool      Role = "tool"
)

// ParseRole maps a stored role string, case-insensitively, to a Role;
// unknown strings map to RoleUser.
func ParseRole(s string) Role {
	switch Role(lowerASCII(s)) {
	case RoleAssistant:
		return RoleAssistant
	case RoleSystem:
		return RoleSystem
	case RoleTool:
		return RoleTool
	default:
		return RoleUser
	}
}

// Message is one stored message of a session. It holds everything a
// langchaingo chat message carries, losslessly, plus the store's bookkeeping.
type Message struct {
	// Seq is the message's sequence number, assigned by the store on append:
	// strictly increasing within a session (not necessarily dense) and never
	// reused for a later message of the same session id.
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
	// UserID is the user that wrote the message (set by the store).
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
	// LastSeq is the sequence number of the last message appended.
	LastSeq int64
}

// Tail is the newest part of a session.
type Tail struct {
	// Total is the number of messages the session holds.
	Total int
	// Messages are at most the requested number of newest messages, oldest
	// first.
	Messages []Message
}

// MessageStore persists the raw messages of sessions. Implementations must be
// safe for concurrent use. The in-memory store (NewInMemoryStore) and the
// PostgreSQL store (package db) implement it.
type MessageStore interface {
	// Append atomically appends msgs to the session as userID: either all
	// of them are stored, contiguously and in order, or none. The first
	// writer of a session becomes its owner; an append by another user
	// returns ErrNotOwner and stores nothing.
	Append(ctx context.Context, sessionID, userID string, msgs ...Message) (AppendResult, error)
	// Owner returns the session's owner, or "" when the session is unknown.
	Owner(ctx context.Context, sessionID string) (string, error)
	// Tail returns the message count and the newest n messages (n <= 0:
	// none), without reading the rest of the history.
	Tail(ctx context.Context, sessionID string, n int) (Tail, error)
	// Range returns the messages with afterSeq < Seq <= throughSeq, oldest
	// first; limit > 0 caps how many (the oldest ones are returned).
	Range(ctx context.Context, sessionID string, afterSeq, throughSeq int64, limit int) ([]Message, error)
	// Delete removes every message and the ownership of the session.
	// Deleting an unknown session is not an error.
	Delete(ctx context.Context, sessionID string) error
}

// Errors returned by the manager and the stores; check them with errors.Is.
var (
	// ErrNotOwner: the session belongs to another user.
	ErrNotOwner = errors.New("memory: session is owned by another user")
	// ErrInvalidMessage: a message cannot be stored as given (unknown type,
	// invalid UTF-8, NUL byte, tool result without call id, ...).
	ErrInvalidMessage = errors.New("memory: invalid message")
	// ErrMessageTooLarge: a message exceeds Config.MaxMessageBytes.
	ErrMessageTooLarge = errors.New("memory: message too large")
	// ErrClosed: the store or manager has been closed.
	ErrClosed = errors.New("memory: closed")
)

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// FoldLocker is implemented by stores that coordinate summarization across
// processes (the PostgreSQL store does). When the manager's message store or
// summary store implements it, every fold of a session first takes this
// lock, so two replicas never summarize the same session at the same time.
type FoldLocker interface {
	// TryLockFold tries to take the session's fold lock for at most ttl. ok
	// is false when another holder has it. release must be called when ok.
	TryLockFold(ctx context.Context, sessionID string, ttl time.Duration) (release func(), ok bool, err error)
}

// SessionLister is implemented by message stores that can list a user's
// sessions, newest activity first (both built-in stores do). total is the
// number of the user's sessions before pagination; limit <= 0 means no
// limit; a negative offset counts as 0.
type SessionLister interface {
	Sessions(ctx context.Context, userID string, limit, offset int) (page []SessionInfo, total int, err error)
}
