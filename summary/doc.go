// Package summary holds the folded form of a conversation — a ledger of
// structured facts (key, value, category) plus a narrative — and everything
// that produces and keeps it: the Service contract and its two
// implementations (an LLM summarizer with a tolerant JSON reply parser, and
// an offline extractive summarizer, whose pattern rules and sentence
// scoring live in summary/internal/extractive), the deterministic
// fact-ledger merge, and the Store contract with a bounded in-memory store.
// The data itself — Summary, Fact, Category, SentenceSource, Forgotten —
// is package record's, the vocabulary the stores share without compiling
// any of this; the names here are aliases of it.
//
// # The fact ledger
//
// Whatever the summarizer, its facts reach the stored summary through one
// merge (Apply, which calls MergeFacts), so the same rules hold for the LLM
// and the extractive summarizer. The ledger exists so that an order number
// said early is still in front of the model hundreds of turns later; its
// rules say what is kept, what is replaced and what goes first.
//
// Provenance. Every fact records the message sequence numbers where its
// current value was first and last seen (FirstSeq, LastSeq) and how many
// folds reported it (Mentions). A mention refreshes a fact. Provenance also
// orders updates: a value read from older messages than the current one —
// as when a re-summarization from the originals reads the first messages
// again — never replaces it. Exact provenance is separate: Fact.Sources and
// Summary.SentenceSources name the messages (by sequence number, from
// Request.Seqs) that state each value and narrative sentence; the
// extractive summarizer records them, an LLM does not. Erase removes what
// only erased messages state and keeps what a surviving message states; a
// summary without exact provenance touched by an erasure is emptied, to be
// rebuilt by the next fold, since nothing in it can be trusted not to
// carry the erased content, whatever the summarizer wrote. Forgotten keeps
// ForgetFact's values out of later folds as keyed digests.
//
// Slots. Keys belong to families (FamilyOf; the vocabulary table in
// families.go lists them with their aliases: name, phone, email,
// delivery_address, order_id, case_id, sku, amount, price, date,
// preference, …; a numeric suffix such as price_26 keeps the family).
// Single-valued families — a person's name, phone, email, addresses, a
// status — are slots: the ledger holds one current value, and a new value,
// under any key of the family (phone_number, new_phone, customer_phone),
// supersedes it. The old value is kept as Fact.Previous and is never
// rendered as a second current fact; RenderOptions.ShowPrevious shows it on
// the same line as "(previously …)", off by default as in arc-reactor.
// A key that embeds a record's id ("gift_card_3481935_id") belongs to the
// family of the key without it.
//
// What the user states. A fact may be marked Stated: the user gave the
// value about themselves (a summarizer says so; the extractive one marks
// what it finds in user messages). Who the user is and how to reach them
// is what they say: a contact or identity value the user stated is
// replaced only by another the user states, or by an update naming it,
// never by one from the assistant or a tool result (another customer's
// profile, say).
//
// Importance and caps. When the ledger is over a cap, facts go in a
// deterministic drop order: everything else before what the user stated
// (of a kind that is not incidental); then lower importance first
// (incidental keys, then context such as dates, prices quoted and flight
// numbers, then amounts, reference ids, what the user states about
// themselves or wants, contact details); within a tier a family's anchor
// — its member seen first, usually what the conversation is about — goes
// after the others, then the least recently seen, the least mentioned and
// the earliest in the ledger go first. The ledger holds at most MaxFacts facts and the rendered facts
// block stays within TokenBudget tokens; when either is exceeded, the
// members of a multi-valued family beyond its share
// (MergeOptions.MaxPerFamily) go before anything else, so one kind of
// chatter (price_*, flight_number_*) can fill free room but cannot flush
// the rest.
//
// Pins. Pinned facts (Fact.Pinned, set by a caller or a summarizer and
// sticky, or matched by a MergeOptions.PinnedKeys pattern) and identity
// facts (name, user or account id, date of birth — every one a slot, so
// there are few) are never evicted and never removed by a summarizer. The
// caps stop there: when only protected facts remain, the merge keeps them
// even over the budget, so every drop loop ends (the hard stop).
//
// The merge protocol. A value that is empty, null, missing or a
// placeholder ("unknown", "not mentioned", "N/A", "none"; IsPlaceholder)
// changes nothing. A fact is removed only by an explicit instruction
// (Fact.Remove, "remove": true in a reply), which the LLM prompt documents.
// An update lands on the existing fact when it uses the same key, names the
// value it replaces, belongs to the same slot, or repeats the same value;
// the prompt lists the existing keys and asks for them to be reused. A
// reply that is not the expected JSON object is an error (ErrNotJSON,
// ErrUnparseable, ErrEmptyReply), never a narrative, so a fold that gets
// one fails and is retried later with the summary so far intact. The
// narrative is capped in tokens at a sentence boundary (CapNarrative).
//
// # Summarizer providers
//
// Summarizer providers register a Factory under a name (Register), as
// database/sql drivers do: a provider package (providers/gemini,
// providers/openai) registers itself in its init function, so that a
// program selects the providers it links by importing them, and
// configuration code (package autoconfig) builds the one it names
// (LookupProvider) from Settings.
package summary
