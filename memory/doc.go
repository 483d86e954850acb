// Package memory is Strata's conversation manager. It saves a session's
// messages (tool calls and results included) through a MessageStore, and
// assembles what the model sees: the newest messages verbatim (takeLast)
// while a conversation is short, and once it passes the trigger, a
// "Conversation Facts:" system message, a "Conversation Summary:" system
// message and the last RecentMessageCount messages. Older messages are folded
// into that summary by a summary.Service in the background after each save,
// one fold per session at a time, with a synchronous fallback at load time
// and a takeLast degradation when the summarizer fails. Sessions belong to
// their first writer. The package also adapts a session to langchaingo's
// schema.Memory and schema.ChatMessageHistory.
package memory
