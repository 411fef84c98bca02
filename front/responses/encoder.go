package responses

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	rw "modelgateway/core/wire/responseswire"
	"modelgateway/core/wire/sse"
	"modelgateway/front/relay"
)

// encoder renders one answer. Passthrough answers are written as the upstream sent them;
// translated ones go through a builder that keeps the Response object and, when streaming,
// emits the events that grow it.
type encoder struct {
	w       http.ResponseWriter
	r       *http.Request
	req     *corev1.GenerateRequest
	compact bool
	stream  bool
	sse     *sse.Writer

	// ids and clock are replaceable for golden tests.
	newID func(prefix string) string
	now   func() time.Time

	start *corev1.Start
	pt    passthrough
	b     *builder

	// core keeps the response when store is set (stored.go); kept: it has been.
	core  corev1.CoreServiceClient
	store bool
	kept  bool
}

var _ relay.Encoder = (*encoder)(nil)

func newEncoder(w http.ResponseWriter, r *http.Request, req *corev1.GenerateRequest, compact bool) *encoder {
	return &encoder{w: w, r: r, req: req, compact: compact, stream: req.GetStream(), newID: randomID, now: time.Now}
}

// randomID is prefix + 32 hex digits, the shape of the API's own ids (resp_, msg_, fc_, rs_).
func randomID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// errCompactTranslated: compaction output is an opaque item only a responses upstream can
// make and read back; there is nothing to translate it from.
var errCompactTranslated = errors.New("compaction needs a responses upstream")

// Start implements relay.Encoder.
func (e *encoder) Start(s *corev1.Start) error {
	e.start = s
	if s.GetPassthrough() {
		if e.stream {
			e.sse = sse.NewWriter(e.w)
		}
		if !e.compact && (e.store || e.req.GetExpandedPreviousResponseId() != "") {
			// The id a client may continue is the gateway's, never the upstream's.
			e.pt.id = e.newID("resp_")
		}
		return nil
	}
	if e.compact {
		relay.WriteError(e.w, e.r, apierror.New(apierror.InvalidRequest,
			"this model's upstream cannot compact a conversation; compaction needs a responses upstream"))
		return errCompactTranslated
	}
	created := s.GetCreated()
	if created == 0 {
		created = e.now().Unix()
	}
	e.b = newBuilder(e.req, e.newID, e.newID("resp_"), s.GetModel(), created)
	e.b.resp.Store = e.store
	if !e.stream {
		return nil
	}
	e.sse = sse.NewWriter(e.w)
	e.b.emit = e.writeEvent
	return e.b.begin()
}

// writeEvent sends one translated event: the name line and the same name as the JSON's type.
func (e *encoder) writeEvent(name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if name == rw.EventCompleted || name == rw.EventIncomplete {
		data = relay.AddCost(data, "response.usage", e.b.usage) // what the answer cost
	}
	return e.sse.Event(name, data)
}

// Event implements relay.Encoder.
func (e *encoder) Event(ev *corev1.GenerateEvent) error {
	if e.start.GetPassthrough() {
		if n := ev.GetNative(); n != nil {
			return e.native(n)
		}
		if u := ev.GetUsage(); u != nil && e.pt.tail.Holding() {
			return e.pt.tail.Flush(e.sse.Event, u) // the cost, into the held terminal event
		}
		return nil // the upstream's own events carry the usage
	}
	switch k := ev.GetEvent().(type) {
	case *corev1.GenerateEvent_Text:
		return e.b.text(k.Text.GetText())
	case *corev1.GenerateEvent_Reasoning:
		return e.b.reasoning(k.Reasoning)
	case *corev1.GenerateEvent_ToolCall:
		return e.b.toolCall(k.ToolCall)
	case *corev1.GenerateEvent_ToolArguments:
		return e.b.toolArguments(k.ToolArguments)
	case *corev1.GenerateEvent_Finish:
		e.b.finish = k.Finish.GetReason()
	case *corev1.GenerateEvent_Usage:
		e.b.usage = k.Usage
	}
	return nil
}

// Finish implements relay.Encoder.
func (e *encoder) Finish() error {
	if e.start.GetPassthrough() {
		if !e.stream && !e.pt.wrote {
			return errors.New("the upstream answered nothing")
		}
		if e.stream {
			return e.pt.tail.Flush(e.sse.Event, nil)
		}
		return nil
	}
	resp, name := e.b.end()
	e.keepValue(resp) // before the terminal event: a client may continue at once
	if e.stream {
		return e.b.send(name, &rw.ResponseEvent{Type: name, Response: resp})
	}
	body, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	relay.SetJSON(e.w.Header())
	e.w.WriteHeader(http.StatusOK)
	_, err = e.w.Write(body)
	return err
}

// Fail implements relay.Encoder: response.failed, so that the stream never ends without a
// terminal event (Codex CLI retries a stream closed before response.completed).
func (e *encoder) Fail(se *corev1.StreamError) {
	if !e.stream || e.sse == nil {
		return
	}
	if e.start.GetPassthrough() {
		_ = e.pt.tail.Flush(e.sse.Event, nil)
		e.pt.fail(e, se)
		return
	}
	resp := e.b.fail(se.GetCode(), se.GetMessage())
	e.keepValue(resp)
	_ = e.b.send(rw.EventFailed, &rw.ResponseEvent{Type: rw.EventFailed, Response: resp})
}
