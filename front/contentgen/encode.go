package contentgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/geminiwire"
	"modelgateway/core/wire/sse"
	"modelgateway/front/relay"
)

// form is how an answer is written.
type form int

const (
	// formJSON is one GenerateContentResponse (:generateContent).
	formJSON form = iota
	// formSSE is one "data:" line per chunk (:streamGenerateContent?alt=sse). Never an
	// "event:" or comment line: go-genai reports any other line as an invalid chunk.
	formSSE
	// formArray is one JSON array written incrementally (:streamGenerateContent without alt).
	formArray
)

// doneMarker ends an SSE stream for clients that expect spec 6.1's terminal marker.
var doneMarker = []byte("[DONE]")

// Encoder implements relay.Protocol.
func (Protocol) Encoder(w http.ResponseWriter, r *http.Request, req *corev1.GenerateRequest) relay.Encoder {
	e := &encoder{w: w, rc: http.NewResponseController(w)}
	switch {
	case !req.GetStream():
		e.form = formJSON
	case strings.EqualFold(r.URL.Query().Get("alt"), "sse"):
		e.form = formSSE
		// The official SDKs parse every data line as JSON and fail on the marker (Gemini CLI
		// exits with an error after printing the answer); everyone else gets spec 6.1's.
		e.done = !officialSDK(r)
	default:
		e.form = formArray
	}
	return e
}

// officialSDK recognises Google's client libraries. Every one of them (google-genai-sdk/ of
// the current SDKs, genai-js/ of the legacy @google/generative-ai, gl-python/, gl-node/, ...)
// names itself in x-goog-api-client, and every one parses each data line as JSON: the legacy
// JS SDK throws inside its stream reader, which can crash a Node process. The current SDKs put
// the same label in User-Agent too. Raw clients send neither.
func officialSDK(r *http.Request) bool {
	return strings.TrimSpace(r.Header.Get("X-Goog-Api-Client")) != "" ||
		strings.Contains(r.Header.Get("User-Agent"), "google-genai-sdk/")
}

// encoder renders one answer. In translated mode every content event becomes one chunk
// holding only the new part, as the upstream API streams; tool calls are held until their
// arguments are complete (the next non-argument event), because a functionCall part carries
// its args as a whole object.
type encoder struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	form form
	done bool
	sse  *sse.Writer

	start   *corev1.Start
	chunks  int  // array elements written
	written bool // the non-streaming body has been written

	calls  []*pendingToolCall
	finish corev1.FinishReason
	usage  *corev1.Usage
	parts  []geminiwire.Part // the non-streaming answer so far
	tail   relay.Tail        // a passthrough's last chunk, until its cost is known
}

// Start implements relay.Encoder: a streaming answer commits to 200 now, so that the client
// sees the headers as soon as an upstream has answered.
func (e *encoder) Start(s *corev1.Start) error {
	e.start = s
	switch e.form {
	case formSSE:
		e.sse = sse.NewWriter(e.w)
		e.w.WriteHeader(http.StatusOK)
		return e.flush()
	case formArray:
		relay.SetJSON(e.w.Header())
		e.w.Header().Set("Cache-Control", "no-cache")
		e.w.Header().Set("X-Accel-Buffering", "no")
		e.w.WriteHeader(http.StatusOK)
		return e.write([]byte("["))
	}
	return nil
}

// Event implements relay.Encoder.
func (e *encoder) Event(ev *corev1.GenerateEvent) error {
	switch x := ev.GetEvent().(type) {
	case *corev1.GenerateEvent_Native:
		return e.native(x.Native.GetData())
	case *corev1.GenerateEvent_Text:
		if x.Text.GetText() == "" {
			return nil
		}
		return e.content(geminiwire.TextPart(x.Text.GetText()))
	case *corev1.GenerateEvent_Reasoning:
		r := x.Reasoning
		if r.GetText() == "" && r.GetSignature() == "" {
			return nil // redacted reasoning has no form here
		}
		text := r.GetText()
		return e.content(geminiwire.Part{Text: &text, Thought: true, ThoughtSignature: r.GetSignature()})
	case *corev1.GenerateEvent_ToolCall:
		c := x.ToolCall
		e.calls = append(e.calls, &pendingToolCall{index: c.GetIndex(), id: c.GetId(), name: c.GetName(), sig: c.GetSignature()})
	case *corev1.GenerateEvent_ToolArguments:
		e.call(x.ToolArguments.GetIndex()).args.WriteString(x.ToolArguments.GetArguments())
	case *corev1.GenerateEvent_Finish:
		e.finish = x.Finish.GetReason()
	case *corev1.GenerateEvent_Usage:
		e.usage = x.Usage
		if e.tail.Holding() {
			return e.tail.Flush(e.writeChunk, x.Usage) // the cost, into the held last chunk
		}
	}
	return nil
}

