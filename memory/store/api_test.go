package store_test

import (
	"testing"

	"github.com/strata-go/strata/internal/testutil"
)

// The store contract stays small and documented.
func TestExportedAPI(t *testing.T) {
	// 43: the one contract (Messages, Store) with Compose, its adapter over
	// a message store and a SummaryStore, ErrSummaryUnavailable for its
	// degraded reads and the summary-save errors; SnapshotReader,
	// AfterSummaryReader, FoldSaveLocker and Message's methods (now
	// record's) went; the fold journal: JournalRecord, FactChange,
	// JournalTotals, Journal, Journal.Add (one rollover for both stores),
	// Journaler, WithJournalEdit, JournalEditOf (the edit an erasure or a
	// summary save applies in its own step); WithJournalRecord and
	// JournalRecordOf (that edit is one record appended, which a database
	// appends as a row instead of rewriting the journal).
	testutil.CheckExports(t, ".", 45)
}
