package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/strata-go/strata/summary"
)

// errSummarizerTimeout: a summarizer call outlived Config.SummarizeTimeout.
var errSummarizerTimeout = errors.New("memory: summarizer did not answer in time")

// summarize calls the summarizer svc (the manager's, or the offline one
// past a session's token budget) with a deadline of
// Config.SummarizeTimeout and returns its answer, or an error once the
// deadline passes or the manager closes, even if the summarizer ignores its
// context: the fold then ends and releases its lock, and the abandoned
// call's late result is discarded. A fold cancelled otherwise (a delete,
// CancelSummarization) still waits for its call, at most until the
// deadline, so that folds of one session do not overlap. A panic in the
// summarizer is an error too.
func (e *engine) summarize(ctx context.Context, svc summary.Service, req summary.Request) (summary.Result, error) {
	timeout := e.cfg.SummarizeTimeout
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	type outcome struct {
		res summary.Result
		err error
	}
	done := make(chan outcome, 1) // never blocks a late summarizer
	e.calls.start()
	go func() {
		defer e.calls.end()
		defer func() {
			if v := recover(); v != nil {
				done <- outcome{err: fmt.Errorf("memory: summarizer panicked: %v", v)}
			}
		}()
		res, err := svc.Summarize(cctx, req)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-deadline.C:
		if err := ctx.Err(); err != nil {
			return summary.Result{}, err
		}
		return summary.Result{}, fmt.Errorf("%w (%s)", errSummarizerTimeout, timeout)
	case <-e.closing:
		return summary.Result{}, ErrClosed
	}
}

// callTracker counts the summarizer calls still running, abandoned ones
// included, so that Close can tell whether one outlived it.
type callTracker struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n == 0
}

func (c *callTracker) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.idle = make(chan struct{})
	}
	c.n++
}

func (c *callTracker) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n--; c.n == 0 {
		close(c.idle)
		c.idle = nil
	}
}

// wait returns a channel closed when no call runs.
func (c *callTracker) wait() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return c.idle
}
