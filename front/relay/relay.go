// Package relay is the part of every generation route that does not depend on the protocol:
// read the body within the route's limit, let the protocol decode it, call core's Generate,
// and pump the events into the protocol's encoder. Protocol packages (front/chatcompletions,
// front/messages, ...) implement Protocol; the relay owns errors before the first byte, client
// disconnects, and the request id. The media routes (front/media) and the realtime socket use
// its parts too.
//
// One concern per file:
//
//   - relay.go: Handler, a generation route from the body to the last event;
//   - sink.go: the server side of the in-process Generate stream, events into the encoder;
//   - held.go: a non-streaming answer held until its cost is known;
//   - body.go: reading a body within the route's limit and the replica's memory budget;
//   - keys.go: the client's API key, found, normalised, and checked before a bad body;
//   - context.go: the key and request id as gRPC metadata for core;
//   - errors.go: the one place errors become the spec's envelope;
//   - header.go: header values set without Header.Set's per-call allocations;
//   - count.go: the token-counting routes;
//   - cost.go: the cost fields added to a usage object;
//   - stream.go: generic stream adapters for the in-process calls.
package relay

import (
	"context"
	"net/http"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/lazyflush"
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
	body, apiErr := ReadJSON(r, h.Limit)
	var req *corev1.GenerateRequest
	if apiErr == nil {
		req, apiErr = h.Proto.Decode(r, body)
	}
	if apiErr != nil {
		WriteError(w, r, h.keyFirst(OutgoingContext(r), apiErr))
		return
	}
	if req.RawBody == nil { // a protocol may rewrite the body (front/responses expands a stored conversation)
		req.RawBody = body
	}
	// However the handler ends, the upstream request ends too: net/http cancels the request's
	// context the moment the handler returns (and HTTP/2 when the stream closes), and core's
	// Generate has returned before this handler does. A cancellable context of our own per
	// request cost about 1.7 µs and three allocations in the bench's profile (issue 35).
	ctx := IncomingContext(r)
	s := &sink{ctx: ctx, h: h, w: w, r: r, req: req}
	if req.GetStream() {
		// Events the upstream delivered together go out in one write: the encoder's flushes
		// wait for core's next wait (lazyflush). What is pending when the handler returns goes
		// out with the end of the response, once End has passed it on.
		// The writer and the context that carries it live in the sink's allocation.
		s.lazyRoom.Init(w)
		s.lazy = &s.lazyRoom
		s.lazyCtx = lazyflush.Context{Context: ctx, W: s.lazy}
		s.ctx = &s.lazyCtx
		defer s.lazy.End() // what the writer still holds
	}
	err := h.Generate(req, s)
	switch {
	case !s.started && err == nil:
		WriteError(w, r, apierror.New(apierror.UpstreamError, "the upstream answered nothing"))
	case !s.started:
		WriteError(w, r, ErrorOf(err))
	case s.done:
	case s.lazy.Err() != nil:
		// A flush failed: the client has gone, and core stopped without charging.
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

// keyFirst makes a bad key win over a bad body: a client without a valid key learns that
// first, whatever else is wrong. It costs a core call only on the error path.
func (h *Handler) keyFirst(ctx context.Context, bodyErr *apierror.Error) *apierror.Error {
	return KeyFirst(ctx, h.Core, h.Family, bodyErr)
}
