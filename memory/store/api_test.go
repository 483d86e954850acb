package store_test

import (
	"testing"

	"github.com/strata-go/strata/internal/testutil"
)

// The store contract stays small and documented.
func TestExportedAPI(t *testing.T) {
	testutil.CheckExports(t, ".", 43) // + the fold journal: JournalRecord, FactChange, JournalTotals, Journal, Journal.Add (one rollover for both stores), Journaler, WithJournalEdit, JournalEditOf (the edit an erasure applies in its own step); ParticipantLister, NormalTime, ToolResultsOf
}
