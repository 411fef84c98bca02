package responses

import (
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	rw "modelgateway/core/wire/responseswire"
)

// builder turns canonical events into output items (translation.md 5.5). Output indices are
// append-only; at most one message or reasoning item is open at a time, while function calls
// stay open together until another kind of item starts or the answer ends, so that argument
// fragments of parallel calls may interleave. When streaming, emit receives every event.
type builder struct {
	resp  *rw.Response
	newID func(prefix string) string
	ns    map[string]namespaced
	emit  func(name string, v any) error
	seq   int64

	msg   *openMessage
	rs    *openReasoning
	calls map[int32]*openCall
	open  []*openCall // open calls in output order

	finish corev1.FinishReason
	usage  *corev1.Usage
}

type openMessage struct {
	item  *rw.MessageItem
	index int
	text  strings.Builder
}

type openReasoning struct {
	item     *rw.ReasoningItem
	index    int
	text     strings.Builder
	partOpen bool // a summary part has been announced
}

type openCall struct {
	item   *rw.FunctionCallItem
	index  int
	args   strings.Builder
	closed bool
}

// noLogprobs keeps text events' logprobs an array.
var noLogprobs = []any{}

func newBuilder(req *corev1.GenerateRequest, newID func(string) string, id, model string, created int64) *builder {
	resp, ns := baseResponse(req, id, model, created)
	return &builder{resp: resp, newID: newID, ns: ns, calls: make(map[int32]*openCall)}
}

// send emits one event with the next sequence number; a no-op when not streaming.
func (b *builder) send(name string, ev rw.Sequenced) error {
	if b.emit == nil {
		return nil
	}
	ev.SetSequence(b.seq)
	b.seq++
	return b.emit(name, ev)
}

func (b *builder) streaming() bool { return b.emit != nil }

// begin announces the response: created, then in_progress.
func (b *builder) begin() error {
	if err := b.send(rw.EventCreated, &rw.ResponseEvent{Type: rw.EventCreated, Response: b.resp}); err != nil {
		return err
	}
	return b.send(rw.EventInProgress, &rw.ResponseEvent{Type: rw.EventInProgress, Response: b.resp})
}

// add appends an item to the output and announces it.
func (b *builder) add(item rw.OutputItem) (int, error) {
	b.resp.Output = append(b.resp.Output, item)
	index := len(b.resp.Output) - 1
	return index, b.send(rw.EventOutputItemAdded, &rw.OutputItemEvent{Type: rw.EventOutputItemAdded, OutputIndex: index, Item: item})
}

func (b *builder) text(s string) error {
	if s == "" {
		return nil
	}
	if b.msg == nil {
		if err := b.closeAll(rw.StatusCompleted); err != nil {
			return err
		}
		m := &openMessage{item: &rw.MessageItem{Type: rw.ItemMessage, ID: b.newID("msg_"), Status: rw.StatusInProgress,
			Role: rw.RoleAssistant, Content: []rw.OutputText{}}}
		var err error
		if m.index, err = b.add(m.item); err != nil {
			return err
		}
		b.msg = m
		if err := b.send(rw.EventContentPartAdded, &rw.ContentPartEvent{Type: rw.EventContentPartAdded, ItemID: m.item.ID,
			OutputIndex: m.index, Part: rw.NewOutputText("")}); err != nil {
			return err
		}
	}
	b.msg.text.WriteString(s)
	if !b.streaming() {
		return nil
	}
	return b.send(rw.EventOutputTextDelta, &rw.TextDeltaEvent{Type: rw.EventOutputTextDelta, ItemID: b.msg.item.ID,
		OutputIndex: b.msg.index, Delta: s, Logprobs: noLogprobs})
}

// reasoning maps reasoning text to a summary part of a reasoning item and the signature to
// its encrypted_content, which clients echo on the next turn. A signature closes a block:
// text after it starts a new item.
func (b *builder) reasoning(r *corev1.ReasoningDelta) error {
	if data := r.GetRedactedData(); data != "" {
		if err := b.closeAll(rw.StatusCompleted); err != nil {
			return err
		}
		return b.opaqueReasoning(redactedPrefix + data)
	}
	if t := r.GetText(); t != "" {
		if b.rs == nil || b.rs.item.EncryptedContent != nil {
			if err := b.openReasoning(); err != nil {
				return err
			}
		}
		if err := b.summaryText(t); err != nil {
			return err
		}
	}
	if sig := r.GetSignature(); sig != "" {
		if b.rs == nil || b.rs.item.EncryptedContent != nil {
			if err := b.openReasoning(); err != nil {
				return err
			}
		}
		b.rs.item.EncryptedContent = &sig
	}
	return nil
}

