package h1

import (
	"context"
	"errors"
	"testing"
	"time"

	"modelgateway/core/wire/callmd"
)

type ctxKey struct{}

// newTestReqCtx is a request context under the value contexts a handler adds, as serveOne
// makes it.
func newTestReqCtx() (*reqCtx, context.Context) {
	c := &reqCtx{parent: context.WithValue(context.Background(), ctxKey{}, "base")}
	return c, context.WithValue(context.WithValue(c, ctxKey{}, "handler"), struct{}{}, 1)
}

// ran reports whether done is closed within a moment.
func ran(done chan struct{}) bool {
	select {
	case <-done:
		return true
	case <-time.After(2 * time.Second):
		return false
	}
}

// TestReqCtxAfterFuncRegistersDirectly: callmd.AfterFunc under value contexts registers on
// the request context itself (no cancelCtx made) and runs at its end, with the cause
// context.Cause then gives; a stopped one does not run.
func TestReqCtxAfterFuncRegistersDirectly(t *testing.T) {
	c, ctx := newTestReqCtx()
	if got := context.Cause(ctx); got != nil {
		t.Fatalf("live cause %v", got)
	}
	done := make(chan struct{})
	stop := callmd.AfterFunc(ctx, func() { close(done) })
	stopped := callmd.AfterFunc(ctx, func() { t.Error("a stopped function ran") })
	if c.inner != nil || !c.firstUsed || len(c.more) != 1 {
		t.Fatalf("not registered on the request context: inner %v, first %v, more %d", c.inner, c.firstUsed, len(c.more))
	}
	if !stopped() || stopped() {
		t.Fatal("stop: true once, then false")
	}
	if ctx.Err() != nil {
		t.Fatal("ended before its cancel")
	}
	c.cancel(errClientGone)
	if !ran(done) {
		t.Fatal("the registered function did not run at the end")
	}
	if stop() {
		t.Fatal("stop after it ran reported true")
	}
	if !errors.Is(ctx.Err(), context.Canceled) || !errors.Is(context.Cause(ctx), errClientGone) {
		t.Fatalf("err %v cause %v", ctx.Err(), context.Cause(ctx))
	}
	select {
	case <-ctx.Done():
	default:
		t.Fatal("Done made after the end is not closed")
	}
	// Registered after the end: runs at once.
	late := make(chan struct{})
	callmd.AfterFunc(ctx, func() { close(late) })
	if !ran(late) {
		t.Fatal("a function registered after the end did not run")
	}
	if got := ctx.Value(ctxKey{}); got != "handler" {
		t.Fatalf("value %v", got)
	}
	if got := c.Value(ctxKey{}); got != "base" {
		t.Fatalf("parent's value %v", got)
	}
}

// TestReqCtxDerivedContexts: contexts made under the request context end with it and see
// its cause, whether made before or after Done was asked; callmd.AfterFunc under one that
// ends first runs when that one ends, and under WithoutCancel never.
func TestReqCtxDerivedContexts(t *testing.T) {
	c, ctx := newTestReqCtx()
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	if c.inner == nil {
		t.Fatal("a derived context made no cancelCtx to join")
	}
	// A function under the child: the child's end runs it, the request's does not.
	childDone := make(chan struct{})
	callmd.AfterFunc(child, func() { close(childDone) })
	c2, ctx2 := newTestReqCtx()
	sub, cancelSub := context.WithCancel(ctx2)
	subDone := make(chan struct{})
	callmd.AfterFunc(context.WithValue(sub, ctxKey{}, 2), func() { close(subDone) })
	cancelSub()
	if !ran(subDone) || c2.firstUsed {
		t.Fatalf("under a context that ended first: ran %v, registered on the request %v", ran(subDone), c2.firstUsed)
	}
	// WithoutCancel: nothing runs at the request's end.
	detached := make(chan struct{})
	callmd.AfterFunc(context.WithoutCancel(ctx), func() { close(detached) })
	c.cancel(errClientGone)
	if !ran(childDone) {
		t.Fatal("the derived context's function did not run at the request's end")
	}
	if !errors.Is(context.Cause(child), errClientGone) || !errors.Is(context.Cause(ctx), errClientGone) {
		t.Fatalf("causes: child %v, request %v", context.Cause(child), context.Cause(ctx))
	}
	select {
	case <-detached:
		t.Fatal("a function under WithoutCancel ran at the request's end")
	case <-time.After(50 * time.Millisecond):
	}
	c2.cancel(nil)
	if !errors.Is(context.Cause(ctx2), context.Canceled) {
		t.Fatalf("cause of a plain end %v", context.Cause(ctx2))
	}
}

// TestReqCtxAllocations: the provider's registration through value contexts on a request
// context, its stop and the end cost one allocation (the stop func), besides the context
// itself, where WithCancelCause and context.AfterFunc cost some nine.
func TestReqCtxAllocations(t *testing.T) {
	c := &reqCtx{}
	ctx := context.WithValue(c, ctxKey{}, 1)
	f := func() {}
	allocs := testing.AllocsPerRun(100, func() {
		*c = reqCtx{parent: context.Background()}
		stop := callmd.AfterFunc(ctx, f)
		stop()
		c.cancel(context.Canceled)
	})
	if allocs > 1 {
		t.Fatalf("%v allocations", allocs)
	}
}

// BenchmarkRequestContext: a request's context, the provider's registration on it through
// two value contexts, its stop and the request's end, made with WithCancelCause and
// context.AfterFunc (as before reqCtx) and as reqCtx.
func BenchmarkRequestContext(b *testing.B) {
	base := context.WithValue(context.Background(), ctxKey{}, 0)
	f := func() {}
	b.Run("WithCancelCause", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx, cancel := context.WithCancelCause(base)
			v := context.WithValue(context.WithValue(ctx, ctxKey{}, 1), struct{}{}, 2)
			stop := context.AfterFunc(v, f)
			stop()
			cancel(context.Canceled)
		}
	})
	b.Run("reqCtx", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := &reqCtx{parent: base}
			v := context.WithValue(context.WithValue(c, ctxKey{}, 1), struct{}{}, 2)
			stop := callmd.AfterFunc(v, f)
			stop()
			c.cancel(context.Canceled)
		}
	})
}
