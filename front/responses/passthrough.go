package responses

import (
	"encoding/json"
	"net/http"

	corev1 "modelgateway/gen/gateway/core/v1"

	rw "modelgateway/core/wire/responseswire"
	"modelgateway/front/relay"
)

// passthrough writes a responses upstream's own answer. Nothing is decoded on this path but
// the first event, and only if the stream fails and a response.failed has to be made up.
type passthrough struct {
	wrote    bool   // non-streaming: the body has gone
	events   int64  // events written, which is also the next sequence_number
	first    []byte // data of the first event (response.created), for the id of a made-up failure
	terminal bool   // a terminal event has been written
	// tail holds response.completed (or .incomplete) until core's usage event adds the cost.
	tail relay.Tail
}

func (e *encoder) native(n *corev1.Native) error {
	p := &e.pt
	if !e.stream {
		if p.wrote {
			return nil
		}
		p.wrote = true
		ct := e.start.GetContentType()
		if ct == "" {
			ct = "application/json"
		}
		e.w.Header().Set("Content-Type", ct)
		e.w.WriteHeader(http.StatusOK)
		_, err := e.w.Write(n.GetData())
		return err
	}
	if p.events == 0 {
		p.first = n.GetData()
	}
	p.events++
	p.terminal = p.terminal || rw.IsTerminal(n.GetEvent())
	if p.tail.Holding() {
		if err := p.tail.Flush(e.sse.Event, nil); err != nil {
			return err
		}
	}
	if name := n.GetEvent(); name == rw.EventCompleted || name == rw.EventIncomplete {
		p.tail.Hold(name, n.GetData(), "response.usage")
		return nil
	}
	return e.sse.Event(n.GetEvent(), n.GetData())
}

// fail ends a passthrough stream that broke before its terminal event with a response.failed
// of our own, carrying the upstream's response id when its response.created came through.
func (p *passthrough) fail(e *encoder, se *corev1.StreamError) {
	if p.terminal {
		return
	}
	var created struct {
		Response struct {
			ID        string `json:"id"`
			CreatedAt int64  `json:"created_at"`
		} `json:"response"`
	}
	if p.first != nil {
		_ = json.Unmarshal(p.first, &created)
	}
	id, at := created.Response.ID, created.Response.CreatedAt
	if id == "" {
		id = e.newID("resp_")
	}
	if at == 0 {
		at = e.now().Unix()
	}
	b := newBuilder(e.req, e.newID, id, e.start.GetModel(), at)
	resp := b.fail(se.GetCode(), se.GetMessage())
	data, err := json.Marshal(&rw.ResponseEvent{Type: rw.EventFailed, SequenceNumber: p.events, Response: resp})
	if err != nil {
		return
	}
	p.terminal = true
	_ = e.sse.Event(rw.EventFailed, data)
}
