//go:build !unix

package extractive_test

import "time"

// processCPU is unknown on this platform: benchmarks report wall time only.
func processCPU() time.Duration { return 0 }
