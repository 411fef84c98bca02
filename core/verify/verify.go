// Package verify finds out which optional parameters (spec 2.6) each model accepts on each
// text-generation endpoint family, so that the catalogue's capability entries (spec 2.3) are
// measured instead of declared. Every (model, family) pair is probed through the model's
// first route for the family (core/routing) with the smallest request that can succeed, once without any
// optional parameter (the baseline) and once per parameter. Probes call the provider adapter
// directly: they never go through core Generate, so nothing is metered or charged.
package verify

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/provider"
	"modelgateway/core/routing"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// Families are the text-generation endpoint families that take optional parameters, in
// contract order. responses.compact is left out: only OpenAI upstreams serve it, with the
// parameters of responses.
var Families = []string{"chat.completions", "completions", "responses", "messages", "content.generate"}

// Defaults of the Prober's knobs.
const (
	DefaultConcurrency = 4
	DefaultTimeout     = 30 * time.Second
	DefaultRetryDelay  = 2 * time.Second
)

// Prober probes upstreams. The zero value of every field but Adapters is usable.
type Prober struct {
	// Adapters by provider kind, as core Generate uses them.
	Adapters map[string]provider.Adapter
	// Env reads provider credentials; os.Getenv when nil.
	Env func(string) string
	// Concurrency bounds the probes in flight over all pairs (DefaultConcurrency when 0).
	Concurrency int
	// Timeout bounds one probe, stream drained included (DefaultTimeout when 0).
	Timeout time.Duration
	// RetryDelay is waited before the one retry of an inconclusive probe (a 429 or 5xx is
	// often gone a moment later); negative disables the retry (DefaultRetryDelay when 0).
	RetryDelay time.Duration
	Now        func() time.Time
	Log        *slog.Logger
}

// Verdict is the outcome of one probe.
type Verdict int

const (
	// Inconclusive: the probe failed for another reason than a rejection of the request
	// (network, timeout, 429, 5xx): nothing is known.
	Inconclusive Verdict = iota
	// Supported: the upstream answered with success (a stream was drained to its end).
	Supported
	// Unsupported: the upstream, or the adapter before sending, rejected the request.
	Unsupported
)

// Result is what the probes of one (model, family) pair found. Parameters appear in spec 2.6
// order in exactly one of Supported, Unsupported and Inconclusive.
type Result struct {
	Model, EndpointFamily string
	// Provider is the id of the provider that was probed.
	Provider                             string
	Supported, Unsupported, Inconclusive []string
	// VerifiedAt is when the pair's probes ended; zero when the result must not be recorded
	// (the baseline failed, or the caller went away before the probes ended).
	VerifiedAt time.Time
	// Err says why the pair was not verified; nil when VerifiedAt is set.
	Err error
	// Reasons holds the error of each unsupported or inconclusive parameter, for operators.
	Reasons map[string]string
}

// Recorded reports whether the result is a verification to store.
func (r *Result) Recorded() bool { return !r.VerifiedAt.IsZero() }

// Target is one pair to probe and the route that serves it.
type Target struct {
	Model    *snapshot.Model
	Family   string
	Route    *store.Route
	Provider *store.Provider
}

// Targets lists the pairs to probe, in catalogue order then family order: every active model
// (or those named) on every family of Families it is routed on (or those named). A named
// model that is unknown or inactive, or a named family that is not in Families, is an
// *apierror.Error.
func Targets(snap *snapshot.Snapshot, models, families []string) ([]Target, error) {
	for _, f := range families {
		if !slices.Contains(Families, f) {
			return nil, apierror.New(apierror.InvalidRequest, "endpoint_families: %q is not one of the text-generation families %v", f, Families)
		}
	}
	active := snap.ActiveModels()
	for _, id := range models {
		if !slices.ContainsFunc(active, func(m *snapshot.Model) bool { return m.ID == id }) {
			return nil, apierror.New(apierror.NotFound, "models: %q is not an active model", id)
		}
	}
	var out []Target
	for _, m := range active {
		if len(models) > 0 && !slices.Contains(models, m.ID) {
			continue
		}
		for _, f := range Families {
			if len(families) > 0 && !slices.Contains(families, f) {
				continue
			}
			if route := routing.First(m, f); route != nil {
				out = append(out, Target{Model: m, Family: f, Route: route, Provider: snap.Providers[route.ProviderID]})
			}
		}
	}
	return out, nil
}

// Verify probes the pairs that Targets selects and returns one Result per pair, in the same
// order. Only a bad filter is an error; upstream failures are in the results.
func (p *Prober) Verify(ctx context.Context, snap *snapshot.Snapshot, models, families []string) ([]Result, error) {
	targets, err := Targets(snap, models, families)
	if err != nil {
		return nil, err
	}
	n := p.Concurrency
	if n <= 0 {
		n = DefaultConcurrency
	}
	sem := make(chan struct{}, n)
	out := make([]Result, len(targets))
	var wg sync.WaitGroup
	for i := range targets {
		wg.Go(func() { out[i] = p.pair(ctx, sem, &targets[i]) })
	}
	wg.Wait()
	return out, nil
}

