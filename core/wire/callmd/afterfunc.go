package callmd

import "context"

// A request context of the front's own (front/h1's) ends like one made by WithCancelCause but
// makes the standard library's cancelCtx only when something needs it: a context derived
// from it (which asks for Done first), or Cause once it has ended. Until then it answers
// CancelCtxKey with Uncancelled, a cancelCtx that never ends, shared by all: Cause of a live
// request is nil either way. WatchableOf recognises that answer, and the provider's upstream
// call watches the request context itself, where context.AfterFunc would make the cancelCtx,
// its done channel, a children map, its own context and a stop func, and the function it runs
// would be one more.

// Watcher is told, in a goroutine of its own, that the context it watches has ended.
type Watcher interface{ ContextEnded() }

// Watchable is a request context of the front's. Watch registers w and reports true, or
// false when the context has ended already (w is then not registered); Unwatch removes w and
// reports whether it was registered and not told yet (as context.AfterFunc's stop does).
// A Watcher is compared by ==: a pointer.
type Watchable interface {
	Watch(w Watcher) bool
	Unwatch(w Watcher) bool
}

// watchableKey is the key under which a front's request context answers itself.
type watchableKey struct{}

// WatchableKey is the key a request context of the front's answers with itself.
var WatchableKey any = watchableKey{}

// Uncancelled is what a request context of the front's answers CancelCtxKey with while it
// lives and has made no cancelCtx of its own: a cancelCtx that never ends (nil when
// CancelCtxKey could not be learnt, and then WatchableOf finds nothing).
var Uncancelled = func() any {
	if CancelCtxKey == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	_ = cancel // never called: Uncancelled never ends
	return ctx.Value(CancelCtxKey)
}()

// WatchableOf is the request context of the front's that is the nearest context of ctx that
// can end (only value contexts between), or nil: a context that can end answers CancelCtxKey
// itself (the standard library's with their cancelCtx; WithoutCancel and core/provider's call
// with nil), so that one in between hides the request context.
func WatchableOf(ctx context.Context) Watchable {
	if Uncancelled == nil || ctx.Value(CancelCtxKey) != Uncancelled {
		return nil
	}
	w, _ := ctx.Value(WatchableKey).(Watchable)
	return w
}
