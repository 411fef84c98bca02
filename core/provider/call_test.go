package provider

import (
	"context"
	"errors"
	"testing"
	"time"

	"modelgateway/core/wire/callmd"
)

type callKey struct{}

// newTestCall is a call on a cancellable client context carrying a value.
func newTestCall(t *testing.T) (*call, context.CancelCauseFunc) {
	t.Helper()
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), callKey{}, "v"))
	t.Cleanup(func() { cancel(nil) })
	return &call{parent: parent}, cancel
}

// ran reports whether ch is closed within a second.
func ran(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-time.After(time.Second):
		return false
	}
}

// A call ends as a context made by WithCancelCause does, seen through the context package:
// Done, Err, Cause (its own, not the client's, whose cause is nil while the client waits:
// net/http's transport returns it as its error), children of WithCancel, the client's values.
func TestCallEndsAsAContext(t *testing.T) {
	if callmd.CancelCtxKey == nil {
		t.Fatal("the key of context.Cause was not learnt")
	}
	c, _ := newTestCall(t)
	if c.Value(callKey{}) != "v" {
		t.Fatal("the client's values do not reach the call")
	}
	child, stopChild := context.WithCancel(c)
	defer stopChild()
	done := c.Done()
	if c.Err() != nil || context.Cause(c) != nil || c.Cause() != nil {
		t.Fatal("a live call has an error")
	}
	c.cancel(errFirstByte)
	c.cancel(errIdle) // the first cause stays
	select {
	case <-done:
	default:
		t.Fatal("Done is open after cancel")
	}
	if !errors.Is(c.Err(), context.Canceled) || !errors.Is(c.Cause(), errFirstByte) {
		t.Fatalf("err %v, cause %v", c.Err(), c.Cause())
	}
	if err := context.Cause(c); err == nil {
		t.Fatal("context.Cause of an ended call is nil")
	}
	select {
	case <-child.Done():
	case <-time.After(time.Second):
		t.Fatal("a child of the call outlived it")
	}
	// Done asked for only after the end is closed too.
	late, _ := newTestCall(t)
	late.cancel(nil)
	select {
	case <-late.Done():
	default:
		t.Fatal("Done of a call that ended before is open")
	}
	if !errors.Is(late.Cause(), context.Canceled) {
		t.Fatalf("cause of cancel(nil): %v", late.Cause())
	}
}

// AfterFunc runs what was registered and not stopped once the call ends, and at once what is
// registered after; stop reports whether it kept the function from running.
func TestCallRunsItsAfterFuncs(t *testing.T) {
	c, _ := newTestCall(t)
	first, second, third := make(chan struct{}), make(chan struct{}), make(chan struct{})
	stopFirst := c.AfterFunc(func() { close(first) })
	stopSecond := c.AfterFunc(func() { close(second) })
	stopThird := c.AfterFunc(func() { close(third) })
	if !stopSecond() || stopSecond() {
		t.Fatal("stop of a waiting function: want true, then false")
	}
	c.cancel(nil)
	if !ran(first) || !ran(third) {
		t.Fatal("a registered function did not run when the call ended")
	}
	select {
	case <-second:
		t.Fatal("a stopped function ran")
	case <-time.After(50 * time.Millisecond):
	}
	if stopFirst() || stopThird() {
		t.Fatal("stop of a function that ran reports true")
	}
	after := make(chan struct{})
	if stop := c.AfterFunc(func() { close(after) }); !ran(after) || stop() {
		t.Fatal("a function registered on an ended call did not run at once")
	}
	// context.AfterFunc goes through the call's own.
	viaContext := make(chan struct{})
	c2, _ := newTestCall(t)
	context.AfterFunc(c2, func() { close(viaContext) })
	c2.cancel(nil)
	if !ran(viaContext) {
		t.Fatal("context.AfterFunc on a call did not run")
	}
}

// The client's cancellation reaches the call (with its cause) until detached; a timer's
// cause is the call's own.
func TestCallFollowsTheClientUntilDetached(t *testing.T) {
	for _, detach := range []bool{false, true} {
		c, cancel := newTestCall(t)
		tb := &timedBody{}
		tb.call.parent = c.parent
		tb.stopAfter = context.AfterFunc(c.parent, tb.parentEnded)
		if detach && !tb.detach() {
			t.Fatal("detach of a live client")
		}
		gone := errors.New("client gone")
		cancel(gone)
		if detach {
			time.Sleep(50 * time.Millisecond)
			if tb.call.Err() != nil {
				t.Fatal("a detached call ended with the client")
			}
			tb.timeUp()
			if !errors.Is(tb.call.Cause(), errFirstByte) {
				t.Fatalf("cause after the timer: %v", tb.call.Cause())
			}
			continue
		}
		if !ran(asChan(tb.call.Done())) || !errors.Is(tb.call.Cause(), gone) {
			t.Fatalf("the call did not end with the client's cause: %v", tb.call.Cause())
		}
	}
}

func asChan(d <-chan struct{}) chan struct{} {
	ch := make(chan struct{})
	go func() { <-d; close(ch) }()
	return ch
}
