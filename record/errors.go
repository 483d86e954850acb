package record

import "errors"

// Errors returned by the stores, and passed on by the manager; check them
// with errors.Is. Packages memory/store and summary re-export them under
// the same names.
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
	// ErrUnknownMessage: a message named by its sequence number is not one
	// of the session's stored messages (a store's Forget).
	ErrUnknownMessage = errors.New("memory: no such message in the session")
	// ErrNoSuchFact is returned by Manager.ForgetFact when the session's
	// summary holds no fact with the key.
	ErrNoSuchFact = errors.New("memory: no such fact")
	// ErrStale: a summary save wrote nothing because the store holds a
	// summary of the same epoch with a higher cursor.
	ErrStale = errors.New("summary: a newer summary is already stored")
	// ErrSessionGone: a summary save wrote nothing because the session was
	// deleted or re-created after the summary was made.
	ErrSessionGone = errors.New("summary: session deleted or re-created; summary not saved")
	// ErrNoSessionID reports a save of a summary without a SessionID.
	ErrNoSessionID = errors.New("summary: summary has no session id")
)
