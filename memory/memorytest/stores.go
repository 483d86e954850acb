package memorytest

import (
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// Stores are a message store and the summary store that goes with it, for
// RunSummaryCapabilities.
type Stores struct {
	Messages  memory.MessageStore
	Summaries summary.Store
}
