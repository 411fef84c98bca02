// Package relay is the part of every generation route that does not depend on the protocol:
// read the body within the route's limit, let the protocol decode it, call core's Generate,
// and pump the events into the protocol's encoder. Protocol packages (front/chatcompletions,
// front/messages, ...) implement Protocol; the relay owns errors before the first byte, client
// disconnects, and the request id.
package relay

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
)

// Protocol is one client protocol's generation route.
type Protocol interface {
	// Decode checks the client's body and builds the canonical request, with Protocol,
	// EndpointFamily, Model, Stream, RawBody, MaxOutputTokens and Parameters filled in. Key,
	// family, model, limit and capability checks are core's.
	Decode(r *http.Request, body []byte) (*corev1.GenerateRequest, *apierror.Error)
	// Encoder renders the answer to one request.
	Encoder(w http.ResponseWriter, r *http.Request, req *corev1.GenerateRequest) Encoder
}

// Encoder renders canonical events in one protocol. The relay calls Start once, when an
// upstream has answered and before anything is written; then Event for every further event;
// then exactly one of Finish (the stream ended normally) or Fail (it failed after Start).
// Fail on a non-streaming request is never called: the relay writes the error envelope.
type Encoder interface {
	Start(s *corev1.Start) error
	Event(ev *corev1.GenerateEvent) error
	Finish() error
	// Fail writes the protocol's own error event and ends the stream.
	Fail(e *corev1.StreamError)
}

// GenerateFunc runs core's Generate RPC in process, in the caller's goroutine, pushing the
// events into stream: the generated server interface, without the per-call goroutine, channel
// hand-offs and stack growth of a client stream. Interceptors are the caller's to apply. In
// the binary it is core/rpc.InProcess.Generate, the named front → core hop.
type GenerateFunc func(req *corev1.GenerateRequest, stream corev1.CoreService_GenerateServer) error

// Handler serves a generation route.
type Handler struct {
	// Core serves the unary calls (the key check on the error path).
	Core     corev1.CoreServiceClient
	Generate GenerateFunc
	Proto    Protocol
	// Limit is the route's body limit in bytes (spec 8).
	Limit int64
	// Family is the endpoint family, used to check the key when the body is rejected before
	// core sees it.
	Family string
}

// ServeHTTP expects the key already normalised into Authorization: Bearer and the request id
// set (front.Server does both).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, apiErr := ReadBody(r, h.Limit)
	var req *corev1.GenerateRequest
	if apiErr == nil {
		req, apiErr = h.Proto.Decode(r, body)
	}
	if apiErr != nil {
		WriteError(w, r, h.keyFirst(OutgoingContext(r), apiErr))
		return
	}
	req.RawBody = body
	ctx, cancel := context.WithCancel(IncomingContext(r))
	defer cancel() // however the handler ends, the upstream request ends too
	s := &sink{ctx: ctx, h: h, w: w, r: r, req: req}
	err := h.Generate(req, s)
	switch {
	case !s.started && err == nil:
		WriteError(w, r, apierror.New(apierror.UpstreamError, "the upstream answered nothing"))
	case !s.started:
		WriteError(w, r, ErrorOf(err))
	case s.done:
	case err != nil:
		s.fail(ErrorOf(err))
	default:
		if err := s.enc.Finish(); err != nil && s.held != nil {
			WriteError(w, r, apierror.New(apierror.UpstreamError, "%v", err))
			return
		}
		if s.held != nil {
			s.held.send(w)
		}
	}
}

// sink is the server side of the in-process Generate stream: every event core sends goes
// straight into the protocol's encoder.
type sink struct {
	ctx     context.Context
	h       *Handler
	w       http.ResponseWriter
	r       *http.Request
	req     *corev1.GenerateRequest
	enc     Encoder
	held    *heldResponse
	started bool
	done    bool // the answer has ended (error event written or start refused)
}

func (s *sink) Context() context.Context     { return s.ctx }
func (s *sink) SetHeader(metadata.MD) error  { return nil }
func (s *sink) SendHeader(metadata.MD) error { return nil }
func (s *sink) SetTrailer(metadata.MD)       {}
func (s *sink) RecvMsg(any) error            { return errors.New("relay: Generate has no client stream") }

func (s *sink) SendMsg(m any) error {
	ev, ok := m.(*corev1.GenerateEvent)
	if !ok {
		return errors.New("relay: not a GenerateEvent")
	}
	return s.Send(ev)
}

// Send renders one event. An error tells core that the client cannot be reached any more, so
// that it stops and charges nothing.
func (s *sink) Send(ev *corev1.GenerateEvent) error {
	if s.done {
		return errAnswerEnded
	}
	if !s.started {
		start := ev.GetStart()
		if start == nil {
			return errors.New("relay: the first event is not Start")
		}
		s.started = true
		// A non-streaming answer is held until its cost is known, so that it can travel in
		// the headers (x-request-cost); it is one object in memory anyway.
		out := s.w
		if !s.req.GetStream() {
			s.held = &heldResponse{header: s.w.Header(), status: http.StatusOK}
			out = s.held
		}
		s.enc = s.h.Proto.Encoder(out, s.r, s.req)
		if err := s.enc.Start(start); err != nil {
			s.done = true
			if s.held != nil {
				s.held.send(s.w) // whatever the encoder answered, e.g. its own refusal
			}
			return err
		}
		return nil
	}
	if se := ev.GetError(); se != nil {
		s.fail(&apierror.Error{Code: se.GetCode(), Message: se.GetMessage()})
		return nil
	}
	if u := ev.GetUsage(); u != nil && s.held != nil && u.GetCost() != "" {
		s.w.Header().Set("X-Request-Cost", u.GetCost())
		s.w.Header().Set("X-Request-Currency", u.GetCurrency())
	}
	if err := s.enc.Event(ev); err != nil {
		// The client went away or the answer cannot be rendered.
		s.done = true
		if s.held != nil {
			WriteError(s.w, s.r, apierror.New(apierror.UpstreamError, "%v", err))
		}
		return err
	}
	return nil
}

