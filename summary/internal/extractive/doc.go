// Package extractive is the offline extractive summarizer behind
// summary.NewExtractiveService and summary.ExtractFacts: deterministic, no
// LLM. It finds facts in messages with patterns (identifiers, contact
// details, addresses, amounts, dates, stated preferences, JSON leaves of
// tool results and tool-call arguments) as English, Korean, Japanese,
// Chinese and continental European users write them, keys them so that
// they fold into the existing ledger, and picks the conversation's salient
// sentences for the narrative, memoising each message's scan.
//
// Package summary imports this one, so this one cannot import summary: it
// takes and returns its own small types (Input, Output, Fact), which
// summary adapts, and shares the spelling of fact keys with summary
// through package summary/internal/factkey. What summary's vocabulary
// knows that this package needs (which keys are contact or identity keys)
// is passed in as a Protected function. Behaviour is documented on
// summary.NewExtractiveService and summary.ExtractFacts.
package extractive
