// Package record is Strata's vocabulary: the data every other package
// speaks — a stored Message (its Role, its lossless mapping to and from
// langchaingo's chat messages), a session's Summary with its Facts, their
// Category, the provenance of its narrative (SentenceSource) and the
// digests of erased values (Forgotten) — and the errors stores return. It
// plays the part langchaingo's and eino's schema packages play: it holds
// no logic beyond copying, validating and converting its own values, and
// imports only the standard library and langchaingo's llms, so the store
// contract (memory/store), the stores and the snapshot format depend on
// nothing heavier. The merge of facts, the rendering of a summary and the
// summarizers live in package summary; the store contract in memory/store.
//
// Its name is record, not schema, because memory and agent code imports
// langchaingo's schema package beside it: record.Message and
// schema.Memory then read without renaming either. Packages summary and
// memory/store keep their public names for these types as aliases
// (summary.Summary, summary.Fact, store.Message, ...), so code written
// against them compiles unchanged.
package record
