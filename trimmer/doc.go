// Package trimmer fits a langchaingo conversation into a model's context
// window. It estimates tokens (a memoised, script-aware heuristic by default,
// or exact tiktoken counts with the embedded offline BPE files), computes the
// budget left after the system prompt, the output reserve and the tool
// definitions, and drops the oldest history first while keeping the leading
// system messages (facts and narrative) and the last user message, and never
// splitting an assistant tool-call message from its tool results; what still
// does not fit is cut, each cut text ending with TruncationMarker, so the
// result stays within the budget whenever anything can. It is the one
// fitting algorithm of the module. Validate checks a message list against
// the ordering rules chat providers enforce, and every list Trim returns
// passes it unless the input already had a system message after a
// non-system one.
package trimmer
