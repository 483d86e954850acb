package store_test

import (
	"testing"

	"github.com/strata-go/strata/internal/testutil"
)

// The store contract stays small and documented.
func TestExportedAPI(t *testing.T) {
	testutil.CheckExports(t, ".", 35) // + ParticipantLister, NormalTime, ToolResultsOf
}
