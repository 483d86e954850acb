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
	testutil.CheckExports(t, ".", 61) // + Manager.Journal: the fold journal; Manager.SharedSessions, Manager.WriteExport; ForModel, ObserveUsage: the budget calibrated per model from the provider's counts
}
