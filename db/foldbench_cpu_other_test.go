//go:build !unix

package db_test

import "time"

// processCPU is unknown here: 0.
func processCPU() time.Duration { return 0 }

// serverCPU is unknown here.
func serverCPU(string) (time.Duration, bool) { return 0, false }
