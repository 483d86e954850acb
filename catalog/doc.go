// Package catalog is Strata's conversation catalogue: it lists a user's
// conversations with titles and previews, and finds one again from what it
// was about ("let's go back to the chat where we talked about the refund"),
// on the in-memory stores and on PostgreSQL alike.
//
// # Use
//
// The catalogue reads sessions, messages and summaries only through a
// memory.Manager, and follows its folds and deletes: New subscribes it to
// the manager it is given (memory.Manager.Observe):
//
//	mgr, err := memory.NewManager(store, cfg,
//		memory.WithSummaries(sums, summary.NewExtractiveService()))
//	c, err := catalog.New(mgr, catalog.NewMemoryIndex())
//	defer c.Close() // before mgr.Close
//
//	page, err := c.List(ctx, userID, 20, 0)           // newest activity first
//	res, err := c.Search(ctx, userID, request, 5)     // scored, best first
//	switch {
//	case res.Best != nil: // switch to res.Best.SessionID
//	case res.Ambiguous:   // ask the user to choose among res.Contenders
//	}
//
// Folded and Deleted are plain methods, which tests may call directly; a
// catalogue that New subscribed must not be wired as an observer again. On PostgreSQL, use db.NewCatalogIndex over the
// pool of the manager's stores: it lists sessions with their titles in one
// query, and its documents go with their sessions.
//
// # Documents
//
// The catalogue keeps one Doc per session in an Index: a title, and an
// embedding stored next to the exact plain text it was computed from —
// never an embedding without its readable twin — with the embedder's name.
// For a session with a summary the text is
//
//	Title: <title>
//	Conversation Facts:
//	- key: value
//	Conversation Summary:
//	<narrative>
//	Keywords: <the conversation's most frequent content words>
//
// and for one without summary (yet), the title, its first user messages
// ("User: …" lines) and the keywords line. The keywords are drawn from the
// session's first 400 messages and the newest ones its summary does not
// cover yet; they carry what an offline summary leaves out (the extractive
// summarizer's narrative is capped at 600 characters).
//
// # Refreshes
//
// Never on the manager's reply path. Folded (the fold observer) schedules a
// refresh after each summary the manager stored; List schedules refreshes
// for sessions that have no document yet (they are below the fold
// trigger), that grew by a quarter without a summary, whose embedding
// failed or came from another embedder; Reindex refreshes at once.
// Background refreshes run one at a time per session (a request during a
// refresh runs it again afterwards), at most four at once, on one runner
// that Close stops within its deadline. A refresh reads the session's
// current summary and messages through the manager, as its owner.
// Failures — an embedder or title model that errs or panics, an index that
// is down — are logged and never reach the conversation; the title is
// stored even when embedding fails, and a later refresh retries.
//
// # Deleted sessions
//
// A deleted session's text is never indexed. Deleted (the delete observer)
// drops its document and pinned title. A refresh that read the session
// before the delete writes nothing after it: the PostgreSQL index writes a
// document in one statement guarded by the session's live row (its owner,
// and its epoch — the incarnation the summary was made for — or, for a
// document built from messages alone, the last message it read, which no
// later incarnation holds), and the in-memory index drops any write whose
// session was deleted after the refresh began, in the same critical
// section as the delete.
//
// # Titles
//
// The title is generated from the summary, or from the first user messages
// while there is none: offline and deterministically by default,
// by a langchaingo model with WithTitleModel. It is regenerated only when
// the conversation's focus changed: when the Jaccard similarity between the
// salient terms it was made from and the current ones falls below one
// half, or when the first summary replaces the first turns. A title given
// with SetTitle (for example when a client creates the session) is pinned:
// refreshes keep it, and it goes with the session when it is deleted.
//
// # Owners
//
// The catalogue files every document, title and listing under the owner
// the manager stores the session under, by the manager's own mapping: a
// shared session has one document and one title for all its
// participants, which any of them may pin, and appears in every user's
// listing and search; any other session is its owner's alone.
//
// # Search
//
// Embedder is langchaingo's embeddings.Embedder method set; NewEmbedder
// adapts a langchaingo embedding client (llms/openai, llms/googleai, …) so
// that the text stored is byte for byte the text embedded. The default,
// NewLexicalEmbedder, needs no model and no network, and is honestly
// lexical, not semantic: it hashes a conversation's words (stop words
// removed, lightly stemmed) into 1024 dimensions, and finds a conversation
// only through words it shares with the query — "refund" finds "refunds",
// never "money back". Its candidates are re-scored exactly from their
// stored texts.
//
// Matches are ranked by
//
//	score = 0.8 × similarity + 0.2 × recency,  recency = 0.5 ^ (age / 30 days)
//
// (WithRanking), where age is the time since the session's last activity,
// and dropped below a similarity floor (WithThresholds). Results tells one
// clear winner, whose score beats the second's by a margin, from a choice
// to put to the user. Only the user's own sessions, and the shared
// sessions (memory.Config.SharedSessionPrefixes) the user wrote in — every
// shared session for the users of memory.Config.SharedSessionViewers — are
// ever listed or returned, never every shared session to every user (a
// shared session is still read by its id by anyone, titles included): the
// index filters by owner (a Lister also by participant), and the matches
// of an index that does not see sessions itself (the in-memory one) are
// re-checked through the manager.
//
// How well the offline embedder finds the right conversation is measured
// on LoCoMo's conversations by TestLoCoMoSearch (go test -run
// TestLoCoMoSearch -v ./catalog/, which logs its rates and holds them to
// floors); the library's measured figures are in bench/REPORT.md.
package catalog
