package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	mw "modelgateway/core/wire/messageswire"
	"modelgateway/core/wire/strictjson"
	"modelgateway/front/relay"
)

// decode parses a messages body into the canonical request. generation is true for
// /v1/messages, where max_tokens is required (spec 8 rule 4); the count route has none.
func decode(body []byte, generation bool) (*corev1.GenerateRequest, *apierror.Error) {
	var w mw.Request
	if err := strictjson.Unmarshal(body, &w); err != nil {
		return nil, jsonError(err)
	}
	if w.Model == "" {
		return nil, invalid("model: field required")
	}
	if len(w.Messages) == 0 {
		return nil, invalid("messages: at least one message is required")
	}
	req := &corev1.GenerateRequest{
		Protocol: corev1.Protocol_PROTOCOL_MESSAGES,
		Model:    w.Model,
		Stream:   w.Stream != nil && *w.Stream,
	}
	if generation {
		switch {
		case w.MaxTokens == nil:
			return nil, invalid("max_tokens: field required")
		case *w.MaxTokens <= 0:
			return nil, invalid("max_tokens: must be a positive integer, got %d", *w.MaxTokens)
		}
		req.MaxOutputTokens = w.MaxTokens
	}

	system := []string{}
	if s := w.System.JoinText("\n\n"); s != "" {
		system = append(system, s)
	}
	msgs, hoisted, apiErr := convertMessages(w.Messages)
	if apiErr != nil {
		return nil, apiErr
	}
	system = append(system, hoisted...)
	req.System = strings.Join(system, "\n\n")
	req.Messages = msgs

	if apiErr := convertTools(&w, req); apiErr != nil {
		return nil, apiErr
	}
	req.Temperature, req.TopP = w.Temperature, w.TopP
	if w.TopK != nil {
		k := int32(min(max(*w.TopK, 0), 1<<31-1))
		req.TopK = &k
	}
	req.Stop = w.StopSequences
	if w.Metadata != nil {
		req.User = w.Metadata.UserID
	}
	convertReasoning(&w, req)
	req.Parameters = parameters(&w, generation)
	return req, nil
}

// parameters lists the canonical names (spec 2.6) of the optional parameters the body uses,
// native spellings mapped: stop_sequences → stop, metadata.user_id → user,
// output_config.format → response_format.
func parameters(w *mw.Request, generation bool) []string {
	var p relay.Params
	p.Add(w.Temperature != nil, "temperature")
	p.Add(w.TopP != nil, "top_p")
	p.Add(generation && w.MaxTokens != nil, "max_tokens")
	p.Add(w.StopSequences != nil, "stop")
	p.Add(w.Stream != nil && *w.Stream, "stream") // stream:false asks for nothing optional
	p.Add(w.OutputConfig != nil && w.OutputConfig.Format != nil, "response_format")
	p.Add(w.Tools != nil, "tools")
	p.Add(w.ToolChoice != nil, "tool_choice")
	p.Add(w.Metadata != nil && w.Metadata.UserID != "", "user")
	return p
}

// convertMessages maps the turns. A "system" turn (Claude Code sends one after the user turn)
// is hoisted into the system text. Consecutive turns of one role are merged, as the API
// itself does, so that all tool results for one assistant turn land in one user turn.
func convertMessages(in []mw.MessageParam) ([]*corev1.Message, []string, *apierror.Error) {
	var out []*corev1.Message
	var system []string
	names := map[string]string{} // tool_use id → tool name, for tool_result
	for i := range in {
		m := &in[i]
		var role corev1.Role
		switch m.Role {
		case mw.RoleSystem:
			if s := m.Content.JoinText("\n\n"); s != "" {
				system = append(system, s)
			}
			continue
		case mw.RoleUser:
			role = corev1.Role_ROLE_USER
		case mw.RoleAssistant:
			role = corev1.Role_ROLE_ASSISTANT
		default:
			return nil, nil, invalid("messages[%d].role: unexpected role %q", i, m.Role)
		}
		parts, apiErr := convertBlocks(m.Content, names, i)
		if apiErr != nil {
			return nil, nil, apiErr
		}
		if len(parts) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Parts = append(out[n-1].Parts, parts...)
			continue
		}
		out = append(out, &corev1.Message{Role: role, Parts: parts})
	}
	return out, system, nil
}