func (b *builder) openReasoning() error {
	if err := b.closeAll(rw.StatusCompleted); err != nil {
		return err
	}
	r := &openReasoning{item: &rw.ReasoningItem{Type: rw.ItemReasoning, ID: b.newID("rs_"), Summary: []rw.SummaryPart{}}}
	var err error
	if r.index, err = b.add(r.item); err != nil {
		return err
	}
	b.rs = r
	return nil
}

func (b *builder) summaryText(t string) error {
	r := b.rs
	if !r.partOpen {
		r.partOpen = true
		if err := b.send(rw.EventReasoningSummaryPartAdded, &rw.SummaryPartEvent{Type: rw.EventReasoningSummaryPartAdded,
			ItemID: r.item.ID, OutputIndex: r.index, Part: rw.SummaryPart{Type: rw.PartSummaryText}}); err != nil {
			return err
		}
	}
	r.text.WriteString(t)
	if !b.streaming() {
		return nil
	}
	return b.send(rw.EventReasoningSummaryTextDelta, &rw.SummaryTextDeltaEvent{Type: rw.EventReasoningSummaryTextDelta,
		ItemID: r.item.ID, OutputIndex: r.index, Delta: t})
}

// opaqueReasoning adds a complete reasoning item that only carries encrypted_content.
func (b *builder) opaqueReasoning(enc string) error {
	item := &rw.ReasoningItem{Type: rw.ItemReasoning, ID: b.newID("rs_"), Summary: []rw.SummaryPart{}, EncryptedContent: &enc}
	index, err := b.add(item)
	if err != nil {
		return err
	}
	return b.send(rw.EventOutputItemDone, &rw.OutputItemEvent{Type: rw.EventOutputItemDone, OutputIndex: index, Item: item})
}

func (b *builder) toolCall(tc *corev1.ToolCallStart) error {
	if err := b.closeMessage(rw.StatusCompleted); err != nil {
		return err
	}
	if err := b.closeReasoning(); err != nil {
		return err
	}
	if sig := tc.GetSignature(); sig != "" {
		// No field of a function_call item survives the client's echo but the ids; a reasoning
		// item right before the call does (decoded back in decode_input.go).
		if err := b.opaqueReasoning(toolSignaturePrefix + sig); err != nil {
			return err
		}
	}
	callID := tc.GetId()
	if callID == "" {
		callID = b.newID("call_")
	}
	name, namespace := tc.GetName(), ""
	if n, ok := b.ns[name]; ok {
		name, namespace = n.name, n.namespace
	}
	c := &openCall{item: &rw.FunctionCallItem{Type: rw.ItemFunctionCall, ID: b.newID("fc_"), CallID: callID,
		Name: name, Namespace: namespace, Status: rw.StatusInProgress}}
	var err error
	if c.index, err = b.add(c.item); err != nil {
		return err
	}
	b.calls[tc.GetIndex()] = c
	b.open = append(b.open, c)
	return nil
}

func (b *builder) toolArguments(d *corev1.ToolCallDelta) error {
	c := b.calls[d.GetIndex()]
	if c == nil || d.GetArguments() == "" {
		return nil // arguments of a call that never started: nothing to attach them to
	}
	c.args.WriteString(d.GetArguments())
	if c.closed {
		// A fragment after its item was finished (text came in between): it still reaches the
		// final output, but cannot be streamed any more.
		c.item.Arguments = c.args.String()
		return nil
	}
	if !b.streaming() {
		return nil
	}
	return b.send(rw.EventFunctionCallArgumentsDelta, &rw.ArgumentsDeltaEvent{Type: rw.EventFunctionCallArgumentsDelta,
		ItemID: c.item.ID, OutputIndex: c.index, Delta: d.GetArguments()})
}

// closeAll finishes every open item; status is the status of the items it closes.
func (b *builder) closeAll(status string) error {
	if err := b.closeMessage(status); err != nil {
		return err
	}
	if err := b.closeReasoning(); err != nil {
		return err
	}
	return b.closeCalls(status)
}

func (b *builder) closeMessage(status string) error {
	m := b.msg
	if m == nil {
		return nil
	}
	b.msg = nil
	text := m.text.String()
	part := rw.NewOutputText(text)
	m.item.Content = []rw.OutputText{part}
	m.item.Status = status
	if !b.streaming() {
		return nil
	}
	if err := b.send(rw.EventOutputTextDone, &rw.TextDoneEvent{Type: rw.EventOutputTextDone, ItemID: m.item.ID,
		OutputIndex: m.index, Text: text, Logprobs: noLogprobs}); err != nil {
		return err
	}
	if err := b.send(rw.EventContentPartDone, &rw.ContentPartEvent{Type: rw.EventContentPartDone, ItemID: m.item.ID,
		OutputIndex: m.index, Part: part}); err != nil {
		return err
	}
	return b.send(rw.EventOutputItemDone, &rw.OutputItemEvent{Type: rw.EventOutputItemDone, OutputIndex: m.index, Item: m.item})
}

