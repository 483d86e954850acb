// Package bg runs background work for Strata's manager and catalogue: one
// small runner that starts tasks, waits for them (Flush) and stops them
// (Close) within a deadline, so that no caller ever waits on a task that
// ignores cancellation for longer than it asked to.
package bg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// ErrClosed is returned by Go once the runner is closed.
var ErrClosed = errors.New("bg: runner closed")

// Runner runs tasks on their own goroutines under one parent context that
// Close cancels. The zero value is not usable; call New.
type Runner struct {
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	closed  bool
	pending int
	idle    chan struct{} // closed when pending drops to 0
}

// New returns a runner; log receives task panics (nil: slog.Default()).
func New(log *slog.Logger) *Runner {
	if log == nil {
		log = slog.Default()
	}
	r := &Runner{log: log, idle: make(chan struct{})}
	close(r.idle)
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

// Context is the parent context of every task; Close cancels it.
func (r *Runner) Context() context.Context { return r.ctx }

// Go runs fn on a new goroutine with the runner's context. A panic in fn is
// recovered and logged. It returns ErrClosed, and runs nothing, once Close
// has been called.
func (r *Runner) Go(name string, fn func(ctx context.Context)) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	if r.pending == 0 {
		r.idle = make(chan struct{})
	}
	r.pending++
	r.mu.Unlock()
	go func() {
		defer r.done()
		defer func() {
			if p := recover(); p != nil {
				r.log.Error("strata: background task panicked", "task", name, "panic", fmt.Sprint(p))
			}
		}()
		fn(r.ctx)
	}()
	return nil
}

func (r *Runner) done() {
	r.mu.Lock()
	r.pending--
	if r.pending == 0 {
		close(r.idle)
	}
	r.mu.Unlock()
}

// Pending is the number of tasks started and not yet finished.
func (r *Runner) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending
}

// Flush returns when no task is running (tasks started meanwhile are waited
// for too), or ctx's error when ctx ends first.
func (r *Runner) Flush(ctx context.Context) error {
	for {
		r.mu.Lock()
		if r.pending == 0 {
			r.mu.Unlock()
			return nil
		}
		idle := r.idle
		r.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close refuses new tasks, cancels the running ones and waits for them
// until ctx ends. Tasks that ignore cancellation are abandoned then: Close
// returns an error saying how many were still running (callers guard what
// such a task may still do, e.g. with Closed). Close is idempotent.
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	if err := r.Flush(ctx); err != nil {
		return fmt.Errorf("bg: %d background task(s) still running after cancellation: %w", r.Pending(), err)
	}
	return nil
}

// Closed reports whether Close has been called.
func (r *Runner) Closed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}
