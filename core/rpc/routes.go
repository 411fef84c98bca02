package rpc

import (
	"errors"
	"strconv"
	"time"

	"modelgateway/core/provider"
	"modelgateway/core/routing"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// firstAnswer tries the admitted request's routes in fallback order with attempt, which gets
// the route's adapter and upstream; another route is tried only after a retryable failure
// and while again() allows it (a streamed upload cannot be sent twice). Adapters of kinds
// that cannot serve the call are skipped: attempt says so with errNoAdapter.
func firstAnswer[T any](b *billed, again func() bool, attempt func(adapter provider.Adapter, up provider.Upstream) (T, error)) (T, *store.Route, error) {
	var zero T
	var lastErr error
	for route, p := range routing.Routes(b.snap, b.m, b.out.EndpointFamily) {
		adapter := b.s.Deps.Adapters[p.Kind]
		if adapter == nil {
			lastErr = &provider.Error{Message: "no adapter for provider kind " + p.Kind}
			continue
		}
		start := time.Now()
		res, err := attempt(adapter, routing.Upstream(b.m, p, route, b.s.Deps.Env))
		if !errors.Is(err, errNoAdapter) {
			b.out.Attempts = append(b.out.Attempts, Attempt{Provider: p.ID, Kind: p.Kind, Start: start, End: time.Now(), Error: attemptError(err)})
		}
		if err == nil {
			b.out.Provider, b.out.FirstByteTime = route.ProviderID, b.out.Attempts[len(b.out.Attempts)-1].End
			return res, route, nil
		}
		lastErr = err
		if b.ctx.Err() != nil {
			return zero, nil, apierror.New(apierror.InvalidRequest, "the request was cancelled")
		}
		var pe *provider.Error
		if errors.Is(err, errNoAdapter) {
			continue
		}
		if errors.As(err, &pe) && !pe.Retryable || !again() {
			break
		}
		if b.s.Deps.Log != nil {
			b.s.Deps.Log.WarnContext(b.ctx, "upstream failed, trying the next route", "request_id", b.out.RequestID, "model", b.m.ID, "provider", p.ID, "err", err)
		}
	}
	if lastErr == nil || errors.Is(lastErr, errNoAdapter) {
		return zero, nil, apierror.New(apierror.ModelNotFound, "the model %q has no route for %s", b.m.ID, b.out.EndpointFamily)
	}
	return zero, nil, upstreamError(lastErr)
}

// attemptError is an attempt's error type for metrics and traces: few distinct values.
func attemptError(err error) string {
	if err == nil {
		return ""
	}
	return failedAttempt(err)
}

// failedAttempt is attemptError of a failure: apart, so that the error target errors.As
// needs is allocated only for a failed attempt, not for every answer.
func failedAttempt(err error) string {
	var pe *provider.Error
	switch {
	case errors.As(err, &pe) && pe.Timeout:
		return AttemptTimeout
	case errors.As(err, &pe) && pe.Status != 0:
		return strconv.Itoa(pe.Status)
	}
	return AttemptFailed
}

// errNoAdapter says the route's provider kind cannot serve this endpoint family.
var errNoAdapter = errors.New("the provider kind cannot serve this endpoint family")

func always() bool { return true }
