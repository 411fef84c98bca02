package openai

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
	"modelgateway/core/provider"
	"modelgateway/core/wire/chatwire"
	"modelgateway/core/wire/sse"
)

// chatTranslated serves a client of another protocol from the upstream's chat route: the
// canonical request is encoded as a chat request for the upstream model, and the chat answer
// decoded into canonical events.
func chatTranslated(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	stream := call.Request.GetStream()
	body, err := json.Marshal(chatRequest(call.Request, call.UpstreamModel))
	if err != nil {
		return nil, &provider.Error{Message: "encoding the chat request", Err: err}
	}
	resp, err := post(ctx, call, "/chat/completions", body, stream)
	if err != nil {
		return nil, err
	}
	start := &corev1.Start{Model: call.PublicModel, Created: time.Now().Unix()}
	if stream {
		return provider.NewSSEStream(resp.Body, start, &chatDecoder{}), nil
	}
	answer, err := provider.ReadAll(resp.Body, provider.MaxAnswer)
	if err != nil {
		return nil, err
	}
	return decodeAnswer(answer, start)
}

// chatRequest encodes the canonical request for a chat upstream (translation.md §1). Tool
// results become tool messages placed right after the assistant turn, as the chat protocol
// requires; thinking parts have no chat form and are dropped.
func chatRequest(r *corev1.GenerateRequest, model string) *chatwire.Request {
	out := &chatwire.Request{
		Model: model, Messages: chatMessages(r),
		MaxCompletionTokens: r.MaxOutputTokens,
		// n is not sent: canonical events carry one candidate, and the others would be paid
		// for and thrown away.
		Temperature: r.Temperature, TopP: r.TopP, Stop: r.GetStop(), Seed: r.Seed,
		PresencePenalty: r.PresencePenalty, FrequencyPenalty: r.FrequencyPenalty,
		TopLogprobs: r.TopLogprobs,
	}
	if r.GetStream() {
		t := true
		out.Stream = &t
		out.StreamOptions = &chatwire.StreamOptions{IncludeUsage: true}
	}
	if r.GetLogprobs() {
		t := true
		out.Logprobs = &t
	}
	if u := r.GetUser(); u != "" {
		out.User = &u
	}
	for _, t := range r.GetTools() {
		f := &chatwire.FunctionDef{Name: t.GetName(), Description: t.GetDescription(), Strict: t.Strict}
		if t.GetParameters() != "" {
			f.Parameters = json.RawMessage(t.GetParameters())
		}
		out.Tools = append(out.Tools, chatwire.Tool{Type: "function", Function: f})
	}
	if len(out.Tools) > 0 {
		// OpenAI refuses parallel_tool_calls without tools.
		out.ParallelToolCalls = r.ParallelToolCalls
	}
	out.ToolChoice = toolChoice(r.GetToolChoice())
	out.ResponseFormat = responseFormat(r.GetResponseFormat())
	if e := reasoningEffort(r.GetReasoning()); e != "" {
		out.ReasoningEffort = &e
	}
	return out
}

func chatMessages(r *corev1.GenerateRequest) []chatwire.Message {
	var out []chatwire.Message
	if s := r.GetSystem(); s != "" {
		out = append(out, chatwire.Message{Role: chatwire.RoleSystem, Content: jsonString(s)})
	}
	for _, m := range r.GetMessages() {
		if m.GetRole() == corev1.Role_ROLE_ASSISTANT {
			out = append(out, assistantMessage(m))
			continue
		}
		var parts []chatwire.ContentPart
		for _, p := range m.GetParts() {
			switch k := p.GetKind().(type) {
			case *corev1.Part_ToolResult:
				// Tool messages must directly follow the assistant's calls, so they come
				// before the rest of this user turn.
				out = append(out, chatwire.Message{Role: chatwire.RoleTool, ToolCallID: k.ToolResult.GetCallId(),
					Content: jsonString(k.ToolResult.GetContent())})
			case *corev1.Part_Text:
				parts = append(parts, chatwire.ContentPart{Type: chatwire.PartText, Text: k.Text})
			case *corev1.Part_Image:
				parts = append(parts, chatwire.ContentPart{Type: chatwire.PartImageURL, ImageURL: &chatwire.ImageURL{URL: imageURL(k.Image)}})
			}
		}
		if len(parts) > 0 {
			out = append(out, chatwire.Message{Role: chatwire.RoleUser, Content: userContent(parts)})
		}
	}
	return out
}

// userContent is a plain string for a single text, the form every chat server accepts.
func userContent(parts []chatwire.ContentPart) json.RawMessage {
	if len(parts) == 1 && parts[0].Type == chatwire.PartText {
		return jsonString(parts[0].Text)
	}
	b, _ := json.Marshal(parts)
	return b
}

