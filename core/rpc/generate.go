package rpc

import (
	"context"
	"errors"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/billing"
	"modelgateway/core/metering"
	"modelgateway/core/provider"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/verify"
	"modelgateway/core/wire/apierror"
)

// DefaultMaxTokens is the output limit sent to an upstream protocol that requires one
// (messages) when neither the client nor the model's explicit limit gives one.
const DefaultMaxTokens = billing.DefaultOutputTokens

// Outcome is what one finished generation leaves behind: who asked, what for, the normalised
// usage and what it cost.
type Outcome struct {
	RequestID      string
	KeyID          string
	ProfileID      string
	Model          string
	EndpointFamily string
	Provider       string
	// Status is "ok", "upstream_error", "cancelled", or the spec code that refused the request.
	Status    string
	Usage     metering.Usage
	Cost      decimal.NullDecimal
	Currency  string
	StartTime time.Time
	EndTime   time.Time
}

// Meter observes every outcome once, after billing has queued it.
type Meter interface {
	Record(ctx context.Context, o Outcome)
}

// Generator serves Generate and CountTokens for CoreServer.
type Generator struct {
	// Adapters by provider kind.
	Adapters map[string]provider.Adapter
	// Counter counts tokens locally when the upstream cannot.
	Counter func(req *corev1.GenerateRequest) int64
	// Ledger holds and charges; every generation goes through it.
	Ledger *billing.Ledger
	Meter  Meter
	Log    *slog.Logger
	// Env reads provider credentials; os.Getenv when nil.
	Env func(string) string
}

// Generate implements the streaming RPC: checks, price and hold, the upstream call, and the
// charge of reliable usage, exactly once, when the answer has been delivered.
func (s *CoreServer) Generate(req *corev1.GenerateRequest, srv corev1.CoreService_GenerateServer) error {
	ctx := srv.Context()
	snap, k, err := s.caller(ctx)
	if err != nil {
		return err
	}
	m, apiErr := snap.Authorize(k, req.GetEndpointFamily(), req.GetModel())
	if apiErr != nil {
		return apiErr
	}
	id, generated := requestID(ctx)
	out := Outcome{
		RequestID: id, KeyID: k.ID.String(), ProfileID: k.ProfileID.String(), Currency: snap.Currency,
		Model: m.ID, EndpointFamily: req.GetEndpointFamily(), StartTime: time.Now(), Status: "ok",
		Usage: metering.Unreliable("no upstream answered"),
	}
	// A client's id is used once the key checks have passed, whatever the outcome (contract);
	// the gateway's own ids are unique by construction and cost no database round trip.
	if !generated {
		ok, err := s.Store.ReserveRequestID(ctx, s.record(k, &out))
		if err != nil {
			return err
		}
		if !ok {
			return apierror.New(apierror.DuplicateRequestID, "the request id %q was already used", id)
		}
	}
	var hold *billing.Hold
	defer func() { s.finish(ctx, k, hold, &out) }()

	refuse := func(e *apierror.Error) error {
		out.Status = e.Code
		return e
	}
	if apiErr := checkRequest(m, req); apiErr != nil {
		return refuse(apiErr)
	}
	price, err := billing.Find(m.Prices, req.GetEndpointFamily(), true)
	if err != nil {
		return refuse(apierror.New(apierror.PricingUnavailable, "the model %q has no price for %s", m.ID, req.GetEndpointFamily()))
	}
	worst := price.WorstCase(billing.InputEstimate(len(req.GetRawBody())), outputLimit(m, req))
	hold, err = s.Gen.Ledger.Hold(ctx, k.ProfileID, worst)
	if errors.Is(err, billing.ErrInsufficient) {
		return refuse(apierror.New(apierror.InsufficientBalance, "the balance cannot cover this request (up to %s %s)", worst, snap.Currency))
	}
	if err != nil {
		return err
	}

	stream, head, route, err := s.open(ctx, snap, m, req)
	if err != nil {
		out.Status = "upstream_error"
		return err
	}
	defer stream.Close()
	out.Provider = route.ProviderID

	// charge prices the answer once its terminal usage is known: reliable usage at the token
	// rates, or the fixed price of a complete answer.
	charge := func(u metering.Usage) {
		out.Usage = u
		if u.Reliable || price.PerRequest {
			out.Cost = decimal.NullDecimal{Decimal: price.Cost(u), Valid: true}
		}
	}
	send := func(ev *corev1.GenerateEvent) bool {
		if u := ev.GetUsage(); u != nil {
			// Only the stream's last event carries usage; price it for the client's headers.
			charge(stream.Usage())
			if out.Cost.Valid {
				u.Cost, u.Currency = out.Cost.Decimal.String(), snap.Currency
			}
		}
		if err := srv.Send(ev); err != nil {
			// Gone before the terminal usage was delivered: nothing may be charged.
			out.Status, out.Cost = "cancelled", decimal.NullDecimal{}
			out.Usage = metering.Unreliable("client went away: " + err.Error())
			return false
		}
		return true
	}
	for _, ev := range head {
		if !send(ev) {
			return nil
		}
	}
	for {
		ev, err := stream.Next()
		if errors.Is(err, io.EOF) {
			charge(stream.Usage())
			return nil
		}
		if err != nil {
			out.Usage, out.Cost = metering.Unreliable("stream failed: "+err.Error()), decimal.NullDecimal{}
			if ctx.Err() != nil {
				out.Status = "cancelled"
				return nil
			}
			out.Status = "upstream_error"
			ae := upstreamError(err)
			// The status line has gone: the front renders this as the protocol's error event.
			_ = srv.Send(&corev1.GenerateEvent{Event: &corev1.GenerateEvent_Error{Error: &corev1.StreamError{Code: ae.Code, Message: ae.Message}}})
			return nil
		}
		if !send(ev) {
			return nil
		}
	}
}

