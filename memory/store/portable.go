package store

import (
	"context"
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

// Importer is an optional capability of a Store: it creates a session with
// its history in one atomic step, keeping each message's CreatedAt, and,
// when it keeps the sessions' summaries too, stores the session's summary
// in the same step (the PostgreSQL store does it in one transaction; the
// in-memory store in one critical section). memory.Manager.Import uses it.
//
// Without it, an import creates the session, appends the messages (whose
// CreatedAt the store then sets to now) and saves the summary, in three
// steps, and deletes the session again when a later step fails.
type Importer interface {
	// ImportsSummariesOf reports whether Import stores a summary where
	// sums keeps it. When false, Import is given no summary to store, and
	// the caller saves it to sums afterwards.
	ImportsSummariesOf(sums SummaryStore) bool
	// Import creates sessionID owned by userID holding msgs, oldest
	// first: each gets a new sequence number, in order, and keeps its
	// CreatedAt (now when zero) and its author (UserID; the owner when
	// empty); Seq of msgs is ignored. When
	// sum is not nil it is called, within the same atomic step, with the
	// new session's epoch and the sequence numbers given to msgs
	// (seqs[i] to msgs[i]), and the summary it returns (when not nil) is
	// stored for the session. Either everything is stored or nothing is.
	// An id in use, whoever owns it, returns ErrSessionExists.
	Import(ctx context.Context, sessionID, userID string, msgs []Message, sum func(epoch int64, seqs []int64) *record.Summary) (AppendResult, error)
}

// Forgetter is an optional capability of a Store: it erases messages of a
// session and, when it keeps the sessions' summaries too, rewrites the
// session's summary in the same atomic step (the PostgreSQL store does it
// in one transaction). memory.Manager.Forget needs it; without it Forget
// returns an error wrapping errors.ErrUnsupported.
type Forgetter interface {
	// ForgetsSummariesOf reports whether Forget rewrites the summary
	// where sums keeps it. When false, Forget's clean is given a nil
	// summary and its result is ignored; the caller rewrites the summary
	// in sums itself, before the erasure.
	ForgetsSummariesOf(sums SummaryStore) bool
	// Forget deletes the messages of userID's session whose sequence
	// numbers are seqs. A seq that is not one of the session's messages
	// returns ErrUnknownMessage and changes nothing; a missing session
	// ErrNotFound, another user's ErrNotOwner. Before deleting, it calls
	// clean with the session's stored summary (nil when none or when
	// ForgetsSummariesOf is false), its epoch, and the messages to erase;
	// when it returns a non-nil summary that summary replaces the stored
	// one (cursor kept). The erasure of an assistant message with tool
	// calls erases the tool results answering them too (ToolResultsOf), in
	// the same step and among the messages given to clean: without their
	// call no provider accepts them, and an export of the session would
	// not import. Either all of it happens or none of it.
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
