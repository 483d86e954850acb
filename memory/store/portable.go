package store

import (
	"context"
	"errors"
	"slices"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/record"
)

// ErrUnknownMessage: a message named by its sequence number is not one of
// the session's stored messages (Forgetter.Forget). It is record's.
var ErrUnknownMessage = record.ErrUnknownMessage

// ErrNoSuchFact is returned by Manager.ForgetFact when the session's
// summary holds no fact with the key. It is record's.
var ErrNoSuchFact = record.ErrNoSuchFact

// Errors of a summary save, record's: ErrStale, the store holds a summary
// of the same epoch with a higher cursor; ErrSessionGone, the session was
// deleted or re-created since the summary was made.
var (
	ErrStale       = record.ErrStale
	ErrSessionGone = record.ErrSessionGone
)

// SummaryStore is a store of summaries, one per session, apart from the
// messages: SummaryStore's methods (see there for their contract), named
// here so that the store contract needs no summarizer.
type SummaryStore interface {
	Get(ctx context.Context, sessionID string) (*record.Summary, error)
	Save(ctx context.Context, s record.Summary) error
	Delete(ctx context.Context, sessionID string) error
}

// ErrSummaryUnavailable: a Store read a session's messages but not its
// summary (a composed store whose summary store failed, see Compose and
// Store.Snapshot); the messages are good.
var ErrSummaryUnavailable = errors.New("memory: summary store unavailable")

// Importer is part of Store (and an optional capability of a Messages,
// which Compose uses): it creates a session with its history and its
// summary in one atomic step, keeping each message's CreatedAt (the
// PostgreSQL store does it in one transaction; the in-memory store in one
// critical section). memory.Manager.Import uses it.
type Importer interface {
	// Import creates sessionID owned by userID holding msgs, oldest
	// first: each gets a new sequence number, in order, and keeps its
	// CreatedAt (now when zero) and its author (UserID; the owner when
	// empty); Seq of msgs is ignored. When sum is not nil it is called,
	// within the same atomic step, with the new session's epoch and the
	// sequence numbers given to msgs (seqs[i] to msgs[i]), and the summary
	// it returns (when not nil) is stored for the session. Either
	// everything is stored or nothing is. An id in use, whoever owns it,
	// returns ErrSessionExists.
	Import(ctx context.Context, sessionID, userID string, msgs []Message, sum func(epoch int64, seqs []int64) *record.Summary) (AppendResult, error)
}

// Forgetter is part of Store (and an optional capability of a Messages,
// which Compose uses): it erases messages of a session and rewrites the
// session's summary in the same atomic step (the PostgreSQL store does it
// in one transaction). memory.Manager.Forget uses it.
type Forgetter interface {
	// Forget deletes the messages of userID's session whose sequence
	// numbers are seqs. A seq that is not one of the session's messages
	// returns ErrUnknownMessage and changes nothing; a missing session
	// ErrNotFound, another user's ErrNotOwner. Before deleting, it calls
	// clean (when not nil) with the session's stored summary (nil when
	// none), its epoch, and the messages to erase; when it returns a
	// non-nil summary that summary replaces the stored one (cursor kept).
	// The erasure of an assistant message with tool calls erases the tool
	// results answering them too (ToolResultsOf), in the same step and
	// among the messages given to clean: without their call no provider
	// accepts them, and an export of the session would not import. Either
	// all of it happens or none of it.
	Forget(ctx context.Context, sessionID, userID string, seqs []int64,
		clean func(sum *record.Summary, epoch int64, erased []Message) *record.Summary) error
}

// ToolResultsOf returns the tool results among after that answer call's
// tool calls: after are the messages that follow call in its session,
// oldest first, and the results are the run of tool messages right after
// call whose ToolCallID names one of its calls (the run stops at the first
// other message). A message without tool calls answers to nothing. A
// Forgetter erases them with their call.
func ToolResultsOf(call Message, after []Message) []Message {
	if len(call.ToolCalls) == 0 {
		return nil
	}
	var out []Message
	for _, m := range after {
		if m.Role != RoleTool {
			break
		}
		if slices.ContainsFunc(call.ToolCalls, func(tc llms.ToolCall) bool { return tc.ID == m.ToolCallID }) {
			out = append(out, m)
		}
	}
	return out
}
