package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"time"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
	"modelgateway/core/provider"
	mw "modelgateway/core/wire/messageswire"
	"modelgateway/core/wire/sse"
)

// translated sends a messages request built from the canonical one and decodes the answer.
func translated(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	wreq, err := buildRequest(call) // request.go
	if err != nil {
		return nil, err
	}
	body, err := encodeRequest(wreq) // encoderequest.go
	if err != nil {
		return nil, &provider.Error{Message: "the upstream request could not be encoded", Err: err}
	}
	stream := call.Request.GetStream()
	resp, err := post(ctx, call, pathMessages, body, false, stream)
	if err != nil {
		return nil, err
	}
	if stream {
		return translatedStream(resp.Body, call.PublicModel, time.Now().Unix())
	}
	start := &corev1.Start{Model: call.PublicModel, Created: time.Now().Unix()}
	raw, err := provider.ReadAll(resp.Body, provider.MaxAnswer)
	if err != nil {
		return nil, err
	}
	return decodeMessage(raw, start)
}

// translatedStream decodes a messages stream into canonical events, its first ones read
// ahead (prime). The decoder, the Start event it completes, the stream over them and the
// read-ahead are one allocation: a stream's fixed pieces were six.
func translatedStream(body io.ReadCloser, model string, created int64) (provider.Stream, error) {
	x := &struct {
		dec    streamDecoder
		start  corev1.Start
		stream provider.SSEStream
		primed primed
	}{}
	x.start.Model, x.start.Created = model, created
	x.dec.start = &x.start
	x.stream.Init(body, &x.start, &x.dec)
	// The decoder copies what it keeps of an event (text into its blocks, strings, raw JSON
	// through encoding/json): the data need not outlive the next read.
	x.stream.BorrowData()
	return x.primed.prime(&x.stream)
}

// decodeMessage turns a whole message object into canonical events.
func decodeMessage(raw []byte, start *corev1.Start) (provider.Stream, error) {
	var m mw.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, &provider.Error{Message: "the upstream answer is not a message", Err: err}
	}
	if m.Type == mw.EventError {
		return nil, streamError(raw)
	}
	start.Id = m.ID
	var events []*corev1.GenerateEvent
	tools := 0
	for i := range m.Content {
		b := &m.Content[i]
		switch b.Type {
		case mw.BlockText:
			if b.Text != "" {
				events = append(events, provider.TextEvent(b.Text))
			}
		case mw.BlockThinking:
			events = append(events, provider.ReasoningEvent(b.Thinking, b.Signature))
		case mw.BlockRedactedThinking:
			events = append(events, redactedEvent(b.Data))
		case mw.BlockToolUse:
			events = append(events, provider.ToolCallEvent(tools, b.ID, b.Name, ""), provider.ToolArgsEvent(tools, compactInput(b.Input)))
			tools++
		}
	}
	reason, seq := finishReason(m.StopReason, m.StopSequence)
	events = append(events, provider.FinishEvent(reason, seq))
	return provider.NewStaticStream(start, events, meter(&m.Usage).Usage()), nil
}

// toolBlock maps a tool_use block to its call's ordinal.
type toolBlock struct {
	index   int
	hasArgs bool
}

// streamDecoder is translation.md 5.1: block events become canonical deltas. Tool calls are
// numbered by their ordinal among tool calls, never by block index (a text or thinking
// block before a tool shifts block indices).
type streamDecoder struct {
	start     *corev1.Start
	usage     metering.Anthropic
	tools     int
	blockTool map[int]*toolBlock // nil until the first tool block
	reason    corev1.FinishReason
	stopSeq   string
	events    int
	one       provider.Single
	deltas    provider.Deltas // the text events
	finish    provider.FinishRoom
	// compact is the room of the events read in the compact layout (message_start,
	// message_delta), used again by each: the usage merged from one points into it, so
	// keepUsage moves the counts into counts before the next read clears it.
	compact compactEvent
	counts  [4]int64
	buf     []byte // escaped delta text, decoded (readDelta)
}

