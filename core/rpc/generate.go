package rpc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/proto"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/billing"
	"modelgateway/core/provider"
	"modelgateway/core/routing"
	"modelgateway/core/snapshot"
	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/lazyflush"
)

// DefaultMaxTokens is the output limit sent to an upstream protocol that requires one
// (messages) when neither the client nor the model's explicit limit gives one.
const DefaultMaxTokens = billing.DefaultOutputTokens

// Deps is what CoreServer's priced RPCs (Generate, CountTokens, Embed, Forward,
// Realtime) use beyond the snapshot and the store: the provider adapters, the local counters,
// the ledger, the observer and their limits.
type Deps struct {
	// Adapters by provider kind.
	Adapters map[string]provider.Adapter
	// Counter counts tokens locally when the upstream cannot.
	Counter func(req *corev1.GenerateRequest) int64
	// RealtimeSessionsPerKey bounds the realtime sessions of one key on this replica;
	// DefaultRealtimeSessionsPerKey when 0.
	RealtimeSessionsPerKey int
	// RealtimeMaxSession ends a realtime session after this long (close 1008); 0: no limit.
	RealtimeMaxSession time.Duration
	// TextCounter measures texts whose upstream reports no usage (embeddings, moderations).
	TextCounter func(texts []string) int64
	// Ledger holds and charges; every generation goes through it.
	Ledger   *billing.Ledger
	Observer Observer
	Log      *slog.Logger
	// Env reads provider credentials; os.Getenv when nil.
	Env func(string) string
}

// Generate implements the streaming RPC: checks, price and hold, the upstream call, and the
// charge of reliable usage, exactly once, when the answer has been delivered.
func (s *CoreServer) Generate(req *corev1.GenerateRequest, srv corev1.CoreService_GenerateServer) error {
	ctx := srv.Context()
	b, err := s.admit(ctx, req.GetEndpointFamily(), req.GetModel())
	if err != nil {
		return err
	}
	defer b.finish()
	m, out := b.m, &b.out
	if apiErr := checkRequest(m, req); apiErr != nil {
		return b.refuse(apiErr)
	}
	if err := b.checkParameters(req.GetParameters()); err != nil {
		return err
	}
	if err := b.holdWorst(true, func(p billing.Price) decimal.Decimal {
		return p.WorstCase(billing.InputEstimate(upstreamSize(req)), outputLimit(m, req))
	}); err != nil {
		return err
	}

	stream, head, err := s.open(b, req)
	if err != nil {
		out.Status = "upstream_error"
		return err
	}
	defer stream.Close()
	s.Deps.startInput(req, head) // startinput.go

	// unavailable ends an answer whose charge could not be made durable: its end is not
	// delivered, so it stays a cut answer and is not charged.
	unavailable := func(err error) {
		ae := upstreamError(err)
		_ = srv.Send(&corev1.GenerateEvent{Event: &corev1.GenerateEvent_Error{Error: &corev1.StreamError{Code: ae.Code, Message: ae.Message}}})
	}
	// A streamed answer's events are flushed when the gateway waits (core/wire/lazyflush):
	// before the wait for the durable charge, what the client has not yet been sent goes out,
	// all but the end of the answer. A client that has gone is not charged.
	flush := lazyflush.From(ctx)
	flushed := func() bool {
		if err := flush.BeforeWait(); err != nil {
			b.uncharged("cancelled", "client went away: "+err.Error())
			return false
		}
		return true
	}
	send := func(ev *corev1.GenerateEvent) bool {
		if u := ev.GetUsage(); u != nil {
			// Only the stream's last event carries usage; price it for the client's headers,
			// and make the charge durable before the client can see the end of the answer.
			if !flushed() {
				return false
			}
			b.charge(stream.Usage())
			if err := b.settle(); err != nil {
				unavailable(err)
				return false
			}
			u.Cost, u.Currency = b.costString()
		}
		if out.FirstByteTime.IsZero() {
			out.FirstByteTime = time.Now()
		}
		if err := srv.Send(ev); err != nil {
			// Gone before the terminal usage was delivered: nothing may be charged.
			b.uncharged("cancelled", "client went away: "+err.Error())
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
			// A priced answer without a usage event (per-request price): durable before the
			// front writes the end.
			if !flushed() {
				return nil
			}
			b.charge(stream.Usage())
			if err := b.settle(); err != nil {
				unavailable(err)
			}
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				b.uncharged("cancelled", "stream failed: "+err.Error())
				return nil
			}
			b.uncharged("upstream_error", "stream failed: "+err.Error())
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

// upstreamSize is the size behind a hold's input estimate: the larger of the raw body (sent
// as it is to an upstream of the client's protocol) and the structured request (translated
// for any other), so that a gRPC caller cannot shrink its hold with a small raw body.
func upstreamSize(req *corev1.GenerateRequest) int {
	raw := len(req.GetRawBody())
	return max(raw, proto.Size(req)-raw)
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

// open tries the model's routes for the family in order and returns the first stream that
// produced its Start event and its first upstream event. Another route is tried only on a
// retryable failure, and only here: nothing has reached the client yet, and an upstream that
// answers its headers but then nothing within the first-byte timeout is still a timeout.
func (s *CoreServer) open(b *billed, req *corev1.GenerateRequest) (provider.Stream, []*corev1.GenerateEvent, error) {
	type opened struct {
		stream provider.Stream
		head   []*corev1.GenerateEvent
	}
	o, _, err := firstAnswer(b, always, func(a provider.Adapter, up provider.Upstream) (opened, error) {
		stream, err := a.Generate(b.ctx, s.Deps.call(b.m, up, req))
		if err != nil {
			return opened{}, err
		}
		head, err := firstEvents(stream)
		if err != nil {
			stream.Close()
			return opened{}, err
		}
		return opened{stream, head}, nil
	})
	return o.stream, o.head, err
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

func (g *Deps) call(m *snapshot.Model, up provider.Upstream, req *corev1.GenerateRequest) *provider.Call {
	return routing.Call(m, up, req, DefaultMaxTokens)
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
		return apierror.New(apierror.UpstreamTimeout, "%s", provider.Redact(pe.Message))
	}
	e := apierror.New(apierror.UpstreamError, "%s", provider.Redact(pe.Message))
	switch {
	case pe.Status == http.StatusTooManyRequests:
		e.Status = http.StatusTooManyRequests
	case pe.Status >= 400 && pe.Status < 500 && pe.Status != http.StatusUnauthorized && pe.Status != http.StatusForbidden:
		e.Status = http.StatusBadRequest
	}
	return e
}

// checkRequest applies the model's catalogue limits: streaming and the explicit output limit
// (spec 8).
func checkRequest(m *snapshot.Model, req *corev1.GenerateRequest) *apierror.Error {
	if req.GetStream() && !m.Streaming {
		return apierror.New(apierror.StreamingNotSupported, "the model %q does not stream", m.ID)
	}
	if req.MaxOutputTokens != nil && m.OutputTokenLimit != nil && req.GetMaxOutputTokens() > int64(*m.OutputTokenLimit) {
		return apierror.New(apierror.InvalidRequest, "the output limit %d is above the model's limit of %d tokens", req.GetMaxOutputTokens(), *m.OutputTokenLimit)
	}
	return nil
}

// CountTokens implements the counting RPC (count.go).
func (s *CoreServer) CountTokens(ctx context.Context, creq *corev1.CountTokensRequest) (*corev1.CountTokensResponse, error) {
	return s.countTokensRPC(ctx, creq.GetRequest())
}