var errAnswerEnded = errors.New("relay: the answer has already ended")

// fail ends an answer that failed after Start: the protocol's error event on a stream, the
// envelope otherwise (nothing of a held answer has been written yet).
func (s *sink) fail(e *apierror.Error) {
	s.done = true
	if s.r.Context().Err() != nil {
		return // nobody to tell
	}
	if s.held != nil {
		WriteError(s.w, s.r, e)
		return
	}
	s.enc.Fail(&corev1.StreamError{Code: e.Code, Message: e.Message})
}

// ErrorOf turns what core returned into the spec error to render.
func ErrorOf(err error) *apierror.Error {
	var ae *apierror.Error
	if errors.As(err, &ae) {
		return ae
	}
	return apistatus.FromError(err)
}

// keyFirst makes a bad key win over a bad body: a client without a valid key learns that
// first, whatever else is wrong. It costs a core call only on the error path.
func (h *Handler) keyFirst(ctx context.Context, bodyErr *apierror.Error) *apierror.Error {
	return KeyFirst(ctx, h.Core, h.Family, bodyErr)
}

// KeyFirst returns the key's error when the key may not call the family at all, else
// bodyErr; ctx is an OutgoingContext.
func KeyFirst(ctx context.Context, core corev1.CoreServiceClient, family string, bodyErr *apierror.Error) *apierror.Error {
	// Not cancelled with the request: a body that failed because the connection did (a
	// timeout) still gets its proper answer; the check is an in-memory lookup.
	if _, err := core.Authorize(context.WithoutCancel(ctx), &corev1.AuthorizeRequest{EndpointFamily: family}); err != nil {
		return apistatus.FromError(err)
	}
	return bodyErr
}

// IncomingContext is OutgoingContext as the server side of an in-process call sees it.
func IncomingContext(r *http.Request) context.Context {
	md, _ := metadata.FromOutgoingContext(OutgoingContext(r))
	return metadata.NewIncomingContext(r.Context(), md)
}

// OutgoingContext carries the key and request id to core as gRPC metadata.
func OutgoingContext(r *http.Request) context.Context {
	ctx := metadata.AppendToOutgoingContext(r.Context(),
		"authorization", r.Header.Get("Authorization"),
		"x-request-id", r.Header.Get("X-Request-Id"))
	if generated, _ := r.Context().Value(generatedKey{}).(bool); generated {
		ctx = metadata.AppendToOutgoingContext(ctx, "x-request-id-generated", "1")
	}
	return ctx
}

type generatedKey struct{}

// WithGeneratedID marks a request whose id the gateway made itself: core need not check such
// an id for reuse.
func WithGeneratedID(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), generatedKey{}, true))
}

// heldResponse collects a non-streaming answer so that headers can still be added after the
// encoder has rendered it.
type heldResponse struct {
	header http.Header
	status int
	body   []byte
}

func (h *heldResponse) Header() http.Header    { return h.header }
func (h *heldResponse) WriteHeader(status int) { h.status = status }
func (h *heldResponse) Write(b []byte) (int, error) {
	h.body = append(h.body, b...)
	return len(b), nil
}

func (h *heldResponse) send(w http.ResponseWriter) {
	w.Header().Del("Content-Length")
	w.WriteHeader(h.status)
	_, _ = w.Write(h.body)
}

// WriteError renders the spec envelope with the request's id; on the messages routes it
// carries the top-level "type":"error" that protocol's clients look for.
func WriteError(w http.ResponseWriter, r *http.Request, err *apierror.Error) {
	if p := r.URL.Path; p == "/v1/messages" || strings.HasPrefix(p, "/v1/messages/") {
		apierror.WriteTyped(w, r.Header.Get("X-Request-Id"), err)
		return
	}
	apierror.Write(w, r.Header.Get("X-Request-Id"), err)
}

// CountProtocol is a token-counting route.
type CountProtocol interface {
	// Decode builds the canonical request whose input is counted.
	Decode(r *http.Request, body []byte) (*corev1.GenerateRequest, *apierror.Error)
	// Render writes the protocol's count object.
	Render(w http.ResponseWriter, r *http.Request, inputTokens int64)
}

// CountHandler serves a token-counting route; counting is free and never streams.
type CountHandler struct {
	Core   corev1.CoreServiceClient
	Proto  CountProtocol
	Limit  int64
	Family string
}

func (h *CountHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := OutgoingContext(r)
	body, apiErr := ReadBody(r, h.Limit)
	var req *corev1.GenerateRequest
	if apiErr == nil {
		req, apiErr = h.Proto.Decode(r, body)
	}
	if apiErr != nil {
		WriteError(w, r, (&Handler{Core: h.Core, Family: h.Family}).keyFirst(ctx, apiErr))
		return
	}
	req.RawBody = body
	resp, err := h.Core.CountTokens(ctx, &corev1.CountTokensRequest{Request: req})
	if err != nil {
		WriteError(w, r, apistatus.FromError(err))
		return
	}
	h.Proto.Render(w, r, resp.GetInputTokens())
}
