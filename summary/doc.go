// Package summary holds the folded form of a conversation — a ledger of
// structured facts (key, value, category) plus a narrative — and everything
// that produces and keeps it: the Service contract and its two
// implementations (an LLM summarizer with a tolerant JSON reply parser, and
// an offline extractive summarizer), the deterministic fact-ledger merge, and
// the Store contract with a bounded in-memory store.
package summary
