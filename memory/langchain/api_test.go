package langchain_test

import (
	"testing"

	"github.com/strata-go/strata/internal/testutil"
)

// The adapters export what langchaingo's interfaces and option names ask
// for, every name documented.
func TestExportedAPI(t *testing.T) {
	testutil.CheckExports(t, ".", 23)
}
