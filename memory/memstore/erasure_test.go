package memstore_test

import (
	"testing"

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/memory/memorytest"
	"github.com/strata-go/strata/memory/memstore"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// TestErasure runs the erasure scenarios on the in-memory stores.
func TestErasure(t *testing.T) {
	memorytest.RunErasure(t, func(*testing.T) memorytest.Stores {
		return memorytest.Stores{Messages: memstore.New(), Summaries: summary.NewInMemoryStore(0), Index: catalog.NewMemoryIndex()}
	})
}

// TestCapabilitiesConformance runs the Importer and Forgetter conformance
// suite on the in-memory store.
func TestCapabilitiesConformance(t *testing.T) {
	memorytest.RunCapabilities(t, func(*testing.T) store.Store { return memstore.New() })
}

// TestErasureRandom runs the randomized erasure test on two managers
// sharing the in-memory stores (summaries kept in their sessions).
func TestErasureRandom(t *testing.T) {
	ms := memstore.New()
	st := memorytest.Stores{Messages: ms, Summaries: ms.Summaries(), Index: catalog.NewMemoryIndex()}
	memorytest.RunErasureRandom(t, [2]memorytest.Stores{st, st})
}

// TestToolErasure: provenance is each message's own (see
// memorytest.RunToolErasure), with either summary store.
func TestToolErasure(t *testing.T) {
	memorytest.RunToolErasure(t, func(*testing.T) memorytest.Stores {
		ms := memstore.New()
		return memorytest.Stores{Messages: ms, Summaries: ms.Summaries(), Index: catalog.NewMemoryIndex()}
	})
	memorytest.RunToolErasure(t, func(*testing.T) memorytest.Stores {
		return memorytest.Stores{Messages: memstore.New(), Summaries: summary.NewInMemoryStore(0), Index: catalog.NewMemoryIndex()}
	})
}

// TestToolCallErasure: the results answering an erased call go with it
// (see memorytest.RunToolCallErasure), with either summary store.
func TestToolCallErasure(t *testing.T) {
	memorytest.RunToolCallErasure(t, func(*testing.T) memorytest.Stores {
		ms := memstore.New()
		return memorytest.Stores{Messages: ms, Summaries: ms.Summaries(), Index: catalog.NewMemoryIndex()}
	})
	memorytest.RunToolCallErasure(t, func(*testing.T) memorytest.Stores {
		return memorytest.Stores{Messages: memstore.New(), Summaries: summary.NewInMemoryStore(0), Index: catalog.NewMemoryIndex()}
	})
}

// TestErasureSummariesInSessions runs the erasure scenarios with the
// summaries kept in their sessions (Store.Summaries): messages and
// summary change in one critical section.
func TestErasureSummariesInSessions(t *testing.T) {
	memorytest.RunErasure(t, func(*testing.T) memorytest.Stores {
		ms := memstore.New()
		return memorytest.Stores{Messages: ms, Summaries: ms.Summaries(), Index: catalog.NewMemoryIndex()}
	})
}