func assistantMessage(m *corev1.Message) chatwire.Message {
	msg := chatwire.Message{Role: chatwire.RoleAssistant}
	var text strings.Builder
	for _, p := range m.GetParts() {
		switch k := p.GetKind().(type) {
		case *corev1.Part_Text:
			text.WriteString(k.Text)
		case *corev1.Part_ToolCall:
			args := k.ToolCall.GetArguments()
			if args == "" {
				args = "{}"
			}
			msg.ToolCalls = append(msg.ToolCalls, chatwire.ToolCall{ID: k.ToolCall.GetId(), Type: "function",
				Function: chatwire.FunctionCall{Name: k.ToolCall.GetName(), Arguments: args}})
		}
	}
	if text.Len() > 0 || len(msg.ToolCalls) == 0 {
		msg.Content = jsonString(text.String())
	} else {
		msg.Content = json.RawMessage("null")
	}
	return msg
}

func imageURL(img *corev1.Image) string {
	if img.GetUrl() != "" {
		return img.GetUrl()
	}
	return "data:" + img.GetMimeType() + ";base64," + img.GetDataBase64()
}

func toolChoice(c *corev1.ToolChoice) json.RawMessage {
	switch c.GetMode() {
	case corev1.ToolChoice_MODE_AUTO:
		return jsonString("auto")
	case corev1.ToolChoice_MODE_NONE:
		return jsonString("none")
	case corev1.ToolChoice_MODE_REQUIRED:
		return jsonString("required")
	case corev1.ToolChoice_MODE_NAMED:
		b, _ := json.Marshal(chatwire.ToolChoiceObject{Type: "function", Function: &chatwire.FunctionName{Name: c.GetName()}})
		return b
	}
	return nil
}

func responseFormat(f *corev1.ResponseFormat) *chatwire.ResponseFormat {
	switch f.GetType() {
	case corev1.ResponseFormat_TYPE_TEXT:
		return &chatwire.ResponseFormat{Type: "text"}
	case corev1.ResponseFormat_TYPE_JSON_OBJECT:
		return &chatwire.ResponseFormat{Type: "json_object"}
	case corev1.ResponseFormat_TYPE_JSON_SCHEMA:
		s := &chatwire.JSONSchema{Name: f.GetName(), Strict: f.Strict}
		if s.Name == "" {
			s.Name = "response" // required by the chat protocol, optional elsewhere
		}
		if f.GetSchema() != "" {
			s.Schema = json.RawMessage(f.GetSchema())
		}
		return &chatwire.ResponseFormat{Type: "json_schema", JSONSchema: s}
	}
	return nil
}

// reasoningEffort maps the canonical reasoning settings to reasoning_effort. An effort the
// client named is sent as is; a thinking budget (messages, content-generation clients) is
// mapped to the nearest effort; nothing is sent when the client said nothing, since
// non-reasoning models reject the field.
func reasoningEffort(r *corev1.Reasoning) string {
	switch {
	case r.GetEffort() != "":
		return r.GetEffort()
	case r.GetDisabled():
		return ""
	case r.GetBudgetTokens() <= 0:
		return ""
	case r.GetBudgetTokens() < 4096:
		return "low"
	case r.GetBudgetTokens() < 16384:
		return "medium"
	}
	return "high"
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// chatDecoder turns an upstream chat stream into canonical events (translation.md §5: the
// chat side of every state machine). Tool calls get ordinals 0, 1, 2... in order of first
// appearance, whatever indices the upstream uses.
type chatDecoder struct {
	tools  map[int]*toolSlot // upstream tool index → the call it currently means
	ntools int
	finish string
	usage  json.RawMessage
	one    provider.Single
}

type toolSlot struct {
	ordinal int
	id      string
}

// Decode implements provider.Decoder.
func (d *chatDecoder) Decode(ev sse.Event) ([]*corev1.GenerateEvent, bool, error) {
	if isDone(ev.Data) {
		return []*corev1.GenerateEvent{provider.FinishEvent(d.finishReason(), "")}, true, nil
	}
	if text, ok := readContent(ev.Data); ok { // fastchunk.go
		if text == "" {
			return nil, false, nil
		}
		return d.one.Of(provider.TextEvent(text)), false, nil
	}
	return d.general(ev.Data)
}

// general decodes any chunk through the wire structs.
func (d *chatDecoder) general(data []byte) ([]*corev1.GenerateEvent, bool, error) {
	var c chatwire.Chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, false, &provider.Error{Message: "the upstream sent an undecodable chat chunk", Err: err}
	}
	if chatwire.Present(c.Error) {
		return nil, false, streamError(string(c.Error))
	}
	if chatwire.Present(c.Usage) {
		d.usage = c.Usage
	}
	var out []*corev1.GenerateEvent
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // other candidates (n > 1) have no place in a translated answer
		}
		out = d.delta(out, &ch.Delta)
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			d.finish = *ch.FinishReason
		}
	}
	return out, false, nil
}

