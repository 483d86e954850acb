package memory

// trigger names why a fold runs. Its values are the strings logs and
// metrics carry (the "trigger" attribute of a fold's record, the
// strata.memory.folds counter).
type trigger string

const (
	// triggerNone: no fold is due.
	triggerNone trigger = ""
	// triggerLoad: a load cannot show its view as it should without the
	// fold, so it waits for it a bounded time.
	triggerLoad trigger = "load"
	// triggerSave: a save (or a re-run a save asked for) folds in the
	// background.
	triggerSave trigger = "save"
	// chunked's triggers, in their priority: the token threshold, more
	// than K+B unfolded messages, SafetyTurns user turns.
	triggerToken    trigger = "token"
	triggerOverflow trigger = "overflow"
	triggerSafety   trigger = "safety"
)
