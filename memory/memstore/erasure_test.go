package memstore_test

import (
	"testing"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/memorytest"
	"github.com/strata-go/strata/memory/memstore"
)

// TestCapabilitiesConformance runs the Importer and Forgetter conformance
// suite on the in-memory store.
func TestCapabilitiesConformance(t *testing.T) {
	memorytest.RunCapabilities(t, func(*testing.T) memory.MessageStore { return memstore.New() })
}
