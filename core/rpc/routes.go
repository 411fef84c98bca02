package rpc

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"modelgateway/core/provider"
	"modelgateway/core/routing"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// firstAnswer tries the admitted request's routes in the order of contract.md ("Routing"):
// the plan of routing.Health (priority groups, weight and affinity inside a group, routes
// set aside left out), each route up to its provider's retry.attempts with backoff, the
// credentials of a pool in turn. attempt gets the route's adapter and upstream; another
// attempt is made only after a retryable failure and while again() allows it (a streamed
// upload cannot be sent twice): nothing has reached the client yet. Adapters of kinds that
// cannot serve the call are skipped: attempt says so with errNoAdapter.
func firstAnswer[T any](b *billed, again func() bool, attempt func(adapter provider.Adapter, up provider.Upstream) (T, error)) (T, *store.Route, error) {
	var zero T
	var lastErr error
	h := b.s.Deps.health()
	var buf routing.PlanBuffer
	now := time.Now()
	plan := h.Plan(b.snap, b.m, b.out.EndpointFamily, b.conv, now, &buf)
	// A trial this request held but did not settle (not reached, or a non-retryable answer)
	// goes to the next request.
	defer plan.Release()
	stop := false
	for i := 0; i < len(plan.List) && !stop; i++ {
		c := &plan.List[i]
		route, p := c.Route, c.Provider
		adapter := b.s.Deps.Adapters[p.Kind]
		if adapter == nil {
			lastErr = &provider.Error{Message: "no adapter for provider kind " + p.Kind}
			continue
		}
		var creds uint64 // credentials of the pool this request has tried on this route
		for try := 1; ; {
			keyEnv, ci, ok := h.Credential(p, creds, now)
			if !ok {
				break
			}
			start := now
			res, err := attempt(adapter, routing.UpstreamWith(b.m, p, route, b.s.Deps.Env, keyEnv))
			if errors.Is(err, errNoAdapter) {
				lastErr = err
				break
			}
			end := time.Now()
			b.out.Attempts = append(b.out.Attempts, Attempt{Provider: p.ID, Kind: p.Kind, UpstreamModel: upstreamModel(b.m, route),
				Start: start, End: end, Error: attemptError(err), Status: attemptStatus(err)})
			if err == nil {
				h.Succeeded(c)
				b.out.Provider, b.out.FirstByteTime = route.ProviderID, end
				return res, route, nil
			}
			lastErr = err
			if b.ctx.Err() != nil {
				return zero, nil, apierror.New(apierror.InvalidRequest, "the request was cancelled")
			}
			var pe *provider.Error
			errors.As(err, &pe)
			creds |= 1 << min(ci, 63)
			now = end
			if pe != nil && (pe.Status == http.StatusUnauthorized || pe.Status == http.StatusForbidden) {
				// The credential is refused, not the route: set it aside and go on with the
				// next one of the pool; with none left the refusal passes on, as before pools.
				h.SetCredentialAside(p, ci, routing.RefusedCredential, now)
				if routing.MoreCredentials(p, creds) && again() {
					b.logAttempt(p, route, err, "the upstream refused the credential, trying the next one")
					continue
				}
				stop = true
				break
			}
			if pe != nil && !pe.Retryable || !again() {
				// Not retryable: passed on at once, in the client's protocol, as before.
				stop = true
				break
			}
			if pe == nil {
				// Not the upstream's failure (the adapter could not build the call): the next
				// route may serve it, as before; it says nothing of this route's health.
				b.logAttempt(p, route, err, "upstream failed, trying the next route")
				break
			}
			wait := routing.Backoff(p, try)
			if pe.Status == http.StatusTooManyRequests {
				aside := pe.RetryAfter
				if aside <= 0 {
					aside = routing.Cooldown(p)
				}
				h.SetCredentialAside(p, ci, aside, now)
				if len(p.APIKeyPool) > 1 && routing.MoreCredentials(p, creds) {
					// The credential is rate-limited, not the route: the next one of the pool
					// now, without spending an attempt.
					b.logAttempt(p, route, err, "the upstream rate-limited the credential, trying the next one")
					continue
				}
				if pe.RetryAfter > routing.MaxRetryAfter {
					try = routing.Attempts(p) // longer than a request should wait: the next route
				} else {
					wait = max(wait, pe.RetryAfter)
				}
			}
			cooled := h.Failed(c, now)
			if try >= routing.Attempts(p) || cooled {
				b.logAttempt(p, route, err, "upstream failed, trying the next route")
				break
			}
			try++
			creds = 0 // a retry may use any credential again
			b.logAttempt(p, route, err, "upstream failed, retrying the route")
			if !sleep(b.ctx, wait) {
				return zero, nil, apierror.New(apierror.InvalidRequest, "the request was cancelled")
			}
			now = time.Now()
		}
	}
	if lastErr == nil || errors.Is(lastErr, errNoAdapter) {
		return zero, nil, apierror.New(apierror.ModelNotFound, "the model %q has no route for %s", b.m.ID, b.out.EndpointFamily)
	}
	return zero, nil, upstreamError(lastErr)
}

// logAttempt is the warning line of a failed attempt: with the request id, as every line
// about a request.
func (b *billed) logAttempt(p *store.Provider, route *store.Route, err error, msg string) {
	if b.s.Deps.Log != nil {
		b.s.Deps.Log.WarnContext(b.ctx, msg, "request_id", b.out.RequestID, "model", b.m.ID, "provider", p.ID,
			"upstream_model", route.UpstreamModel, "err", err)
	}
}

// sleep waits d unless the request ends first; false when it did.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func upstreamModel(m *snapshot.Model, r *store.Route) string {
	if r.UpstreamModel == "" {
		return m.ID
	}
	return r.UpstreamModel
}

// attemptStatus is the HTTP status an attempt's upstream answered; 0 when none came.
func attemptStatus(err error) int {
	if err == nil {
		return http.StatusOK
	}
	var pe *provider.Error
	if errors.As(err, &pe) {
		return pe.Status
	}
	return 0
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
