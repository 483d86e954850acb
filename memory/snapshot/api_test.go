package snapshot_test

import (
	"testing"

	"github.com/strata-go/strata/internal/testutil"
)

// The snapshot format's API stays what the JSON holds, every name documented.
func TestExportedAPI(t *testing.T) {
	testutil.CheckExports(t, ".", 13)
}