// outputLimit is the output side of a hold: the request's limit, else the model's, else the
// default the translating adapters also send.
func outputLimit(m *snapshot.Model, req *corev1.GenerateRequest) int64 {
	switch {
	case req.MaxOutputTokens != nil:
		return req.GetMaxOutputTokens()
	case m.OutputTokenLimit != nil:
		return int64(*m.OutputTokenLimit)
	}
	return billing.DefaultOutputTokens
}

func (s *CoreServer) record(k *snapshot.Key, o *Outcome) *store.RequestRecord {
	end := o.EndTime
	return &store.RequestRecord{
		ProfileID: k.ProfileID, RequestID: o.RequestID, KeyID: k.ID, Model: o.Model, EndpointFamily: o.EndpointFamily,
		Status: o.Status, Currency: o.Currency, InputTokens: o.Usage.Input, CachedInputTokens: o.Usage.CachedInput,
		CacheWriteTokens: o.Usage.CacheWrite, OutputTokens: o.Usage.Output, ReasoningTokens: o.Usage.Reasoning,
		UsageReliable: o.Usage.Reliable, Cost: o.Cost, StartTime: o.StartTime, EndTime: &end,
	}
}

// finish releases the hold and queues the record and its charge for settlement.
func (s *CoreServer) finish(ctx context.Context, k *snapshot.Key, hold *billing.Hold, o *Outcome) {
	o.EndTime = time.Now()
	s.Gen.Ledger.Finish(hold, *s.record(k, o))
	if s.Gen.Meter != nil {
		s.Gen.Meter.Record(context.WithoutCancel(ctx), *o)
	}
}

// open tries the model's routes for the family in order and returns the first stream that
// produced its Start event and its first upstream event. Another route is tried only on a
// retryable failure, and only here: nothing has reached the client yet, and an upstream that
// answers its headers but then nothing within the first-byte timeout is still a timeout.
func (s *CoreServer) open(ctx context.Context, snap *snapshot.Snapshot, m *snapshot.Model, req *corev1.GenerateRequest) (provider.Stream, []*corev1.GenerateEvent, *store.Route, error) {
	var lastErr error
	for route, p := range upstreams(snap, m, req.GetEndpointFamily()) {
		adapter := s.Gen.Adapters[p.Kind]
		if adapter == nil {
			lastErr = &provider.Error{Message: "no adapter for provider kind " + p.Kind}
			continue
		}
		stream, err := adapter.Generate(ctx, s.Gen.call(m, p, route, req))
		if err == nil {
			var head []*corev1.GenerateEvent
			if head, err = firstEvents(stream); err == nil {
				return stream, head, route, nil
			}
			stream.Close()
		}
		lastErr = err
		if ctx.Err() != nil {
			return nil, nil, nil, apierror.New(apierror.InvalidRequest, "the request was cancelled")
		}
		var pe *provider.Error
		if errors.As(err, &pe) && !pe.Retryable {
			break
		}
		if s.Gen.Log != nil {
			s.Gen.Log.Warn("upstream failed, trying the next route", "model", m.ID, "provider", p.ID, "err", err)
		}
	}
	if lastErr == nil {
		return nil, nil, nil, apierror.New(apierror.ModelNotFound, "the model %q has no route for %s", m.ID, req.GetEndpointFamily())
	}
	return nil, nil, nil, upstreamError(lastErr)
}

// upstreams yields the model's routes for a family in fallback order, with their providers.
func upstreams(snap *snapshot.Snapshot, m *snapshot.Model, family string) iter.Seq2[*store.Route, *store.Provider] {
	return func(yield func(*store.Route, *store.Provider) bool) {
		for i := range m.Routes {
			r := &m.Routes[i]
			if slices.Contains(r.EndpointFamilies, family) && !yield(r, snap.Providers[r.ProviderID]) {
				return
			}
		}
	}
}