// pair runs the baseline, then every parameter's probe at once (bounded by sem).
func (p *Prober) pair(ctx context.Context, sem chan struct{}, t *Target) Result {
	res := Result{Model: t.Model.ID, EndpointFamily: t.Family, Provider: t.Route.ProviderID, Reasons: map[string]string{}}
	verdicts := make(map[string]Verdict, len(Parameters))
	if v, err := p.probe(ctx, sem, t, ""); v != Supported {
		res.Err = err
		if v == Unsupported {
			res.Err = errors.Join(errors.New("the upstream rejected the baseline request"), err)
		}
		for _, param := range Parameters {
			res.Inconclusive = append(res.Inconclusive, param)
		}
		p.logResult(&res)
		return res
	}
	var toProbe []string
	for _, param := range Parameters {
		switch {
		case byBaseline[param]:
			verdicts[param] = Supported
		case param == "stream" && (!t.Model.Streaming || t.Family == "completions"):
			// The gateway refuses streaming here before any capability check
			// (streaming_not_supported), whatever the upstream could do.
			verdicts[param] = Unsupported
			res.Reasons[param] = "streaming is not served on this model or route"
		case !probed(param):
			verdicts[param] = Inconclusive
			res.Reasons[param] = "no canonical field: cannot be probed"
		default:
			toProbe = append(toProbe, param)
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, param := range toProbe {
		wg.Go(func() {
			v, err := p.probe(ctx, sem, t, param)
			mu.Lock()
			defer mu.Unlock()
			verdicts[param] = v
			if err != nil {
				res.Reasons[param] = err.Error()
			}
		})
	}
	wg.Wait()
	for _, param := range Parameters {
		switch verdicts[param] {
		case Supported:
			res.Supported = append(res.Supported, param)
		case Unsupported:
			res.Unsupported = append(res.Unsupported, param)
		default:
			res.Inconclusive = append(res.Inconclusive, param)
		}
	}
	if res.Supported == nil {
		res.Supported = []string{} // a verified absence, not unknown
	}
	if err := ctx.Err(); err != nil {
		// Probes cut short by the caller prove nothing: recording their list would turn
		// "not probed" into "unsupported".
		res.Err = err
	} else {
		// Microseconds, as PostgreSQL stores it: the answer shows what the catalogue will.
		res.VerifiedAt = p.now().UTC().Truncate(time.Microsecond)
	}
	p.logResult(&res)
	return res
}

// probe runs one probe (the baseline when param is empty), retrying once if inconclusive.
func (p *Prober) probe(ctx context.Context, sem chan struct{}, t *Target, param string) (Verdict, error) {
	v, err := p.once(ctx, sem, t, param)
	delay := p.RetryDelay
	if delay == 0 {
		delay = DefaultRetryDelay
	}
	if v != Inconclusive || delay < 0 || ctx.Err() != nil {
		return v, err
	}
	select {
	case <-ctx.Done():
		return v, err
	case <-time.After(delay):
	}
	return p.once(ctx, sem, t, param)
}

func (p *Prober) once(ctx context.Context, sem chan struct{}, t *Target, param string) (Verdict, error) {
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return Inconclusive, ctx.Err()
	}
	defer func() { <-sem }()
	err := p.sendProbe(ctx, t, param)
	return Classify(err), err
}

// sendProbe sends the pair's smallest request using param ("" for none) within the prober's
// timeout and drains the answer.
func (p *Prober) sendProbe(ctx context.Context, t *Target, param string) error {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	maxTokens := int64(ProbeMaxTokens)
	if l := t.Model.OutputTokenLimit; l != nil && *l > 0 {
		maxTokens = min(maxTokens, int64(*l)) // the probe must not break the model's own limit
	}
	return p.send(ctx, t, request(t.Model.ID, t.Family, param, maxTokens))
}

// send generates and drains the answer: a stream that breaks off is not a success.
func (p *Prober) send(ctx context.Context, t *Target, req *corev1.GenerateRequest) error {
	if t.Provider == nil {
		return errors.New("the route names an unknown provider")
	}
	adapter := p.Adapters[t.Provider.Kind]
	if adapter == nil {
		return errors.New("no adapter for provider kind " + t.Provider.Kind)
	}
	stream, err := adapter.Generate(ctx, routing.Call(t.Model, routing.Upstream(t.Model, t.Provider, t.Route, p.Env), req, ProbeMaxTokens))
	if err != nil {
		return err
	}
	defer stream.Close()
	_, err = provider.Drain(stream)
	return err
}

// Classify maps a probe's error to its verdict: success is support; a 400-class answer of
// the upstream (400, 404, 422), or the adapter's own invalid_request_error, is a rejection;
// anything else (transport, timeout, 401/403, 429, 5xx) says nothing about the parameter.
func Classify(err error) Verdict {
	if err == nil {
		return Supported
	}
	var ae *apierror.Error
	if errors.As(err, &ae) {
		if ae.Code == apierror.InvalidRequest {
			return Unsupported
		}
		return Inconclusive
	}
	var pe *provider.Error
	if errors.As(err, &pe) && !pe.Timeout {
		switch pe.Status {
		case http.StatusBadRequest, http.StatusNotFound, http.StatusUnprocessableEntity:
			return Unsupported
		}
	}
	return Inconclusive
}

func (p *Prober) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Prober) logResult(r *Result) {
	if p.Log == nil {
		return
	}
	if r.Err != nil {
		p.Log.Warn("capability verification incomplete: nothing recorded", "model", r.Model, "family", r.EndpointFamily, "provider", r.Provider, "err", r.Err)
		return
	}
	p.Log.Info("capabilities verified", "model", r.Model, "family", r.EndpointFamily, "provider", r.Provider,
		"supported", r.Supported, "unsupported", r.Unsupported, "inconclusive", r.Inconclusive, "reasons", r.Reasons)
}