func (e *encoder) writeChunk(_ string, data []byte) error { return e.chunkRaw(data) }

// content adds one part after any held tool calls, which it completes.
func (e *encoder) content(p geminiwire.Part) error {
	parts := append(e.takeCalls(), p)
	if e.form != formJSON {
		return e.chunk(e.response(parts, corev1.FinishReason_FINISH_REASON_UNSPECIFIED, nil))
	}
	for _, q := range parts {
		e.accumulate(q)
	}
	return nil
}

// Finish implements relay.Encoder.
func (e *encoder) Finish() error {
	passthrough := e.start.GetPassthrough()
	switch {
	case e.form == formJSON && passthrough:
		if !e.written {
			e.header(e.start.GetContentType())
		}
		return nil
	case e.form == formJSON:
		body, err := json.Marshal(e.final(e.parts))
		if err != nil {
			return err
		}
		e.header("application/json")
		_, err = e.w.Write(append(body, '\n'))
		return err
	case !passthrough:
		last, err := json.Marshal(e.final(nil))
		if err != nil {
			return err
		}
		if err := e.chunkRaw(relay.AddCost(last, "usageMetadata", e.usage)); err != nil {
			return err
		}
	default:
		if err := e.tail.Flush(e.writeChunk, nil); err != nil {
			return err
		}
	}
	return e.end()
}

// end writes the stream's terminator.
func (e *encoder) end() error {
	if e.form == formArray {
		return e.write([]byte("]"))
	}
	if e.done {
		return e.sse.Event("", doneMarker)
	}
	return nil
}

// Fail implements relay.Encoder: the error travels as one more chunk, the shape the upstream
// API uses mid-stream and go-genai reports as an APIError; then the stream ends.
func (e *encoder) Fail(se *corev1.StreamError) {
	if e.form == formJSON {
		return // the relay writes the envelope for a non-streaming request
	}
	_ = e.tail.Flush(e.writeChunk, nil)
	status := geminiwire.NewStatus(apierror.HTTPStatus(se.GetCode()), se.GetMessage())
	status.Details = errorInfo(se.GetCode())
	body, err := json.Marshal(geminiwire.ErrorResponse{Error: status})
	if err != nil {
		return
	}
	if e.chunkRaw(body) == nil && e.form == formArray {
		_ = e.write([]byte("]"))
	}
}

// errorInfo carries the spec error code the way Google carries its reasons.
func errorInfo(code string) json.RawMessage {
	if code == "" {
		return nil
	}
	b, _ := json.Marshal([]map[string]string{{
		"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": code, "domain": "modelgateway",
	}})
	return b
}

// native writes a passthrough chunk into the form the client asked for.
func (e *encoder) native(data []byte) error {
	if e.form == formJSON {
		if !e.written {
			e.header(e.start.GetContentType())
		}
		_, err := e.w.Write(data)
		return err
	}
	// The chunk with the finish reason carries the final usage: it waits for its cost (the
	// upstream's stream ends right after it). A chunk after it releases it unchanged.
	if e.tail.Holding() {
		if err := e.tail.Flush(e.writeChunk, nil); err != nil {
			return err
		}
	}
	if bytes.Contains(data, finishReasonKey) {
		e.tail.Hold("", data, "usageMetadata")
		return nil
	}
	return e.chunkRaw(data)
}

var finishReasonKey = []byte(`"finishReason"`)

func (e *encoder) chunk(r *geminiwire.GenerateContentResponse) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return e.chunkRaw(b)
}

// chunkRaw writes one chunk: a data line, or an array element.
func (e *encoder) chunkRaw(data []byte) error {
	if e.form == formSSE {
		if bytes.IndexByte(data, '\n') >= 0 {
			// One data line per chunk: SDKs parse each line as a whole JSON document.
			var b bytes.Buffer
			if err := json.Compact(&b, data); err == nil {
				data = b.Bytes()
			}
		}
		return e.sse.Event("", data)
	}
	var b []byte
	if e.chunks > 0 {
		b = make([]byte, 0, len(data)+3)
		b = append(b, ",\r\n"...)
		b = append(b, data...)
	} else {
		b = data
	}
	e.chunks++
	return e.write(b)
}

func (e *encoder) header(contentType string) {
	if contentType == "" {
		contentType = "application/json"
	}
	e.w.Header().Set("Content-Type", contentType)
	e.w.WriteHeader(http.StatusOK)
	e.written = true
}

func (e *encoder) write(b []byte) error {
	if _, err := e.w.Write(b); err != nil {
		return err
	}
	return e.flush()
}

func (e *encoder) flush() error {
	if err := e.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}
