package relay

import (
	"context"
	"errors"
	"net/http"

	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/callmd"
	"modelgateway/core/wire/lazyflush"
)

// sink is the server side of the in-process Generate stream: every event core sends goes
// straight into the protocol's encoder.
type sink struct {
	ctx  context.Context
	h    *Handler
	w    http.ResponseWriter
	r    *http.Request
	req  *corev1.GenerateRequest
	enc  Encoder
	held *heldResponse // &heldRoom for an answer that is held
	// heldRoom is held, in the sink's allocation rather than one of its own.
	heldRoom heldResponse
	lazy     *lazyflush.Writer // a stream's writer (nil for an answer that is held)
	// lazyRoom and lazyCtx are a stream's writer and the context that carries it to core,
	// in the sink's allocation rather than two of their own.
	lazyRoom lazyflush.Writer
	lazyCtx  lazyflush.Context
	started  bool
	done     bool // the answer has ended (error event written or start refused)
}

func (s *sink) Context() context.Context        { return s.ctx }
func (s *sink) SetHeader(md metadata.MD) error  { s.setHeader(md); return nil }
func (s *sink) SendHeader(md metadata.MD) error { s.setHeader(md); return nil }

// setHeader copies core's rate-limit headers into the answer; core sets them before the
// answer starts (the key's limits are checked first), so nothing has been written yet.
func (s *sink) setHeader(md metadata.MD) {
	if !s.started && !s.done {
		callmd.CopyRateLimit(s.w.Header(), md)
	}
}
func (s *sink) SetTrailer(metadata.MD) {}
func (s *sink) RecvMsg(any) error      { return errors.New("relay: Generate has no client stream") }

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
		var out http.ResponseWriter
		if s.lazy != nil {
			out = s.lazy // a stream (relay.go)
		} else {
			s.heldRoom = heldResponse{header: s.w.Header(), status: http.StatusOK}
			s.held = &s.heldRoom
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
		SetCost(s.w.Header(), u.GetCost(), u.GetCurrency())
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
