package provider

import (
	"context"
	"sync"
	"time"

	"modelgateway/core/wire/callmd"
)

// call is the context of one upstream exchange: the client request's values, ended by the
// client's cancellation (until detached), by the first-byte or idle timer, or when the answer
// is closed. It is part of the answer's body (timedBody), and runs the functions registered on
// it (AfterFunc: the h1 transport's abort, net/http's and the dialer's child contexts) itself.
// context.WithoutCancel, WithCancelCause and the transport's context.AfterFunc on them cost
// about eight allocations per upstream call: two nodes, a cancel func, the transport's
// afterFunc context and its stop func, a children map and a done channel.
type call struct {
	parent context.Context
	// body is the answer's body this call is part of when NewRequest made it, for Do to arm;
	// nil for a call Do made itself.
	body  *timedBody
	mu    sync.Mutex
	done  chan struct{} // made by the first Done; closedChan when it ended before
	err   error         // context.Canceled once ended
	cause error
	// first is the first function registered (the transport's abort), kept without an
	// allocation of its own; firstUsed, once it was taken (a stop func may still name it).
	first     afterFunc
	firstUsed bool
	more      []*afterFunc
}

// afterFunc is a function registered on a call: f is nil once it was run or stopped.
type afterFunc struct {
	c *call
	f func()
}

// closedChan is the done channel of a call that ended before anyone asked for it.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// A call answers callmd.CancelCtxKey (the key through which context.Cause finds the nearest
// context made by WithCancel) with nil, so that Cause falls back to the call's own Err. Passed
// on to the client's context, it would find the client's cancelCtx and give its cause: after a
// detached call's timer, the client's (and, where Cause does not check Err first, nil while
// the client waits, which net/http's transport would return as its error: no answer and no
// error).

func (c *call) Deadline() (time.Time, bool) { return time.Time{}, false }

func (c *call) Value(k any) any {
	if k == callmd.CancelCtxKey && k != nil {
		return nil
	}
	return c.parent.Value(k)
}

func (c *call) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		if c.err != nil {
			c.done = closedChan
		} else {
			c.done = make(chan struct{})
		}
	}
	return c.done
}

func (c *call) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Cause is why the call ended (errFirstByte, errIdle, the client's cause), nil before.
func (c *call) Cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

// cancel ends the call with cause (context.Canceled when nil); the first cause stays. The
// registered functions that were not stopped run, each in a goroutine of its own, as
// context.AfterFunc's do.
func (c *call) cancel(cause error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	if cause == nil {
		cause = context.Canceled
	}
	c.err, c.cause = context.Canceled, cause
	if c.done == nil {
		c.done = closedChan
	} else {
		close(c.done)
	}
	first, more := c.first.f, c.more
	c.first.f, c.more = nil, nil
	for _, a := range more {
		f := a.f
		a.f = nil
		if f != nil {
			go f()
		}
	}
	c.mu.Unlock()
	if first != nil {
		go first()
	}
}

// AfterFunc runs f in a goroutine of its own once the call ends (at once when it has); stop
// keeps it from running, and reports whether it did. context.AfterFunc and the child contexts
// of WithCancel use it (the context package's afterFuncer), and the h1 transport calls it
// directly.
func (c *call) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return stopped
	}
	a := &c.first
	if c.firstUsed {
		a = &afterFunc{c: c}
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
