package catalog_test

import (
	"testing"

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/catalog/catalogtest"
	"github.com/strata-go/strata/memory/memstore"
	"github.com/strata-go/strata/summary"
)

// TestErasure runs the erasure scenarios on the in-memory stores and index.
func TestErasure(t *testing.T) {
	catalogtest.RunErasure(t, func(*testing.T) catalogtest.Env {
		return catalogtest.Env{Store: memstore.New(), Summaries: summary.NewInMemoryStore(0), Index: catalog.NewMemoryIndex()}
	})
}

// TestErasureRandom runs the randomized erasure test on two managers
// sharing the in-memory stores (summaries kept in their sessions).
func TestErasureRandom(t *testing.T) {
	ms := memstore.New()
	st := catalogtest.Env{Store: ms, Summaries: ms.Summaries(), Index: catalog.NewMemoryIndex()}
	catalogtest.RunErasureRandom(t, [2]catalogtest.Env{st, st})
}

// TestToolErasure: provenance is each message's own (see
// catalogtest.RunToolErasure), with either summary store.
func TestToolErasure(t *testing.T) {
	catalogtest.RunToolErasure(t, func(*testing.T) catalogtest.Env {
		ms := memstore.New()
		return catalogtest.Env{Store: ms, Summaries: ms.Summaries(), Index: catalog.NewMemoryIndex()}
	})
	catalogtest.RunToolErasure(t, func(*testing.T) catalogtest.Env {
		return catalogtest.Env{Store: memstore.New(), Summaries: summary.NewInMemoryStore(0), Index: catalog.NewMemoryIndex()}
	})
}

// TestToolCallErasure: the results answering an erased call go with it
// (see catalogtest.RunToolCallErasure), with either summary store.
func TestToolCallErasure(t *testing.T) {
	catalogtest.RunToolCallErasure(t, func(*testing.T) catalogtest.Env {
		ms := memstore.New()
		return catalogtest.Env{Store: ms, Summaries: ms.Summaries(), Index: catalog.NewMemoryIndex()}
	})
	catalogtest.RunToolCallErasure(t, func(*testing.T) catalogtest.Env {
		return catalogtest.Env{Store: memstore.New(), Summaries: summary.NewInMemoryStore(0), Index: catalog.NewMemoryIndex()}
	})
}

// TestErasureSummariesInSessions runs the erasure scenarios with the
// summaries kept in their sessions (Store.Summaries): messages and
// summary change in one critical section.
func TestErasureSummariesInSessions(t *testing.T) {
	catalogtest.RunErasure(t, func(*testing.T) catalogtest.Env {
		ms := memstore.New()
		return catalogtest.Env{Store: ms, Summaries: ms.Summaries(), Index: catalog.NewMemoryIndex()}
	})
}