// convertBlocks maps the blocks the canonical model can carry. Server-tool blocks, file
// sources and binary documents have no portable form; they survive only in passthrough.
func convertBlocks(blocks mw.Content, names map[string]string, msg int) ([]*corev1.Part, *apierror.Error) {
	parts := make([]*corev1.Part, 0, len(blocks))
	for j := range blocks {
		b := &blocks[j]
		switch b.Type {
		case mw.BlockText:
			if b.Text != "" {
				parts = append(parts, textPart(b.Text))
			}
		case mw.BlockImage:
			if p := imagePart(b.Source); p != nil {
				parts = append(parts, p)
			}
		case mw.BlockDocument:
			if b.Source != nil && b.Source.Type == mw.SourceText && b.Source.Data != "" {
				parts = append(parts, textPart(b.Source.Data))
			}
		case mw.BlockToolUse:
			if b.ID == "" || b.Name == "" {
				return nil, invalid("messages[%d].content[%d]: tool_use needs id and name", msg, j)
			}
			names[b.ID] = b.Name
			parts = append(parts, &corev1.Part{Kind: &corev1.Part_ToolCall{ToolCall: &corev1.ToolCall{
				Id: b.ID, Name: b.Name, Arguments: compactObject(b.Input),
			}}})
		case mw.BlockToolResult:
			if b.ToolUseID == "" {
				return nil, invalid("messages[%d].content[%d]: tool_result needs tool_use_id", msg, j)
			}
			parts = append(parts, &corev1.Part{Kind: &corev1.Part_ToolResult{ToolResult: &corev1.ToolResult{
				CallId: b.ToolUseID, Name: names[b.ToolUseID], Content: b.ResultContent.JoinText("\n"), IsError: b.IsError,
			}}})
			// Images a tool returned follow its result as user content.
			for k := range b.ResultContent {
				if b.ResultContent[k].Type == mw.BlockImage {
					if p := imagePart(b.ResultContent[k].Source); p != nil {
						parts = append(parts, p)
					}
				}
			}
		case mw.BlockThinking:
			parts = append(parts, &corev1.Part{Kind: &corev1.Part_Thinking{Thinking: &corev1.Thinking{Text: b.Thinking, Signature: b.Signature}}})
		case mw.BlockRedactedThinking:
			parts = append(parts, &corev1.Part{Kind: &corev1.Part_Thinking{Thinking: &corev1.Thinking{RedactedData: b.Data}}})
		}
	}
	return parts, nil
}

func textPart(s string) *corev1.Part { return &corev1.Part{Kind: &corev1.Part_Text{Text: s}} }

func imagePart(s *mw.Source) *corev1.Part {
	if s == nil {
		return nil
	}
	var img *corev1.Image
	switch s.Type {
	case mw.SourceBase64:
		img = &corev1.Image{MimeType: s.MediaType, DataBase64: s.Data}
	case mw.SourceURL:
		img = &corev1.Image{Url: s.URL}
	default:
		return nil
	}
	return &corev1.Part{Kind: &corev1.Part_Image{Image: img}}
}

// convertTools maps custom tools and tool_choice. Server and typed tools (web search, bash,
// text editor) have no canonical form and are left to passthrough.
func convertTools(w *mw.Request, req *corev1.GenerateRequest) *apierror.Error {
	for i := range w.Tools {
		t := &w.Tools[i]
		if t.Name == "" {
			return invalid("tools[%d].name: field required", i)
		}
		if !t.IsCustom() {
			continue
		}
		req.Tools = append(req.Tools, &corev1.Tool{Name: t.Name, Description: t.Description, Parameters: compactObject(t.InputSchema), Strict: t.Strict})
	}
	tc := w.ToolChoice
	if tc == nil {
		return nil
	}
	var mode corev1.ToolChoice_Mode
	switch tc.Type {
	case mw.ToolChoiceAuto:
		mode = corev1.ToolChoice_MODE_AUTO
	case mw.ToolChoiceAny:
		mode = corev1.ToolChoice_MODE_REQUIRED
	case mw.ToolChoiceNone:
		mode = corev1.ToolChoice_MODE_NONE
	case mw.ToolChoiceTool:
		if tc.Name == "" {
			return invalid("tool_choice.name: field required for type tool")
		}
		mode = corev1.ToolChoice_MODE_NAMED
	default:
		return invalid("tool_choice.type: unexpected value %q", tc.Type)
	}
	req.ToolChoice = &corev1.ToolChoice{Mode: mode, Name: tc.Name}
	if tc.DisableParallelToolUse != nil {
		parallel := !*tc.DisableParallelToolUse
		req.ParallelToolCalls = &parallel
	}
	return nil
}

// convertReasoning maps thinking, output_config.effort and output_config.format.
func convertReasoning(w *mw.Request, req *corev1.GenerateRequest) {
	if t := w.Thinking; t != nil {
		show := t.Display != "omitted"
		switch t.Type {
		case mw.ThinkingEnabled:
			req.Reasoning = &corev1.Reasoning{BudgetTokens: t.BudgetTokens, IncludeThoughts: show}
		case mw.ThinkingAdaptive:
			req.Reasoning = &corev1.Reasoning{IncludeThoughts: show}
		case mw.ThinkingDisabled:
			req.Reasoning = &corev1.Reasoning{Disabled: true}
		}
	}
	oc := w.OutputConfig
	if oc == nil {
		return
	}
	if oc.Effort != "" {
		if req.Reasoning == nil {
			req.Reasoning = &corev1.Reasoning{}
		}
		req.Reasoning.Effort = oc.Effort
	}
	if f := oc.Format; f != nil && f.Type == "json_schema" {
		req.ResponseFormat = &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_JSON_SCHEMA, Schema: compactObject(f.Schema)}
	}
}

// compactObject is raw JSON without insignificant whitespace; "{}" when absent.
func compactObject(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	var buf bytes.Buffer
	buf.Grow(len(raw))
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}

func invalid(format string, args ...any) *apierror.Error {
	return apierror.New(apierror.InvalidRequest, format, args...)
}

// jsonError names the field a fault is in, as the API's own messages do (strictjson's
// messages name it).
func jsonError(err error) *apierror.Error {
	if errors.Is(err, strictjson.ErrSyntax) {
		return invalid("the body is %v", err)
	}
	return invalid("the body is not a messages request: %v", err)
}
