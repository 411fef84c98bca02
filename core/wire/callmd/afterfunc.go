package callmd

import "context"

// A request context of the front's own (front/h1's) ends like one made by WithCancelCause but
// makes the standard library's cancelCtx only when something needs it: a context derived
// from it (which asks for Done first), or Cause once it has ended. Until then it answers
// CancelCtxKey with Uncancelled, a cancelCtx that never ends, shared by all: Cause of a live
// request is nil either way. AfterFunc recognises that answer and registers its function on
// the request context itself (the provider's detach, once per upstream call), where
// context.AfterFunc would make the cancelCtx, its done channel, a children map, its own
// context and a stop func.

// AfterFuncer is a context that runs functions when it ends, as context.AfterFunc does.
type AfterFuncer interface {
	AfterFunc(f func()) (stop func() bool)
}

// afterFuncKey is the key under which a front's request context answers itself.
type afterFuncKey struct{}

// AfterFuncKey is the key a request context of the front's answers with itself (an
// AfterFuncer).
var AfterFuncKey any = afterFuncKey{}

// Uncancelled is what a request context of the front's answers CancelCtxKey with while it
// lives and has made no cancelCtx of its own: a cancelCtx that never ends (nil when
// CancelCtxKey could not be learnt, and then AfterFunc is context.AfterFunc).
var Uncancelled = func() any {
	if CancelCtxKey == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	_ = cancel // never called: Uncancelled never ends
	return ctx.Value(CancelCtxKey)
}()

// AfterFunc is context.AfterFunc(ctx, f). Where the nearest context of ctx that can end is a
// request context of the front's that made no cancelCtx (only value contexts between), f is
// registered on it directly. Any context that ends in between answers CancelCtxKey itself
// (the standard library's: their cancelCtx; WithoutCancel and core/provider's call: nil), so
// it is then context.AfterFunc's.
func AfterFunc(ctx context.Context, f func()) (stop func() bool) {
	if Uncancelled != nil && ctx.Value(CancelCtxKey) == Uncancelled {
		if a, ok := ctx.Value(AfterFuncKey).(AfterFuncer); ok {
			return a.AfterFunc(f)
		}
	}
	return context.AfterFunc(ctx, f)
}
