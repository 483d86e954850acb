package memory_test

import (
	"testing"

	"github.com/strata-go/strata/internal/testutil"
)

// The package keeps its API from growing, every name documented. The
// langchaingo adapters' methods live in memory/langchain and the snapshot's
// wire types in memory/snapshot (memory names their types); the store
// contract — the stored message, the errors, the optional capabilities —
// lives in package memory/store, as database/sql's lives in its driver
// package, so users of a Manager do not meet it.
func TestExportedAPI(t *testing.T) {
	// 80: + Manager.SharedSessions, Manager.WriteExport; ForModel,
	// ObserveUsage: the budget calibrated per model from the provider's
	// counts; Mode and its six values: History.Mode typed, the values its
	// doc already promised; Manager.Observe: a catalogue subscribes to the
	// built manager; Session and Manager.Session with the session methods
	// without the identity arguments (Load, SaveTurn, SaveMessages,
	// Messages, Summary, Delete, Forget, ForgetFact, Export): the handle
	// that names a session and its user once; Manager.Journal: the fold
	// journal.
	testutil.CheckExports(t, ".", 80)
}