func (b *builder) closeReasoning() error {
	r := b.rs
	if r == nil {
		return nil
	}
	b.rs = nil
	if r.partOpen {
		part := rw.SummaryPart{Type: rw.PartSummaryText, Text: r.text.String()}
		r.item.Summary = []rw.SummaryPart{part}
		if err := b.send(rw.EventReasoningSummaryTextDone, &rw.SummaryTextDoneEvent{Type: rw.EventReasoningSummaryTextDone,
			ItemID: r.item.ID, OutputIndex: r.index, Text: part.Text}); err != nil {
			return err
		}
		if err := b.send(rw.EventReasoningSummaryPartDone, &rw.SummaryPartEvent{Type: rw.EventReasoningSummaryPartDone,
			ItemID: r.item.ID, OutputIndex: r.index, Part: part}); err != nil {
			return err
		}
	}
	return b.send(rw.EventOutputItemDone, &rw.OutputItemEvent{Type: rw.EventOutputItemDone, OutputIndex: r.index, Item: r.item})
}

func (b *builder) closeCalls(status string) error {
	open := b.open
	b.open = nil
	for _, c := range open {
		c.closed = true
		c.item.Arguments = c.args.String()
		if c.item.Arguments == "" {
			c.item.Arguments = "{}" // a call without arguments; clients parse this as JSON
		}
		c.item.Status = status
		if err := b.send(rw.EventFunctionCallArgumentsDone, &rw.ArgumentsDoneEvent{Type: rw.EventFunctionCallArgumentsDone,
			ItemID: c.item.ID, OutputIndex: c.index, Name: c.item.Name, Arguments: c.item.Arguments}); err != nil {
			return err
		}
		if err := b.send(rw.EventOutputItemDone, &rw.OutputItemEvent{Type: rw.EventOutputItemDone, OutputIndex: c.index, Item: c.item}); err != nil {
			return err
		}
	}
	return nil
}

// end closes every item and returns the final Response and its terminal event name.
// Items still open when the output was cut short are themselves incomplete.
func (b *builder) end() (*rw.Response, string) {
	status, reason, name := rw.StatusCompleted, "", rw.EventCompleted
	switch b.finish {
	case corev1.FinishReason_FINISH_REASON_LENGTH:
		status, reason, name = rw.StatusIncomplete, rw.ReasonMaxOutputTokens, rw.EventIncomplete
	case corev1.FinishReason_FINISH_REASON_CONTENT_FILTER:
		status, reason, name = rw.StatusIncomplete, rw.ReasonContentFilter, rw.EventIncomplete
	}
	_ = b.closeAll(status) // a failed write shows again on the terminal event
	b.resp.Status = status
	if reason != "" {
		b.resp.IncompleteDetails = &rw.IncompleteDetails{Reason: reason}
	}
	b.resp.Usage = renderUsage(b.usage)
	return b.resp, name
}

// fail is the Response of a failed answer: what had arrived, unfinished, and the error.
func (b *builder) fail(code, message string) *rw.Response {
	if m := b.msg; m != nil {
		m.item.Content = []rw.OutputText{rw.NewOutputText(m.text.String())}
		m.item.Status = rw.StatusIncomplete
	}
	if r := b.rs; r != nil && r.partOpen {
		r.item.Summary = []rw.SummaryPart{{Type: rw.PartSummaryText, Text: r.text.String()}}
	}
	for _, c := range b.open {
		c.item.Arguments = c.args.String()
		c.item.Status = rw.StatusIncomplete
	}
	b.msg, b.rs, b.open = nil, nil, nil
	b.resp.Status = rw.StatusFailed
	b.resp.Error = &rw.ResponseError{Code: code, Message: message}
	b.resp.Usage = renderUsage(b.usage)
	return b.resp
}

// renderUsage writes the normalised record back in the responses convention: input_tokens
// includes cached and cache-write tokens, output_tokens includes reasoning.
func renderUsage(u *corev1.Usage) *rw.Usage {
	if u == nil {
		return nil
	}
	in := u.GetInputTokens() + u.GetCachedInputTokens() + u.GetCacheWriteTokens()
	return &rw.Usage{
		InputTokens:         in,
		InputTokensDetails:  rw.InputTokensDetails{CachedTokens: u.GetCachedInputTokens(), CacheWriteTokens: u.GetCacheWriteTokens()},
		OutputTokens:        u.GetOutputTokens(),
		OutputTokensDetails: rw.OutputTokensDetails{ReasoningTokens: u.GetReasoningTokens()},
		TotalTokens:         in + u.GetOutputTokens(),
	}
}
