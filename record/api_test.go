package record_test

import (
	"testing"

	"github.com/strata-go/strata/internal/testutil"
)

// The vocabulary stays small and documented: the message and its
// conversions, the summary and its parts, the errors stores return.
func TestExportedAPI(t *testing.T) {
	testutil.CheckExports(t, ".", 45)
}
