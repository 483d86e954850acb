package memory

import (
	"errors"

	"github.com/strata-go/strata/memory/memstore"
	"github.com/strata-go/strata/memory/store"
)

// MessageStore is what NewManager takes: a store of sessions' messages
// (store.Messages). The stores of this module — NewInMemoryStore, and
// package db for PostgreSQL — implement the whole storage contract,
// store.Store, keeping each session's messages, summary and fold lease
// together; the manager uses such a store alone, and composes any other
// with the summary store given to WithSummaries (store.Compose, whose
// documentation lists the fallbacks). The contract lives in package
// memory/store, as database/sql's lives in database/sql/driver; users of a
// Manager need it only to write a store.
type MessageStore = store.Messages

// ErrNotOwner is returned when a user loads, saves or deletes a session
// that another user owns. It is store.ErrNotOwner, so errors.Is matches
// either name. HTTP layers answer it exactly as they answer
// store.ErrNotFound, so that ids of other users' sessions cannot be probed.
var ErrNotOwner = store.ErrNotOwner

// ErrClosed is returned by a Manager after Close.
var ErrClosed = errors.New("memory: closed")

// NewInMemoryStore returns an empty MessageStore that keeps sessions in
// process memory: a development store, for tests, demos and single-process
// tools. It holds at most 10 000 sessions, 1 000 per user, never at another
// user's cost: past a bound a new session evicts the least recently used
// session of the same user, and a user who holds none gets
// store.ErrStoreFull; memstore.New builds one with other bounds, a logger
// or a function told of its evictions.
// Nothing survives a restart: use package db in production.
func NewInMemoryStore() *memstore.Store { return memstore.New() }
