package catalog_test

import (
	"testing"

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/catalog/catalogtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

func TestMemoryConformance(t *testing.T) {
	catalogtest.Run(t, func(t *testing.T) catalogtest.Env {
		return catalogtest.Env{
			Store:     memory.NewInMemoryStore(),
			Summaries: summary.NewInMemoryStore(0),
			Index:     catalog.NewMemoryIndex(),
		}
	})
}
