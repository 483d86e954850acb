package memory_test

import (
	"testing"

	"github.com/strata-go/strata/internal/testutil"
)

// The package keeps its API from growing, every name documented. Of its
// exported identifiers, about half are fixed by langchaingo: the
// schema.Memory and schema.ChatMessageHistory adapters (their types, the
// methods those interfaces require, langchaingo's option names). The store
// contract — the stored message, the errors, the optional capabilities —
// lives in package memory/store, as database/sql's lives in its driver
// package, so users of a Manager do not meet it.
func TestExportedAPI(t *testing.T) {
	testutil.CheckExports(t, ".", 82)
}
