package db_test

import (
	"testing"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/memorytest"
)

// TestJournalConformance runs the store.Journaler suite on PostgreSQL:
// the journal is bounded, goes with its session (the trigger of
// migration 13) and takes an erasure's edit in the erasure's transaction.
func TestJournalConformance(t *testing.T) {
	t.Parallel()
	d := dbtest.New(t)
	st := db.NewMessageStore(d)
	memorytest.RunJournal(t, func(*testing.T) memory.MessageStore { return st })
}
