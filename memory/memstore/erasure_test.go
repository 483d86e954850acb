package memstore_test

import (
	"testing"

	"github.com/strata-go/strata/memory/memorytest"
	"github.com/strata-go/strata/memory/memstore"
	"github.com/strata-go/strata/memory/store"
)

// TestCapabilitiesConformance runs the Importer and Forgetter conformance
// suite on the in-memory store.
func TestCapabilitiesConformance(t *testing.T) {
	memorytest.RunCapabilities(t, func(*testing.T) store.Store { return memstore.New() })
}
