package rpc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"time"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
	"modelgateway/core/provider"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// DefaultMaxTokens is the output limit sent to an upstream protocol that requires one
// (messages) when neither the client nor the model's explicit limit gives one.
const DefaultMaxTokens = 8192

// Outcome is what one finished generation leaves for billing: who asked, what for, and the
// normalised usage. Issue-level note: pricing and charging consume this.
type Outcome struct {
	RequestID      string
	KeyID          string
	ProfileID      string
	Model          string
	EndpointFamily string
	Provider       string
	// Status is "ok", "upstream_error", "cancelled", ...
	Status    string
	Usage     metering.Usage
	StartTime time.Time
	EndTime   time.Time
}

// Meter receives every outcome exactly once. It must not block the request path for long.
type Meter interface {
	Record(ctx context.Context, o Outcome)
}

// Generator serves Generate and CountTokens for CoreServer.
type Generator struct {
	// Adapters by provider kind.
	Adapters map[string]provider.Adapter
	// Counter counts tokens locally when the upstream cannot.
	Counter func(req *corev1.GenerateRequest) int64
	Meter   Meter
	Log     *slog.Logger
	// Env reads provider credentials; os.Getenv when nil.
	Env func(string) string
}

func (g *Generator) env(name string) string {
	if name == "" {
		return ""
	}
	if g.Env != nil {
		return g.Env(name)
	}
	return os.Getenv(name)
}

// Generate implements the streaming RPC.
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
	if apiErr := checkRequest(m, req); apiErr != nil {
		return apiErr
	}
	out := Outcome{
		RequestID: RequestID(ctx), KeyID: k.ID.String(), ProfileID: k.ProfileID.String(),
		Model: m.ID, EndpointFamily: req.GetEndpointFamily(), StartTime: time.Now(), Status: "ok",
		Usage: metering.Unreliable("no upstream answered"),
	}
	defer func() {
		out.EndTime = time.Now()
		if s.Gen.Meter != nil {
			s.Gen.Meter.Record(context.WithoutCancel(ctx), out)
		}
	}()

	stream, head, route, err := s.open(ctx, snap, m, req)
	if err != nil {
		out.Status = "upstream_error"
		return err
	}
	defer stream.Close()
	out.Provider = route.ProviderID

	for _, ev := range head {
		if err := srv.Send(ev); err != nil {
			out.Status = "cancelled"
			out.Usage = metering.Unreliable("client went away: " + err.Error())
			return nil
		}
	}
	for {
		ev, err := stream.Next()
		if errors.Is(err, io.EOF) {
			out.Usage = stream.Usage()
			return nil
		}
		if err != nil {
			out.Usage = metering.Unreliable("stream failed: " + err.Error())
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
		if err := srv.Send(ev); err != nil {
			out.Status = "cancelled"
			out.Usage = metering.Unreliable("client went away: " + err.Error())
			return nil
		}
	}
}

// open tries the model's routes for the family in order and returns the first stream that
// produced its Start event and its first upstream event. Another route is tried only on a
// retryable failure, and only here: nothing has reached the client yet, and an upstream that
// answers its headers but then nothing within the first-byte timeout is still a timeout.
func (s *CoreServer) open(ctx context.Context, snap *snapshot.Snapshot, m *snapshot.Model, req *corev1.GenerateRequest) (provider.Stream, []*corev1.GenerateEvent, *store.Route, error) {
	var lastErr error
	for i := range m.Routes {
		route := &m.Routes[i]
		if !slices.Contains(route.EndpointFamilies, req.GetEndpointFamily()) {
			continue
		}
		p := snap.Providers[route.ProviderID]
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
	c := &provider.Call{
		Request: req, PublicModel: m.ID, UpstreamModel: route.UpstreamModel,
		BaseURL: p.BaseURL, APIKey: g.env(p.APIKeyEnv), DefaultMaxTokens: DefaultMaxTokens,
		Timeouts: provider.Timeouts{FirstByte: p.FirstByteTimeout, Idle: p.IdleTimeout},
	}
	if c.UpstreamModel == "" {
		c.UpstreamModel = m.ID
	}
	if m.OutputTokenLimit != nil {
		c.DefaultMaxTokens = int64(*m.OutputTokenLimit)
	}
	return c
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
	for i := range m.Routes {
		route := &m.Routes[i]
		if !slices.Contains(route.EndpointFamilies, req.GetEndpointFamily()) {
			continue
		}
		p := snap.Providers[route.ProviderID]
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
