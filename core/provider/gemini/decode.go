package gemini

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"github.com/tidwall/gjson"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
	"modelgateway/core/provider"
	"modelgateway/core/wire/geminiwire"
	"modelgateway/core/wire/sse"
)

// chunk is a response or stream chunk as the decoder reads it: usage stays raw for
// metering, and a failed stream sends {"error":...} in place of a response.
type chunk struct {
	geminiwire.GenerateContentResponse
	// Shadows the embedded typed field (the shallower field wins in encoding/json).
	UsageMetadata json.RawMessage    `json:"usageMetadata"`
	Error         *geminiwire.Status `json:"error"`
}

// decoder turns the upstream's answer into canonical events (translation.md 5.3): text parts
// are text, thought parts reasoning, each functionCall one complete tool call. The finish
// comes at the end of the body, because a functionCall and the finishReason may arrive in
// different chunks and a response with calls must finish TOOL_CALLS, which the API never says.
type decoder struct {
	chunks  int
	calls   int
	finish  string
	blocked string
	usage   json.RawMessage
	// usageChunk is the last chunk read in place that had usage, when it came after usage.
	usageChunk []byte
	one        provider.Single
	// start is the stream's Start (translated streams), given the first chunk's prompt count.
	start *corev1.Start
}

func newDecoder() *decoder { return &decoder{} }

// randomCallID names a call the upstream left unnamed; random, so that ids stay unique
// across the turns of a conversation.
func randomCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// Decode implements provider.Decoder.
func (d *decoder) Decode(ev sse.Event) ([]*corev1.GenerateEvent, bool, error) {
	if isDone(ev.Data) {
		return nil, true, nil
	}
	if d.chunks == 0 && d.start != nil {
		d.startInput(ev.Data)
	}
	if text, hasUsage, ok := readText(ev.Data); ok { // fastchunk.go
		d.chunks++
		if hasUsage {
			// Read once the stream is done: only the last report counts. The reader gives
			// each event its own data.
			d.usage, d.usageChunk = nil, ev.Data
		}
		if text == "" {
			return nil, false, nil
		}
		return d.one.Of(provider.TextEvent(text)), false, nil
	}
	var c chunk
	if err := json.Unmarshal(ev.Data, &c); err != nil {
		return nil, false, &provider.Error{Message: "the upstream sent a chunk that is not a response", Err: err}
	}
	if c.Error != nil {
		return nil, false, chunkError(ev.Data)
	}
	return d.chunk(&c), false, nil
}

// startInput puts the prompt count of the first chunk into the stream's Start: core reads the
// first event after Start before it sends either, so the count is there when Start goes out.
func (d *decoder) startInput(data []byte) {
	if n := gjson.GetBytes(data, "usageMetadata.promptTokenCount").Int(); n > 0 {
		d.start.InputTokens = n
	}
}

// End implements provider.Decoder: the end of the body is the normal end of the answer.
func (d *decoder) End() ([]*corev1.GenerateEvent, error) {
	if d.chunks == 0 {
		return nil, &provider.Error{Message: "the upstream stream ended without a response"}
	}
	return []*corev1.GenerateEvent{provider.FinishEvent(d.reason(), "")}, nil
}

// Usage implements provider.Decoder.
func (d *decoder) Usage() metering.Usage {
	if d.usageChunk != nil {
		d.usage, d.usageChunk = usageOfChunk(d.usageChunk), nil
	}
	return usageOf(d.usage)
}

func (d *decoder) chunk(c *chunk) []*corev1.GenerateEvent {
	d.chunks++
	if len(c.UsageMetadata) > 0 && string(c.UsageMetadata) != "null" {
		d.usage, d.usageChunk = c.UsageMetadata, nil // cumulative: the last one wins
	}
	if pf := c.PromptFeedback; pf != nil && pf.BlockReason != "" {
		d.blocked = pf.BlockReason
	}
	cand := first(c.Candidates)
	if cand == nil {
		return nil
	}
	if cand.FinishReason != "" {
		d.finish = cand.FinishReason
	}
	if cand.Content == nil {
		return nil
	}
	var out []*corev1.GenerateEvent
	for _, p := range cand.Content.Parts {
		out = d.part(out, &p)
	}
	return out
}

