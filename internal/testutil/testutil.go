// Package testutil holds small helpers shared by the module's tests.
package testutil

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// Buffer is a goroutine-safe bytes.Buffer for capturing logs and output
// that background goroutines write while a test reads them. A test waits
// for output with Await or Snapshot, which wake on the next Write rather
// than poll.
type Buffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed by the next Write; nil: nobody waits
}

// Write appends p.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.written != nil {
		close(l.written)
		l.written = nil
	}
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Snapshot returns everything written so far and a channel closed by the
// next Write, taken together so that no write falls between them.
func (l *Buffer) Snapshot() (string, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.written == nil {
		l.written = make(chan struct{})
	}
	return l.b.String(), l.written
}

// Await waits until what was written holds substr and returns it; after
// timeout (a bound on a wait that should end long before, never a pause)
// it fails t.
func (l *Buffer) Await(t testing.TB, timeout time.Duration, substr string) string {
	t.Helper()
	expired := time.NewTimer(timeout)
	defer expired.Stop()
	for {
		s, written := l.Snapshot()
		if strings.Contains(s, substr) {
			return s
		}
		select {
		case <-written:
		case <-expired.C:
			t.Fatalf("%q not written within %v; written:\n%s", substr, timeout, l.String())
		}
	}
}
