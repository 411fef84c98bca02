package messages

import (
	"bytes"
	"encoding/json"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	mw "modelgateway/core/wire/messageswire"
	"modelgateway/core/wire/sse"
	"modelgateway/front/relay"
)

// blockKind is what the open content block is.
type blockKind int

const (
	blockNone blockKind = iota
	blockText
	blockThinking
	blockTool
)

// toolPhase is where a tool call is in its life as a content block.
type toolPhase int

const (
	toolPending toolPhase = iota // known, not yet started as a block: its arguments are buffered
	toolOpen                     // the open block: fragments stream as input_json_delta
	toolClosed                   // stopped: later fragments cannot be sent
)

type toolState struct {
	id, name string
	args     []byte
	phase    toolPhase
}

// blocks turns canonical events into the messages stream (translation.md 5.2). The protocol's
// blocks are strictly sequential: indices 0,1,2… in start order, each stopped before the next
// starts, or SDK accumulators break. Canonical tool calls may interleave (parallel calls whose
// fragments alternate); a call that arrives while another tool block is open is buffered and
// started once the open call's arguments form a complete JSON value, or at the end, carrying
// everything buffered in one input_json_delta.
type blocks struct {
	sw       *sse.Writer
	next     int // index of the next block
	open     blockKind
	openIdx  int   // block index of the open block
	openTool int32 // canonical index of the open tool call
	tools    map[int32]*toolState
	pending  []int32 // buffered tool calls, in the order they started
	anyTool  bool
	fin      *corev1.Finish
	usage    *corev1.Usage
}

func (b *blocks) write(name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.sw.Event(name, data)
}

// messageStart opens the stream with the best input count known at the start (core's: the
// upstream's first report, else the local count), as the provider does; the exact counts
// follow in message_delta.
func (b *blocks) messageStart(id, model string, inputTokens int64) error {
	return b.write(mw.EventMessageStart, mw.MessageStartEvent{Type: mw.EventMessageStart, Message: mw.Message{
		ID: id, Type: "message", Role: mw.RoleAssistant, Model: model, Content: []mw.ContentBlock{},
		Usage: mw.FullUsage(inputTokens, 0, 0, 0),
	}})
}

func (b *blocks) event(ev *corev1.GenerateEvent) error {
	switch x := ev.GetEvent().(type) {
	case *corev1.GenerateEvent_Text:
		return b.text(x.Text.GetText())
	case *corev1.GenerateEvent_Reasoning:
		return b.reasoning(x.Reasoning)
	case *corev1.GenerateEvent_ToolCall:
		return b.toolCall(x.ToolCall)
	case *corev1.GenerateEvent_ToolArguments:
		return b.toolArgs(x.ToolArguments.GetIndex(), x.ToolArguments.GetArguments())
	case *corev1.GenerateEvent_Finish:
		b.fin = x.Finish
	case *corev1.GenerateEvent_Usage:
		b.usage = x.Usage
	}
	return nil
}

// begin makes a new block the open one. Whatever was open is stopped first, and buffered
// tool calls go out before it: they started earlier.
func (b *blocks) begin(kind blockKind, cb mw.ContentBlock) error {
	if err := b.stopOpen(); err != nil {
		return err
	}
	if err := b.flushPending(); err != nil {
		return err
	}
	return b.startBlock(kind, cb)
}

func (b *blocks) startBlock(kind blockKind, cb mw.ContentBlock) error {
	b.open, b.openIdx = kind, b.next
	b.next++
	return b.write(mw.EventContentBlockStart, mw.ContentBlockStartEvent{Type: mw.EventContentBlockStart, Index: b.openIdx, ContentBlock: cb})
}

func (b *blocks) stopOpen() error {
	if b.open == blockNone {
		return nil
	}
	if b.open == blockTool {
		b.tools[b.openTool].phase = toolClosed
	}
	b.open = blockNone
	return b.write(mw.EventContentBlockStop, mw.ContentBlockStopEvent{Type: mw.EventContentBlockStop, Index: b.openIdx})
}

func (b *blocks) text(s string) error {
	if s == "" {
		return nil
	}
	if b.open != blockText {
		if err := b.begin(blockText, mw.ContentBlock{Type: mw.BlockText}); err != nil {
			return err
		}
	}
	return b.write(mw.EventContentBlockDelta, mw.TextDeltaEvent{Type: mw.EventContentBlockDelta, Index: b.openIdx, Delta: mw.TextDelta{Type: mw.DeltaText, Text: s}})
}

// reasoning renders thinking text and its signature. The signature is the last thing a
// thinking block gets, so the block stops after it; redacted thinking is a whole block.
func (b *blocks) reasoning(r *corev1.ReasoningDelta) error {
	if d := r.GetRedactedData(); d != "" {
		if err := b.begin(blockThinking, mw.ContentBlock{Type: mw.BlockRedactedThinking, Data: d}); err != nil {
			return err
		}
		return b.stopOpen()
	}
	if r.GetText() == "" && r.GetSignature() == "" {
		return nil
	}
	if b.open != blockThinking {
		if err := b.begin(blockThinking, mw.ContentBlock{Type: mw.BlockThinking}); err != nil {
			return err
		}
	}
	if t := r.GetText(); t != "" {
		if err := b.write(mw.EventContentBlockDelta, mw.ThinkingDeltaEvent{Type: mw.EventContentBlockDelta, Index: b.openIdx, Delta: mw.ThinkingDelta{Type: mw.DeltaThinking, Thinking: t}}); err != nil {
			return err
		}
	}
	if s := r.GetSignature(); s != "" {
		if err := b.write(mw.EventContentBlockDelta, mw.SignatureDeltaEvent{Type: mw.EventContentBlockDelta, Index: b.openIdx, Delta: mw.SignatureDelta{Type: mw.DeltaSignature, Signature: s}}); err != nil {
			return err
		}
		return b.stopOpen()
	}
	return nil
}