// first is the candidate with index 0; only one is translated (n > 1 has no canonical form
// in the event stream).
func first(cs []geminiwire.Candidate) *geminiwire.Candidate {
	for i := range cs {
		if cs[i].Index == 0 {
			return &cs[i]
		}
	}
	return nil
}

func (d *decoder) part(out []*corev1.GenerateEvent, p *geminiwire.Part) []*corev1.GenerateEvent {
	text := ""
	if p.Text != nil {
		text = *p.Text
	}
	switch {
	case p.FunctionCall != nil:
		fc := p.FunctionCall
		id := fc.ID
		if id == "" {
			id = randomCallID()
		}
		k := d.calls
		d.calls++
		return append(out, provider.ToolCallEvent(k, id, fc.Name, p.ThoughtSignature), provider.ToolArgsEvent(k, argsText(fc.Args)))
	case p.Thought:
		if text == "" && p.ThoughtSignature == "" {
			return out
		}
		return append(out, provider.ReasoningEvent(text, p.ThoughtSignature))
	}
	// A signature on a text part (or alone) travels as reasoning so that a client of another
	// protocol keeps it and sends it back.
	if p.ThoughtSignature != "" {
		out = append(out, provider.ReasoningEvent("", p.ThoughtSignature))
	}
	if text != "" {
		out = append(out, provider.TextEvent(text))
	}
	return out
}

// argsText is the call's arguments as compact JSON object text.
func argsText(args json.RawMessage) string {
	if len(args) == 0 || string(args) == "null" {
		return "{}"
	}
	var b bytes.Buffer
	if args[0] != '{' || json.Compact(&b, args) != nil {
		return "{}"
	}
	return b.String()
}

// reason maps the finish reason (translation.md 3).
func (d *decoder) reason() corev1.FinishReason {
	switch {
	case d.calls > 0:
		return corev1.FinishReason_FINISH_REASON_TOOL_CALLS
	case d.finish == "" && d.blocked != "":
		return corev1.FinishReason_FINISH_REASON_CONTENT_FILTER
	}
	switch d.finish {
	case geminiwire.FinishMaxTokens:
		return corev1.FinishReason_FINISH_REASON_LENGTH
	case geminiwire.FinishSafety, geminiwire.FinishRecitation, geminiwire.FinishBlocklist,
		geminiwire.FinishProhibitedContent, geminiwire.FinishSPII, geminiwire.FinishImageSafety,
		geminiwire.FinishImageProhibitedContent, geminiwire.FinishImageRecitation:
		return corev1.FinishReason_FINISH_REASON_CONTENT_FILTER
	case geminiwire.FinishMalformedFunctionCall, geminiwire.FinishUnexpectedToolCall, geminiwire.FinishTooManyToolCalls:
		// A failed tool call has no equivalent; OTHER lets each client protocol say "stopped".
		return corev1.FinishReason_FINISH_REASON_OTHER
	}
	return corev1.FinishReason_FINISH_REASON_STOP
}

// decodeWhole decodes a non-streaming answer.
func decodeWhole(call *provider.Call, raw []byte, d *decoder) (provider.Stream, error) {
	var c chunk
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, &provider.Error{Message: "the upstream answer is not a response", Err: err}
	}
	if c.Error != nil {
		return nil, chunkError(raw)
	}
	events := d.chunk(&c)
	end, err := d.End()
	if err != nil {
		return nil, err
	}
	st := start(call, c.ResponseID, false, nil)
	return provider.NewStaticStream(st, append(events, end...), d.Usage()), nil
}