func (d *chatDecoder) delta(out []*corev1.GenerateEvent, dl *chatwire.Delta) []*corev1.GenerateEvent {
	for _, r := range []*string{dl.ReasoningContent, dl.Reasoning} {
		if r != nil && *r != "" {
			out = append(out, provider.ReasoningEvent(*r, ""))
			break
		}
	}
	if dl.Content != nil && *dl.Content != "" {
		out = append(out, provider.TextEvent(*dl.Content))
	}
	if dl.Refusal != nil && *dl.Refusal != "" {
		out = append(out, provider.TextEvent(*dl.Refusal))
	}
	for _, tc := range dl.ToolCalls {
		slot := d.tools[tc.Index]
		// A fragment with a new id at a known index is a new call: some servers number
		// every complete call 0.
		if slot == nil || (tc.ID != "" && slot.id != "" && tc.ID != slot.id) {
			if d.tools == nil {
				d.tools = map[int]*toolSlot{}
			}
			slot = &toolSlot{ordinal: d.ntools, id: tc.ID}
			d.tools[tc.Index] = slot
			d.ntools++
			var name string
			if tc.Function != nil {
				name = tc.Function.Name
			}
			out = append(out, provider.ToolCallEvent(slot.ordinal, tc.ID, name, ""))
		}
		if tc.Function != nil && tc.Function.Arguments != "" {
			out = append(out, provider.ToolArgsEvent(slot.ordinal, tc.Function.Arguments))
		}
	}
	return out
}

func (d *chatDecoder) finishReason() corev1.FinishReason {
	return finishReason(d.finish, d.ntools > 0)
}

// End implements provider.Decoder: a chat stream without [DONE] was cut.
func (d *chatDecoder) End() ([]*corev1.GenerateEvent, error) { return nil, cutError() }

// Usage implements provider.Decoder.
func (d *chatDecoder) Usage() metering.Usage { return metering.FromOpenAIChat(d.usage) }

// finishReason maps finish_reason (translation.md §3). OpenAI answers a forced (named)
// tool_choice with "stop" although the answer is a tool call; clients of other protocols
// loop on tool_use, so calls win over stop.
func finishReason(r string, sawTools bool) corev1.FinishReason {
	switch r {
	case chatwire.FinishLength:
		return corev1.FinishReason_FINISH_REASON_LENGTH
	case chatwire.FinishToolCalls, chatwire.FinishFunctionCall:
		return corev1.FinishReason_FINISH_REASON_TOOL_CALLS
	case chatwire.FinishContentFilter:
		return corev1.FinishReason_FINISH_REASON_CONTENT_FILTER
	case chatwire.FinishStop, "":
		if sawTools {
			return corev1.FinishReason_FINISH_REASON_TOOL_CALLS
		}
		return corev1.FinishReason_FINISH_REASON_STOP
	}
	return corev1.FinishReason_FINISH_REASON_OTHER
}

// decodeAnswer turns a chat.completion into the events of a static stream.
func decodeAnswer(body []byte, start *corev1.Start) (provider.Stream, error) {
	var c chatwire.Completion
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, &provider.Error{Message: "the upstream sent an undecodable chat completion", Err: err}
	}
	if chatwire.Present(c.Error) {
		return nil, streamError(string(c.Error))
	}
	if len(c.Choices) == 0 {
		return nil, &provider.Error{Message: "the upstream chat completion has no choices"}
	}
	start.Id = c.ID
	if c.Created != 0 {
		start.Created = c.Created
	}
	m := c.Choices[0].Message
	var out []*corev1.GenerateEvent
	if m.ReasoningContent != nil && *m.ReasoningContent != "" {
		out = append(out, provider.ReasoningEvent(*m.ReasoningContent, ""))
	}
	switch {
	case m.Content != nil && *m.Content != "":
		out = append(out, provider.TextEvent(*m.Content))
	case m.Refusal != nil && *m.Refusal != "":
		out = append(out, provider.TextEvent(*m.Refusal))
	}
	for i, tc := range m.ToolCalls {
		args := tc.Function.Arguments
		if args == "" {
			args = "{}"
		}
		out = append(out, provider.ToolCallEvent(i, tc.ID, tc.Function.Name, ""), provider.ToolArgsEvent(i, args))
	}
	out = append(out, provider.FinishEvent(finishReason(c.Choices[0].FinishReason, len(m.ToolCalls) > 0), ""))
	return provider.NewStaticStream(start, out, metering.FromOpenAIChat(c.Usage)), nil
}