// firstEvents reads the Start event and the first event after it.
func firstEvents(stream provider.Stream) ([]*corev1.GenerateEvent, error) {
	start, err := stream.Next()
	if errors.Is(err, io.EOF) {
		return nil, &provider.Error{Message: "the upstream answered with an empty stream", Retryable: true}
	}
	if err != nil {
		return nil, err
	}
	if start.GetStart() == nil {
		return nil, &provider.Error{Message: "the adapter did not start its stream"}
	}
	next, err := stream.Next()
	if errors.Is(err, io.EOF) {
		return []*corev1.GenerateEvent{start}, nil
	}
	if err != nil {
		return nil, err
	}
	return []*corev1.GenerateEvent{start, next}, nil
}

func (g *Generator) call(m *snapshot.Model, p *store.Provider, route *store.Route, req *corev1.GenerateRequest) *provider.Call {
	return verify.Call(m, p, route, req, g.Env, DefaultMaxTokens)
}

// upstreamError is the one map from upstream failures to spec errors: timeouts are
// upstream_timeout; 429 and 400-class answers keep their status so that clients back off or
// fix the request; everything else is 502.
func upstreamError(err error) *apierror.Error {
	var ae *apierror.Error
	if errors.As(err, &ae) {
		return ae
	}
	var pe *provider.Error
	if !errors.As(err, &pe) {
		return apierror.New(apierror.UpstreamError, "the upstream failed")
	}
	if pe.Timeout {
		return apierror.New(apierror.UpstreamTimeout, "%s", pe.Message)
	}
	e := apierror.New(apierror.UpstreamError, "%s", pe.Message)
	switch {
	case pe.Status == http.StatusTooManyRequests:
		e.Status = http.StatusTooManyRequests
	case pe.Status >= 400 && pe.Status < 500 && pe.Status != http.StatusUnauthorized && pe.Status != http.StatusForbidden:
		e.Status = http.StatusBadRequest
	}
	return e
}

// checkRequest applies the model's catalogue limits: streaming, the explicit output limit
// (spec 8) and the verified optional parameters (spec 2.3, 2.6).
func checkRequest(m *snapshot.Model, req *corev1.GenerateRequest) *apierror.Error {
	if req.GetStream() && !m.Streaming {
		return apierror.New(apierror.StreamingNotSupported, "the model %q does not stream", m.ID)
	}
	if req.MaxOutputTokens != nil && m.OutputTokenLimit != nil && req.GetMaxOutputTokens() > int64(*m.OutputTokenLimit) {
		return apierror.New(apierror.InvalidRequest, "the output limit %d is above the model's limit of %d tokens", req.GetMaxOutputTokens(), *m.OutputTokenLimit)
	}
	if c, ok := m.Capabilities[req.GetEndpointFamily()]; ok {
		for _, p := range req.GetParameters() {
			if !slices.Contains(c.OptionalParameters, p) {
				return apierror.New(apierror.InvalidRequest, "the parameter %q is not supported by the model %q on %s", p, m.ID, req.GetEndpointFamily())
			}
		}
	}
	return nil
}

// CountTokens implements the counting RPC: the upstream counts when its protocol can, else
// the local tokenizer does. Nothing is charged.
func (s *CoreServer) CountTokens(ctx context.Context, creq *corev1.CountTokensRequest) (*corev1.CountTokensResponse, error) {
	req := creq.GetRequest()
	snap, k, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	m, apiErr := snap.Authorize(k, req.GetEndpointFamily(), req.GetModel())
	if apiErr != nil {
		return nil, apiErr
	}
	var lastErr error
	for route, p := range upstreams(snap, m, req.GetEndpointFamily()) {
		adapter := s.Gen.Adapters[p.Kind]
		if adapter == nil {
			continue
		}
		n, err := adapter.CountTokens(ctx, s.Gen.call(m, p, route, req))
		if err == nil {
			return &corev1.CountTokensResponse{InputTokens: n}, nil
		}
		if errors.Is(err, provider.ErrCannotCount) {
			break
		}
		lastErr = err
		var pe *provider.Error
		if errors.As(err, &pe) && !pe.Retryable {
			return nil, upstreamError(err)
		}
	}
	if lastErr != nil && s.Gen.Counter == nil {
		return nil, upstreamError(lastErr)
	}
	if s.Gen.Counter == nil {
		return nil, apierror.New(apierror.Internal, "no token counter")
	}
	return &corev1.CountTokensResponse{InputTokens: s.Gen.Counter(req)}, nil
}