func (d *streamDecoder) Decode(ev sse.Event) ([]*corev1.GenerateEvent, bool, error) {
	d.events++
	// The frequent events are read in place (fastdelta.go); the rest, a few per stream,
	// through the wire structs.
	switch ev.Name {
	case mw.EventContentBlockDelta:
		if i, typ, text, ok := readDelta(ev.Data, &d.buf); ok {
			if typ == mw.DeltaText {
				if len(text) == 0 {
					return nil, false, nil
				}
				return d.one.Of(d.deltas.Text(text)), false, nil
			}
			delta := deltaOf(typ, string(text))
			return d.blockDelta(i, &delta), false, nil
		}
	case mw.EventContentBlockStop:
		if i, ok := readBlockStop(ev.Data); ok {
			return d.blockStop(i), false, nil
		}
	case mw.EventContentBlockStart:
		if readTextBlockStart(ev.Data) {
			return nil, false, nil // an empty text block: nothing to say yet
		}
	case mw.EventMessageStop:
		return d.stop(), true, nil
	case mw.EventPing:
		return nil, false, nil
	}
	var se mw.StreamEvent
	fast := false
	if ev.Name == mw.EventMessageStart || ev.Name == mw.EventMessageDelta {
		se, fast = readStreamEventIn(ev.Data, &d.compact, &d.deltas) // fastevent.go
	}
	if !fast {
		// A pointer of its own: decoded through it, se would escape and cost an allocation on
		// the fast path as well.
		slow := new(mw.StreamEvent)
		if err := json.Unmarshal(ev.Data, slow); err != nil {
			return nil, false, &provider.Error{Message: "the upstream sent an unreadable stream event", Err: err}
		}
		se = *slow
	}
	name := ev.Name
	if name == "" {
		name = se.Type
	}
	switch name {
	case mw.EventError:
		return nil, false, streamError(ev.Data)
	case mw.EventMessageStart:
		if m := se.Message; m != nil {
			d.start.Id = m.ID
			d.usage.Merge(meter(&m.Usage))
			d.keepUsage()
		}
	case mw.EventContentBlockStart:
		return d.blockStart(se.Index, se.ContentBlock), false, nil
	case mw.EventContentBlockDelta:
		return d.blockDelta(se.Index, se.Delta), false, nil
	case mw.EventContentBlockStop:
		return d.blockStop(se.Index), false, nil
	case mw.EventMessageDelta:
		if se.Delta != nil && se.Delta.StopReason != nil {
			d.reason, d.stopSeq = finishReason(se.Delta.StopReason, se.Delta.StopSequence)
		}
		if se.Usage != nil {
			d.usage.Merge(meter(se.Usage))
			d.keepUsage()
		}
	case mw.EventMessageStop:
		return d.stop(), true, nil
	}
	return nil, false, nil
}

// keepUsage gives the merged usage's counts a home in the decoder: they may point into the
// compact room, which the next message_start or message_delta clears and fills again (a
// later event's counts overwrite only what it carries, as Merge does).
func (d *streamDecoder) keepUsage() {
	u := &d.usage
	for i, p := range [...]**int64{&u.InputTokens, &u.OutputTokens, &u.CacheCreationInputTokens, &u.CacheReadInputTokens} {
		if *p != nil && *p != &d.counts[i] {
			d.counts[i] = **p
			*p = &d.counts[i]
		}
	}
}

// blockStop ends block i. A tool call whose input never came has no arguments: say so ("{}").
func (d *streamDecoder) blockStop(i int) []*corev1.GenerateEvent {
	if tb := d.blockTool[i]; tb != nil && !tb.hasArgs {
		tb.hasArgs = true
		return d.one.Of(provider.ToolArgsEvent(tb.index, "{}"))
	}
	return nil
}

func (d *streamDecoder) stop() []*corev1.GenerateEvent {
	reason := d.reason
	if reason == corev1.FinishReason_FINISH_REASON_UNSPECIFIED {
		reason = corev1.FinishReason_FINISH_REASON_STOP
	}
	return d.one.Of(d.finish.Event(reason, d.stopSeq))
}

