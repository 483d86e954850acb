package memory

import (
	"context"
	"sync"
)

// observers are the functions told of a manager's stored summaries and
// deleted sessions: registered by options before the manager exists
// (WithFoldObserver, WithDeleteObserver) or on the built manager
// (Manager.Observe, which a catalogue calls on the manager it reads
// through). A manager and its model views (ForModel) share them.
type observers struct {
	mu   sync.RWMutex
	fold []func(context.Context, FoldEvent)
	del  []func(context.Context, string)
}

// add registers fold and del (nil ones skipped). The slices are copied on
// write, so that a reader keeps the ones it read.
func (o *observers) add(fold func(context.Context, FoldEvent), del func(context.Context, string)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if fold != nil {
		o.fold = append(o.fold[:len(o.fold):len(o.fold)], fold)
	}
	if del != nil {
		o.del = append(o.del[:len(o.del):len(o.del)], del)
	}
}

// folds returns the fold observers.
func (o *observers) folds() []func(context.Context, FoldEvent) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.fold
}

// deletes returns the delete observers.
func (o *observers) deletes() []func(context.Context, string) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.del
}

// Observe registers, on a built manager, fold to be called as
// WithFoldObserver's function is and del as WithDeleteObserver's (either
// may be nil). It is how something built over the manager follows it: a
// catalogue (catalog.New) subscribes itself so. Events before the call are
// not replayed.
func (m *Manager) Observe(fold func(ctx context.Context, ev FoldEvent), del func(ctx context.Context, sessionID string)) {
	m.obs.add(fold, del)
}
