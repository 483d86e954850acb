// Package catalog is Strata's conversation catalogue: it lists a user's
// conversations with titles and previews, and finds one again from what it
// was about ("let's go back to the chat where we talked about the refund"),
// on the in-memory stores and on PostgreSQL alike.
//
// # Use
//
//	store, sums := memory.NewInMemoryStore(), summary.NewInMemoryStore(0)
//	cat := catalog.New(store, sums, catalog.NewMemoryIndex())
//	defer cat.Close()
//	mgr, err := memory.NewManager(store, cfg,
//		memory.WithSummaries(sums, summary.NewExtractiveService()),
//		memory.WithFoldObserver(cat.Observer()))
//
//	page, err := cat.List(ctx, userID, 20, 0)            // newest activity first
//	matches, err := cat.Search(ctx, userID, request, 5)  // scored, best first
//	if winner, ambiguous := cat.Decide(matches); winner != nil {
//		// switch to winner.SessionID
//	} else if ambiguous {
//		// ask the user to choose among catalog.Contenders(matches, margin)
//	}
//
// On PostgreSQL use db.NewMessageStore, db.NewSummaryStore and
// db.NewCatalogIndex over the same pool (the index then lists sessions and
// titles in one query, and documents go with their sessions).
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
// session's newest 400 messages; they carry what an offline summary leaves
// out (the extractive summarizer's narrative is capped at 600 characters).
//
// # When documents are refreshed
//
// Never on the manager's reply path. After each fold the manager calls the
// Observer in the background with the saved summary; List schedules
// background refreshes for sessions that have no document yet (they are
// below the fold trigger), that grew by a quarter without a summary, or
// whose embedding came from another embedder; Refresh and Reindex refresh
// on demand. Failures — an embedder or title model that errs or panics, an
// index that is down — are logged (log/slog) and never reach the
// conversation; the title is stored even when embedding fails, and the
// next refresh (or Reindex) retries.
//
// # Titles
//
// A TitleFunc names the conversation from its summary, or from its first
// user messages while it has none: DefaultTitle is offline and
// deterministic (summary.Title's rules); LLMTitle asks a langchaingo model
// for at most eight words. A title is regenerated only when the
// conversation's focus changed: when the Jaccard similarity between the
// fingerprint it was made from (the summary's most frequent terms, stored
// with the title) and the current one falls below a threshold (0.5 by
// default, WithTitleThreshold), or when the first summary replaces the
// first turns. The title is also written into the summary
// (summary.Summary.Title; conversation_summaries.title on PostgreSQL)
// unless WithoutSummaryTitles.
//
// # Search
//
// Embedder is langchaingo's embeddings.Embedder method set, so
// embeddings.NewEmbedder over llms/openai or llms/googleai plugs in with
// WithEmbedder (pass embeddings.WithStripNewLines(false) to keep the stored
// text byte for byte the text embedded). The default, NewLexicalEmbedder,
// needs no model and no network, and is honestly lexical, not semantic: it
// hashes a conversation's words (stop words removed, lightly stemmed) into
// 1024 dimensions, and finds a conversation only through words it shares
// with the query — "refund" finds "refunds", never "money back". Its
// candidates are re-scored exactly from their stored texts (TextScorer).
//
// Matches are ranked by
//
//	score = 0.8 × similarity + 0.2 × recency,  recency = 0.5 ^ (age / 30 days)
//
// (WithRanking), where age is the time since the session's last activity,
// and dropped below a similarity floor (WithMinSimilarity). Decide reports
// one clear winner when the best score beats the second by a margin
// (WithMargin), and otherwise that the user should choose. Only the user's
// own sessions are ever returned: indexes filter by user, and Search checks
// every match's owner in the message store.
//
// On the LoCoMo test (50 sessions of 10 long conversations, run through a
// manager with the extractive summarizer, one user) the offline embedder
// ranks the right session first for 82% of LoCoMo's own per-session event
// descriptions (96% in the top 3; a clear winner for 64% of them, always
// the right one), for 67% of single events and for 62% of LoCoMo's
// question-answer questions whose evidence lies in one session.
//
// # Deleting
//
// PostgreSQL documents are deleted with their session (ON DELETE CASCADE).
// A MemoryIndex does not see deletions: call Catalog.Delete after
// memory.Manager.DeleteSession. Until then Search skips the session anyway
// (its owner is gone) and drops its document.
package catalog