func (d *streamDecoder) blockStart(i int, cb *mw.ContentBlock) []*corev1.GenerateEvent {
	if cb == nil {
		return nil
	}
	switch cb.Type {
	case mw.BlockText:
		if cb.Text != "" {
			return []*corev1.GenerateEvent{provider.TextEvent(cb.Text)}
		}
	case mw.BlockThinking:
		if cb.Thinking != "" || cb.Signature != "" {
			return []*corev1.GenerateEvent{provider.ReasoningEvent(cb.Thinking, cb.Signature)}
		}
	case mw.BlockRedactedThinking:
		return []*corev1.GenerateEvent{redactedEvent(cb.Data)}
	case mw.BlockToolUse:
		tb := &toolBlock{index: d.tools}
		d.tools++
		if d.blockTool == nil {
			d.blockTool = map[int]*toolBlock{} // most answers call no tool
		}
		d.blockTool[i] = tb
		out := []*corev1.GenerateEvent{provider.ToolCallEvent(tb.index, cb.ID, cb.Name, "")}
		// The API starts with input {}; a proxy in front of it may send the whole input here.
		if in := bytes.TrimSpace(cb.Input); len(in) > 0 && string(in) != "{}" {
			tb.hasArgs = true
			out = append(out, provider.ToolArgsEvent(tb.index, compactInput(in)))
		}
		return out
	}
	// Server-tool blocks (server_tool_use, web_search_tool_result, …) have no canonical form.
	return nil
}

func (d *streamDecoder) blockDelta(i int, delta *mw.Delta) []*corev1.GenerateEvent {
	if delta == nil {
		return nil
	}
	switch delta.Type {
	case mw.DeltaText:
		if delta.Text != "" {
			return d.one.Of(provider.TextEvent(delta.Text))
		}
	case mw.DeltaInputJSON:
		if tb := d.blockTool[i]; tb != nil && delta.PartialJSON != "" {
			tb.hasArgs = true
			return d.one.Of(provider.ToolArgsEvent(tb.index, delta.PartialJSON))
		}
	case mw.DeltaThinking:
		if delta.Thinking != "" {
			return d.one.Of(provider.ReasoningEvent(delta.Thinking, ""))
		}
	case mw.DeltaSignature:
		if delta.Signature != "" {
			return d.one.Of(provider.ReasoningEvent("", delta.Signature))
		}
	}
	return nil
}

func (d *streamDecoder) End() ([]*corev1.GenerateEvent, error) { return nil, cutError(d.events) }

func (d *streamDecoder) Usage() metering.Usage { return d.usage.Usage() }

func redactedEvent(data string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Reasoning{Reasoning: &corev1.ReasoningDelta{RedactedData: data}}}
}

// finishReason maps stop_reason (translation.md 3).
func finishReason(reason, seq *string) (corev1.FinishReason, string) {
	if reason == nil {
		return corev1.FinishReason_FINISH_REASON_STOP, ""
	}
	switch *reason {
	case mw.StopEndTurn, mw.StopPauseTurn:
		return corev1.FinishReason_FINISH_REASON_STOP, ""
	case mw.StopStopSequence:
		s := ""
		if seq != nil {
			s = *seq
		}
		return corev1.FinishReason_FINISH_REASON_STOP_SEQUENCE, s
	case mw.StopMaxTokens, mw.StopContextWindow:
		return corev1.FinishReason_FINISH_REASON_LENGTH, ""
	case mw.StopToolUse:
		return corev1.FinishReason_FINISH_REASON_TOOL_CALLS, ""
	case mw.StopRefusal:
		return corev1.FinishReason_FINISH_REASON_CONTENT_FILTER, ""
	}
	return corev1.FinishReason_FINISH_REASON_OTHER, ""
}

// meter converts the wire usage into the metering record (same fields, same presence).
func meter(u *mw.Usage) metering.Anthropic {
	a := metering.Anthropic{
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens, CacheReadInputTokens: u.CacheReadInputTokens,
	}
	if d := u.OutputTokensDetails; d != nil {
		a.OutputTokensDetails = &struct {
			ThinkingTokens int64 `json:"thinking_tokens"`
		}{d.ThinkingTokens}
	}
	return a
}

// compactInput is a tool input object as compact JSON text; "{}" when absent.
func compactInput(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}
