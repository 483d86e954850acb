// Package testutil holds small helpers shared by the module's tests.
package testutil

import (
	"bytes"
	"sync"
)

// Buffer is a goroutine-safe bytes.Buffer for capturing logs and output
// that background goroutines write while a test reads them.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
