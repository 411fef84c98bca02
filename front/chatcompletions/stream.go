package chatcompletions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/chatwire"
	"modelgateway/core/wire/jsontext"
	"modelgateway/core/wire/sse"
	"modelgateway/front/relay"
)

// streamEncoder writes a chat stream. Translated: a role chunk at Start, one chunk per content
// event, the finish chunk, always a usage chunk with choices [] (spec 6.4: chat streams report
// usage, whether or not the client set stream_options), then data: [DONE]. Passthrough: the
// upstream's chunks as they are, then data: [DONE] (the adapter asked the upstream for usage,
// so its usage chunk is among them).
type streamEncoder struct {
	w           http.ResponseWriter
	requestID   string
	sw          *sse.Writer
	passthrough bool
	head        head
	finished    bool // the finish chunk has gone
	usageSent   bool
	// layout splices the frequent chunks (layout.go) into the writer's buffer (sse.Writer.Data).
	layout layout
	// tail holds a passthrough's usage chunk until core's usage event adds the cost.
	tail relay.Tail
	// swRoom is sw, in the encoder's allocation.
	swRoom sse.Writer
}

// writer starts the encoder's SSE writer (the streaming headers).
func (e *streamEncoder) writer() *sse.Writer {
	e.swRoom.Init(e.w)
	return &e.swRoom
}

// Start implements relay.Encoder.
func (e *streamEncoder) Start(s *corev1.Start) error {
	e.sw = e.writer()
	if s.GetPassthrough() {
		e.passthrough = true
		return nil
	}
	e.head = newHead(s)
	e.layout.init(e.stamp(chatwire.Chunk{}))
	// Core sends Start together with the first upstream event: the role chunk waits for the
	// next chunk's flush instead of costing a system call of its own.
	return e.sw.Send(e.layout.role(e.sw.Data()), false)
}

// Event implements relay.Encoder.
func (e *streamEncoder) Event(ev *corev1.GenerateEvent) error {
	if e.passthrough {
		if n := ev.GetNative(); n != nil {
			return e.native(n.GetData())
		}
		if u := ev.GetUsage(); u != nil && e.tail.Holding() {
			// Written, not flushed: the usage chunk is the answer's last but [DONE], which
			// Finish writes at once and flushes with it (as a translated stream's usage
			// chunk): flushed, it cost a system call and a packet of its own.
			return e.tail.Flush(e.sw.Write, u)
		}
		return nil // the other canonical events of a passthrough are for core, not the client
	}
	switch x := ev.GetEvent().(type) {
	case *corev1.GenerateEvent_Text:
		if t := x.Text.GetText(); t != "" {
			return e.text(t)
		}
	case *corev1.GenerateEvent_Reasoning:
		// Non-standard but widely read; the signature has no chat field and is dropped.
		if t := x.Reasoning.GetText(); t != "" {
			return e.delta(chatwire.Delta{ReasoningContent: &t})
		}
	case *corev1.GenerateEvent_ToolCall:
		tc := x.ToolCall
		return e.delta(chatwire.Delta{ToolCalls: []chatwire.ToolCallDelta{{
			Index: int(tc.GetIndex()), ID: toolCallID(tc.GetId()), Type: "function",
			Function: &chatwire.FunctionDelta{Name: tc.GetName()},
		}}})
	case *corev1.GenerateEvent_ToolArguments:
		if a := x.ToolArguments.GetArguments(); a != "" {
			return e.delta(chatwire.Delta{ToolCalls: []chatwire.ToolCallDelta{{
				Index: int(x.ToolArguments.GetIndex()), Function: &chatwire.FunctionDelta{Arguments: a},
			}}})
		}
	case *corev1.GenerateEvent_Finish:
		return e.finish(FinishReason(x.Finish.GetReason()))
	case *corev1.GenerateEvent_Usage:
		return e.usage(x.Usage)
	}
	return nil
}

// Finish implements relay.Encoder. A translated stream that lacked its finish or usage event
// still ends the way chat clients expect.
func (e *streamEncoder) Finish() error {
	if !e.passthrough {
		if err := e.usage(nil); err != nil {
			return err
		}
	}
	if err := e.tail.Flush(e.sw.Event, nil); err != nil {
		return err
	}
	return e.sw.Event("", []byte(chatwire.Done))
}

// native passes an upstream chunk on; the one with the final usage waits for its cost.
func (e *streamEncoder) native(data []byte) error {
	if e.tail.Holding() {
		if err := e.tail.Flush(e.sw.Event, nil); err != nil {
			return err
		}
	}
	if usageObject(data) { // a JSON string cannot hold "usage":{ unescaped: this is the key
		e.tail.Hold("", data, "usage")
		return nil
	}
	return e.sw.Event("", data)
}

var usageKey = []byte(`"usage"`)

// usageObject is a cheap first look: does the chunk have "usage" followed by an object? Every
// chunk of a stream with include_usage has "usage":null, which must cost next to nothing.
func usageObject(data []byte) bool {
	i := bytes.LastIndex(data, usageKey)
	if i < 0 {
		return false
	}
	for _, c := range data[i+len(usageKey):] {
		switch c {
		case ' ', '\t', '\n', '\r', ':':
			continue
		}
		return c == '{'
	}
	return false
}

// Fail implements relay.Encoder: an error object in the data line, which the SDKs (openai-go
// ssestream, openai-node Stream) raise as a stream error, then the end of the stream. No
// [DONE] follows: the SDKs stop at the error, and a [DONE] would tell other clients that the
// answer was complete.
func (e *streamEncoder) Fail(se *corev1.StreamError) {
	if e.sw == nil {
		e.sw = e.writer()
	}
	_ = e.tail.Flush(e.sw.Event, nil)
	body, _ := json.Marshal(apierror.Envelope{Error: apierror.Body{
		Message: se.GetMessage(), Type: apierror.Type, Code: se.GetCode(), RequestID: e.requestID,
	}})
	_ = e.sw.Event("", body)
}

func (e *streamEncoder) finish(reason string) error {
	if e.finished {
		return nil
	}
	e.finished = true
	// The usage chunk and [DONE] follow at once; the last of them flushes.
	return e.sw.Send(e.layout.finish(e.sw.Data(), reason), false)
}

// usage writes the usage chunk once, after the finish chunk; u nil renders zeros.
func (e *streamEncoder) usage(u *corev1.Usage) error {
	if e.usageSent {
		return nil
	}
	if err := e.finish(chatwire.FinishStop); err != nil {
		return err
	}
	e.usageSent = true
	return e.sw.Send(e.layout.usage(e.sw.Data(), u), false)
}

// text writes a content delta: the same bytes as delta(Delta{Content: &t}), at a fraction of
// the cost.
func (e *streamEncoder) text(t string) error {
	return e.sw.Send(e.layout.text(e.sw.Data(), t), true)
}

func (e *streamEncoder) delta(d chatwire.Delta) error {
	return e.write(chatwire.Chunk{Choices: []chatwire.ChunkChoice{{Delta: d}}})
}

func (e *streamEncoder) stamp(c chatwire.Chunk) chatwire.Chunk {
	c.ID, c.Object, c.Created, c.Model = e.head.id, chatwire.ObjectChunk, e.head.created, e.head.model
	return c
}

// write encodes a whole chunk and flushes it: the rarer chunks (tool calls, reasoning).
func (e *streamEncoder) write(c chatwire.Chunk) error {
	b, err := jsontext.Marshal(e.stamp(c))
	if err != nil {
		return fmt.Errorf("encoding a chat chunk: %w", err)
	}
	return e.sw.Event("", b)
}