func (b *blocks) toolCall(tc *corev1.ToolCallStart) error {
	b.anyTool = true
	t := b.tools[tc.GetIndex()]
	if t != nil {
		// A repeated start adds what the first one lacked; it does not restart the block.
		if t.id == "" {
			t.id = tc.GetId()
		}
		if t.name == "" {
			t.name = tc.GetName()
		}
		return nil
	}
	b.tools[tc.GetIndex()] = &toolState{id: tc.GetId(), name: tc.GetName()}
	b.pending = append(b.pending, tc.GetIndex())
	return b.advance()
}

func (b *blocks) toolArgs(idx int32, frag string) error {
	t := b.tools[idx]
	if t == nil {
		// Arguments before their start: keep them; the block gets whatever id and name arrive.
		if err := b.toolCall(&corev1.ToolCallStart{Index: idx}); err != nil {
			return err
		}
		t = b.tools[idx]
	}
	if frag == "" {
		return nil
	}
	t.args = append(t.args, frag...)
	if t.phase == toolOpen {
		if err := b.inputDelta(frag); err != nil {
			return err
		}
	}
	// toolClosed: a fragment after the block stopped (text came in between) cannot be sent.
	return b.advance()
}

// advance starts buffered tool calls while the open block allows it: text and thinking end
// when a tool call starts; an open tool call ends once its arguments are complete JSON.
func (b *blocks) advance() error {
	for len(b.pending) > 0 {
		if b.open == blockTool && !complete(b.tools[b.openTool].args) {
			return nil
		}
		if err := b.stopOpen(); err != nil {
			return err
		}
		idx := b.pending[0]
		b.pending = b.pending[1:]
		if err := b.startTool(idx); err != nil {
			return err
		}
	}
	return nil
}

// startTool opens a tool_use block with everything buffered for it so far.
func (b *blocks) startTool(idx int32) error {
	t := b.tools[idx]
	if err := b.startBlock(blockTool, mw.ContentBlock{Type: mw.BlockToolUse, ID: toolUseID(t.id), Name: t.name, Input: emptyInput}); err != nil {
		return err
	}
	b.openTool, t.phase = idx, toolOpen
	if len(t.args) > 0 {
		return b.inputDelta(string(t.args))
	}
	return nil
}

var emptyInput = json.RawMessage(`{}`)

func (b *blocks) inputDelta(frag string) error {
	return b.write(mw.EventContentBlockDelta, mw.InputJSONDeltaEvent{Type: mw.EventContentBlockDelta, Index: b.openIdx, Delta: mw.InputJSONDelta{Type: mw.DeltaInputJSON, PartialJSON: frag}})
}

// flushPending emits every buffered tool call as a whole block.
func (b *blocks) flushPending() error {
	for len(b.pending) > 0 {
		idx := b.pending[0]
		b.pending = b.pending[1:]
		if err := b.startTool(idx); err != nil {
			return err
		}
		if err := b.stopOpen(); err != nil {
			return err
		}
	}
	return nil
}

// complete reports whether tool arguments are a whole JSON value. Only text ending in a
// closing bracket can be, which keeps the check off most fragments.
func complete(args []byte) bool {
	t := bytes.TrimRight(args, " \t\r\n")
	if len(t) == 0 || (t[len(t)-1] != '}' && t[len(t)-1] != ']') {
		return false
	}
	return json.Valid(t)
}

// finish closes the stream: the last block, buffered calls, message_delta with the stop
// reason and the final usage, message_stop.
func (b *blocks) finish() error {
	if err := b.stopOpen(); err != nil {
		return err
	}
	if err := b.flushPending(); err != nil {
		return err
	}
	reason, seq := stopReason(b.fin, b.anyTool)
	u := b.usage
	delta, err := json.Marshal(mw.MessageDeltaEvent{
		Type:  mw.EventMessageDelta,
		Delta: mw.MessageDelta{StopReason: &reason, StopSequence: seq},
		Usage: mw.FullUsage(u.GetInputTokens(), u.GetOutputTokens(), u.GetCachedInputTokens(), u.GetCacheWriteTokens()),
	})
	if err != nil {
		return err
	}
	if err := b.sw.Event(mw.EventMessageDelta, relay.AddCost(delta, "usage", u)); err != nil {
		return err
	}
	return b.write(mw.EventMessageStop, mw.MessageStopEvent{Type: mw.EventMessageStop})
}

// toolUseID gives every tool call the toolu_ prefix that Anthropic clients expect
// (translation.md §1, tool ids). Prefixing keeps ids injective, and the client echoes the
// prefixed id on both the call and its result, so other upstreams still see matching ids.
func toolUseID(id string) string {
	switch {
	case id == "":
		return "toolu_" + randomID()
	case strings.HasPrefix(id, "toolu_"):
		return id
	}
	return "toolu_" + id
}
