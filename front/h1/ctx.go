package h1

import (
	"context"
	"net/http"
	"sync"
	"time"

	"modelgateway/core/wire/callmd"
)

// reqCtx is a request's context: context.WithCancelCause over the connection's base context
// (which never ends), in one allocation with the request. The cancelCtx of the context
// package (inner) is made only when something needs it: a context derived from this one
// (WithCancel, AfterFunc: they ask for Done first), Done itself, or Cause once it has ended.
// Until then it answers callmd.CancelCtxKey with callmd.Uncancelled, and an upstream call
// watches it directly (callmd.Watchable): WithCancelCause, and context.AfterFunc on it, cost
// some eight allocations per request.
type reqCtx struct {
	parent context.Context // never ends
	mu     sync.Mutex
	err    error
	cause  error
	inner  context.Context // made by WithCancelCause(parent) on demand; ended with this
	end    context.CancelCauseFunc
	// watchers are told of the end; the first one is kept in room.
	watchers []callmd.Watcher
	room     [1]callmd.Watcher
	// req is the request served under this context, in its allocation (serveOne).
	req http.Request
}

func (c *reqCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }

func (c *reqCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.innerLocked().Done()
}

func (c *reqCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *reqCtx) Value(k any) any {
	switch {
	case k == callmd.WatchableKey:
		return c
	case k == callmd.CancelCtxKey && k != nil:
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.inner == nil && c.err == nil {
			return callmd.Uncancelled
		}
		return c.innerLocked().Value(k)
	}
	return c.parent.Value(k)
}

// innerLocked is the context package's context that ends with c, made the first time.
func (c *reqCtx) innerLocked() context.Context {
	if c.inner == nil {
		c.inner, c.end = context.WithCancelCause(c.parent)
		if c.err != nil {
			c.end(c.cause)
		}
	}
	return c.inner
}

// cancel ends the context with cause; the first cause stays. The watchers are told, each in
// a goroutine of its own, as context.AfterFunc runs its functions.
func (c *reqCtx) cancel(cause error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	if cause == nil {
		cause = context.Canceled
	}
	c.err, c.cause = context.Canceled, cause
	for i, w := range c.watchers {
		if w != nil {
			c.watchers[i] = nil
			go w.ContextEnded()
		}
	}
	c.watchers = nil
	end := c.end
	c.mu.Unlock()
	// The contexts derived from inner end outside the lock: nothing they run can wait for it.
	if end != nil {
		end(cause)
	}
}

// Watch implements callmd.Watchable.
func (c *reqCtx) Watch(w callmd.Watcher) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return false
	}
	if c.watchers == nil {
		c.watchers = c.room[:0]
	}
	c.watchers = append(c.watchers, w)
	return true
}

// Unwatch implements callmd.Watchable.
func (c *reqCtx) Unwatch(w callmd.Watcher) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.watchers {
		if x == w {
			c.watchers[i] = nil
			return true
		}
	}
	return false
}
