package server

import (
	"testing"

	"github.com/strata-go/strata/db/dbtest"
)

// TestCitusServeLoad is TestPooledLoadDirect on a distributed schema on
// Citus (CITUS_URL; skipped without): strata serve's 24 concurrent
// sessions × 30 turns with background folds and sessions created, loaded
// and deleted beside them, zero failed calls, no foreign text, every
// message stored.
func TestCitusServeLoad(t *testing.T) {
	runPooledLoad(t, dbtest.NewCitusSchema(t).URL)
}
