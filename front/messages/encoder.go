package messages

import (
	"encoding/json"
	"errors"
	"net/http"

	corev1 "modelgateway/gen/gateway/core/v1"

	mw "modelgateway/core/wire/messageswire"
	"modelgateway/core/wire/sse"
	"modelgateway/front/relay"
)

// newEncoder picks the rendering once Start says whether the upstream's own chunks follow.
func newEncoder(w http.ResponseWriter, req *corev1.GenerateRequest) *encoder {
	return &encoder{w: w, stream: req.GetStream()}
}

// encoder implements relay.Encoder for all four cases: streaming or not, translated or
// passthrough. The translated stream's block bookkeeping lives in blocks (blocks.go), the
// non-streaming accumulation in message (message.go).
type encoder struct {
	w           http.ResponseWriter
	stream      bool
	passthrough bool
	start       *corev1.Start

	sw  *sse.Writer // streaming only
	blk *blocks     // translated streaming
	msg *message    // translated non-streaming

	wrote bool // passthrough non-streaming: the body has been written
	// tail holds a passthrough's message_delta (the final usage) and what follows it until
	// core's usage event adds the cost.
	tail relay.Tail
}

var _ relay.Encoder = (*encoder)(nil)

// Start implements relay.Encoder. A translated stream opens with message_start right away so
// that the client sees the answer begin, with the input count known so far.
func (e *encoder) Start(s *corev1.Start) error {
	e.start, e.passthrough = s, s.GetPassthrough()
	switch {
	case e.passthrough && e.stream:
		e.sw = sse.NewWriter(e.w)
	case e.passthrough:
		// The body arrives as one Native event.
	case e.stream:
		e.sw = sse.NewWriter(e.w)
		e.blk = &blocks{sw: e.sw, tools: map[int32]*toolState{}}
		return e.blk.messageStart(messageID(s.GetId()), s.GetModel(), s.GetInputTokens())
	default:
		e.msg = &message{id: messageID(s.GetId()), model: s.GetModel(), tools: map[int32]int{}}
	}
	return nil
}

// Event implements relay.Encoder.
func (e *encoder) Event(ev *corev1.GenerateEvent) error {
	if e.passthrough {
		n := ev.GetNative()
		if n == nil {
			if u := ev.GetUsage(); u != nil && e.tail.Holding() {
				return e.tail.Flush(e.sw.Event, u) // the client has the usage in the upstream's chunks
			}
			return nil
		}
		if e.stream {
			switch {
			case n.GetEvent() == mw.EventMessageDelta:
				if err := e.tail.Flush(e.sw.Event, nil); err != nil { // a second one: no longer the last
					return err
				}
				e.tail.Hold(n.GetEvent(), n.GetData(), "usage")
				return nil
			case e.tail.Holding() && n.GetEvent() != mw.EventPing:
				e.tail.Hold(n.GetEvent(), n.GetData(), "")
				return nil
			}
			return e.sw.Event(n.GetEvent(), n.GetData())
		}
		return e.writeBody(n.GetData())
	}
	if e.stream {
		return e.blk.event(ev)
	}
	e.msg.event(ev)
	return nil
}

// Finish implements relay.Encoder: the translated stream's closing events, or the message.
func (e *encoder) Finish() error {
	switch {
	case e.passthrough && e.stream:
		return e.tail.Flush(e.sw.Event, nil) // message_stop was the upstream's own
	case e.passthrough:
		if !e.wrote {
			return errors.New("the upstream answered with an empty body")
		}
		return nil
	case e.stream:
		return e.blk.finish()
	}
	writeJSON(e.w, http.StatusOK, e.msg.build())
	return nil
}

// Fail implements relay.Encoder: the protocol's error event; nothing may follow it.
func (e *encoder) Fail(se *corev1.StreamError) {
	if e.sw == nil {
		return
	}
	_ = e.tail.Flush(e.sw.Event, nil)
	data, _ := json.Marshal(mw.ErrorResponse{Type: mw.EventError, Error: mw.ErrorBody{
		Type: errorType(se.GetCode(), se.GetMessage()), Message: se.GetMessage(),
	}})
	_ = e.sw.Event(mw.EventError, data)
}

func (e *encoder) writeBody(data []byte) error {
	if e.wrote {
		return errors.New("the upstream sent more than one body")
	}
	e.wrote = true
	ct := e.start.GetContentType()
	if ct == "" {
		ct = "application/json"
	}
	status := int(e.start.GetStatus())
	if status == 0 {
		status = http.StatusOK
	}
	h := e.w.Header()
	h.Set("Content-Type", ct)
	h.Del("Content-Length")
	e.w.WriteHeader(status)
	_, err := e.w.Write(data)
	return err
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
