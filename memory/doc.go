// Package memory is Strata's conversation manager, the one door to session
// data. It saves a session's messages (tool calls and results included)
// through a MessageStore, assembles what the model sees, fits prompts into
// one token budget, and folds old messages into a summary.Summary (facts and
// a narrative) in the background.
//
// One turn flows downward through it:
//
//	Load       read the session's tail and summary (ownership checked by the
//	           store in the same step); the policy — parity or chunked —
//	           decides the view. A stale summary is regenerated, but waited
//	           for only Config.LoadGrace; a first summary at most
//	           Config.FoldWait and never past the caller's deadline. Past
//	           that the view is the stale summary plus every message after its
//	           cursor, or the degraded view (takeLast / the unfolded tail).
//	           A chunked view that holds every unfolded message within its
//	           token budget waits for nothing: its fold runs in the
//	           background.
//	Prompt     the system prompt and the view, fitted into ContextWindowTokens
//	           − OutputReserveTokens without splitting a tool group.
//	Save       append the turn atomically; past the trigger a background fold
//	           starts (single-flight per session, a lease across processes,
//	           at most Config.MaxConcurrentFolds at once per Manager: a fold
//	           that waits for its turn covers what was saved meanwhile).
//	           A chunked session tracks its backlog between folds, so only a
//	           save that fires one of its triggers starts one.
//	Fold       summarize, merge into the ledger (summary.Apply), save only if
//	           the session was not deleted meanwhile, then tell observers.
//
// Sessions belong to their first writer (or creator); another user's session
// answers ErrNotOwner and shows nothing. The package also adapts a session to
// langchaingo's schema.Memory and schema.ChatMessageHistory (the adapters
// are package memory/langchain; memory names their types).
//
// Erasure reaches what was derived: Forget deletes messages with the facts,
// narrative sentences and catalogue entries made from them, and ForgetFact
// removes a fact for good (later folds of the old messages do not bring it
// back). Export and Import move a whole session — messages, summary, cursor
// and provenance — as a versioned JSON Snapshot between stores (the format
// is package memory/snapshot).
//
// What a store must do — the stored form of a message, the errors, the
// optional capabilities — is package memory/store, as database/sql's driver
// contract is database/sql/driver: writing a store needs it, using a
// Manager rarely does (its errors, and Append's stored-form messages).
// NewInMemoryStore's store is package memory/memstore, which also builds one
// with another bound.
package memory
