package memstore_test

import (
	"testing"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/memorytest"
	"github.com/strata-go/strata/memory/memstore"
)

func TestJournalConformance(t *testing.T) {
	memorytest.RunJournal(t, func(*testing.T) memory.MessageStore { return memstore.New() })
}
