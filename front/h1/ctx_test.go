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

// watcher closes told when it is told.
type watcher struct{ told chan struct{} }

func newWatcher() *watcher       { return &watcher{told: make(chan struct{})} }
func (w *watcher) ContextEnded() { close(w.told) }
func (w *watcher) wasTold(d time.Duration) bool {
	select {
	case <-w.told:
		return true
	case <-time.After(d):
		return false
	}
}

// watch is what core/provider does: the request context watched directly where WatchableOf
// finds it, context.AfterFunc otherwise; it reports which.
func watch(ctx context.Context, w *watcher) (direct bool) {
	if wa := callmd.WatchableOf(ctx); wa != nil && wa.Watch(w) {
		return true
	}
	context.AfterFunc(ctx, w.ContextEnded)
	return false
}

// TestReqCtxIsWatchedDirectly: under value contexts the request context is watched itself
// (no cancelCtx made); its end tells the watchers that were not unwatched, and context.Cause
// then gives its cause; after its end it cannot be watched.
func TestReqCtxIsWatchedDirectly(t *testing.T) {
	c, ctx := newTestReqCtx()
	if got := context.Cause(ctx); got != nil {
		t.Fatalf("live cause %v", got)
	}
	w, gone := newWatcher(), newWatcher()
	wa := callmd.WatchableOf(ctx)
	if wa == nil || !wa.Watch(w) || !wa.Watch(gone) {
		t.Fatal("not watchable")
	}
	if c.inner != nil || len(c.watchers) != 2 {
		t.Fatalf("not watched directly: inner %v, watchers %d", c.inner, len(c.watchers))
	}
	if !wa.Unwatch(gone) || wa.Unwatch(gone) {
		t.Fatal("Unwatch: true once, then false")
	}
	if ctx.Err() != nil {
		t.Fatal("ended before its cancel")
	}
	c.cancel(errClientGone)
	if !w.wasTold(2 * time.Second) {
		t.Fatal("the watcher was not told of the end")
	}
	if gone.wasTold(50 * time.Millisecond) {
		t.Fatal("an unwatched watcher was told")
	}
	if wa.Unwatch(w) {
		t.Fatal("Unwatch after the end reported true")
	}
	if !errors.Is(ctx.Err(), context.Canceled) || !errors.Is(context.Cause(ctx), errClientGone) {
		t.Fatalf("err %v cause %v", ctx.Err(), context.Cause(ctx))
	}
	select {
	case <-ctx.Done():
	default:
		t.Fatal("Done made after the end is not closed")
	}
	// After the end: not watched, but context.AfterFunc runs at once.
	late := newWatcher()
	if watch(ctx, late) || !late.wasTold(2*time.Second) {
		t.Fatal("a watcher after the end was watched, or not told")
	}
	if got := ctx.Value(ctxKey{}); got != "handler" {
		t.Fatalf("value %v", got)
	}
	if got := c.Value(ctxKey{}); got != "base" {
		t.Fatalf("parent's value %v", got)
	}
}

// TestReqCtxDerivedContexts: contexts made under the request context end with it and see
// its cause; a watcher under one that can end on its own is that one's (context.AfterFunc),
// and under WithoutCancel is never told.
func TestReqCtxDerivedContexts(t *testing.T) {
	c, ctx := newTestReqCtx()
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	if c.inner == nil {
		t.Fatal("a derived context made no cancelCtx to join")
	}
	underChild := newWatcher()
	if watch(child, underChild) {
		t.Fatal("watched the request context past a context that can end")
	}
	c2, ctx2 := newTestReqCtx()
	sub, cancelSub := context.WithCancel(ctx2)
	underSub := newWatcher()
	if watch(context.WithValue(sub, ctxKey{}, 2), underSub) {
		t.Fatal("watched the request context past a context that can end")
	}
	cancelSub()
	if !underSub.wasTold(2*time.Second) || len(c2.watchers) != 0 {
		t.Fatal("a watcher under a context that ended first was not told, or watched the request")
	}
	detached := newWatcher()
	if watch(context.WithoutCancel(ctx), detached) {
		t.Fatal("watched the request context under WithoutCancel")
	}
	c.cancel(errClientGone)
	if !underChild.wasTold(2 * time.Second) {
		t.Fatal("the derived context's watcher was not told at the request's end")
	}
	if !errors.Is(context.Cause(child), errClientGone) || !errors.Is(context.Cause(ctx), errClientGone) {
		t.Fatalf("causes: child %v, request %v", context.Cause(child), context.Cause(ctx))
	}
	if detached.wasTold(50 * time.Millisecond) {
		t.Fatal("a watcher under WithoutCancel was told at the request's end")
	}
	c2.cancel(nil)
	if !errors.Is(context.Cause(ctx2), context.Canceled) {
		t.Fatalf("cause of a plain end %v", context.Cause(ctx2))
	}
}

// TestReqCtxAllocations: watching a request context through value contexts, unwatching it
// and its end allocate nothing beyond the context itself, where WithCancelCause and
// context.AfterFunc cost some eight allocations.
func TestReqCtxAllocations(t *testing.T) {
	c := &reqCtx{}
	ctx := context.WithValue(c, ctxKey{}, 1)
	w := newWatcher()
	allocs := testing.AllocsPerRun(100, func() {
		*c = reqCtx{parent: context.Background()}
		wa := callmd.WatchableOf(ctx)
		wa.Watch(w)
		wa.Unwatch(w)
		c.cancel(context.Canceled)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}

// BenchmarkRequestContext: a request's context, an upstream call's watch of it through two
// value contexts, its end and the request's end, made with WithCancelCause and
// context.AfterFunc (as before reqCtx) and as reqCtx.
func BenchmarkRequestContext(b *testing.B) {
	base := context.WithValue(context.Background(), ctxKey{}, 0)
	w := newWatcher()
	b.Run("WithCancelCause", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx, cancel := context.WithCancelCause(base)
			v := context.WithValue(context.WithValue(ctx, ctxKey{}, 1), struct{}{}, 2)
			stop := context.AfterFunc(v, w.ContextEnded)
			stop()
			cancel(context.Canceled)
		}
	})
	b.Run("reqCtx", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := &reqCtx{parent: base}
			v := context.WithValue(context.WithValue(c, ctxKey{}, 1), struct{}{}, 2)
			if wa := callmd.WatchableOf(v); wa != nil && wa.Watch(w) {
				wa.Unwatch(w)
			}
			c.cancel(context.Canceled)
		}
	})
}
