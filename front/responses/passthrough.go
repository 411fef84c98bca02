package responses

import (
	"encoding/json"
	"net/http"

	"github.com/tidwall/gjson"

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
	// id is the gateway's id of the response, written over the upstream's; empty: the
	// upstream's id stays (compact, or nothing stored or continued).
	id string
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
		data := n.GetData()
		if p.id != "" {
			data = e.ownID(data, "")
			e.keep(p.id, data)
		}
		e.w.Header().Set("Content-Type", ct)
		e.w.WriteHeader(http.StatusOK)
		_, err := e.w.Write(data)
		return err
	}
	data := n.GetData()
	if p.id != "" && lifecycle[n.GetEvent()] {
		data = e.ownID(data, "response")
		if rw.IsTerminal(n.GetEvent()) {
			e.keep(p.id, []byte(gjson.GetBytes(data, "response").Raw))
		}
	}
	if p.events == 0 {
		p.first = data
	}
	p.events++
	p.terminal = p.terminal || rw.IsTerminal(n.GetEvent())
	if p.tail.Holding() {
		if err := p.tail.Flush(e.sse.Event, nil); err != nil {
			return err
		}
	}
	if name := n.GetEvent(); name == rw.EventCompleted || name == rw.EventIncomplete {
		p.tail.Hold(name, data, "response.usage")
		return nil
	}
	return e.sse.Event(n.GetEvent(), data)
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
	b.resp.Store = e.store
	resp := b.fail(se.GetCode(), se.GetMessage())
	if p.id != "" {
		e.keepValue(resp)
	}
	data, err := json.Marshal(&rw.ResponseEvent{Type: rw.EventFailed, SequenceNumber: p.events, Response: resp})
	if err != nil {
		return
	}
	p.terminal = true
	_ = e.sse.Event(rw.EventFailed, data)
}
