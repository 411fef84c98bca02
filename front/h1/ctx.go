package h1

import (
	"context"
	"net/http"
	"sync"
	"time"

	"modelgateway/core/wire/callmd"
)

// reqCtx is a request's context: context.WithCancelCause over the connection's base context
// (which never ends), in one allocation. The cancelCtx of the context package (inner) is made
// only when something needs it: a context derived from this one (WithCancel, AfterFunc: they
// ask for Done first), Done itself, or Cause once it has ended. Until then it answers
// callmd.CancelCtxKey with callmd.Uncancelled, and callmd.AfterFunc (the provider's detach,
// once per upstream call) registers on it directly: WithCancelCause, context.AfterFunc on it
// and the done channel and children map they made cost some seven allocations per request.
type reqCtx struct {
	parent context.Context // never ends
	mu     sync.Mutex
	err    error
	cause  error
	inner  context.Context // made by WithCancelCause(parent) on demand; ended with this
	end    context.CancelCauseFunc
	// first is the first function registered, kept without an allocation of its own;
	// firstUsed once it was taken (its stop func may still name it).
	first     afterFunc
	firstUsed bool
	more      []*afterFunc
	// req is the request served under this context, in its allocation (serveOne).
	req http.Request
}

// afterFunc is a function registered on a reqCtx: f is nil once it was run or stopped.
type afterFunc struct {
	c *reqCtx
	f func()
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
	case k == callmd.AfterFuncKey:
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

// cancel ends the context with cause; the first cause stays. The registered functions that
// were not stopped run, each in a goroutine of its own, as context.AfterFunc's do.
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
	if c.end != nil {
		c.end(cause)
	}
	first, more := c.first.f, c.more
	c.first.f, c.more = nil, nil
	for _, a := range more {
		if f := a.f; f != nil {
			a.f = nil
			go f()
		}
	}
	c.mu.Unlock()
	if first != nil {
		go first()
	}
}

// AfterFunc runs f in a goroutine of its own once the context ends (at once when it has);
// stop keeps it from running, and reports whether it did (callmd.AfterFuncer).
func (c *reqCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return stopped
	}
	a := &c.first
	if c.firstUsed {
		a = &afterFunc{}
		c.more = append(c.more, a)
	}
	c.firstUsed = true
	a.c, a.f = c, f
	return a.stop
}

func stopped() bool { return false }

func (a *afterFunc) stop() bool {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	if a.f == nil {
		return false
	}
	a.f = nil
	return true
}
