package responses

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	rw "modelgateway/core/wire/responseswire"
	"modelgateway/core/wire/strictjson"
)

// Decode implements relay.Protocol. It fills the canonical request for translation; the raw
// body (set by the relay) keeps everything the canonical form has no room for (hosted tools,
// file inputs, item references, compaction items, store, include, ...) for a responses upstream.
// A previous_response_id is expanded into the input first (stored.go).
func (p Protocol) Decode(r *http.Request, body []byte) (*corev1.GenerateRequest, *apierror.Error) {
	req, apiErr := p.decode(body)
	if apiErr != nil || p.Core == nil || r == nil || !bytes.Contains(body, []byte(`"previous_response_id"`)) {
		return req, apiErr
	}
	id := gjson.GetBytes(body, paramPreviousResponseID)
	if id.Type != gjson.String {
		return req, nil // null: no conversation to continue
	}
	if id.Str == "" {
		e := invalid("previous_response_id must not be empty")
		e.Param = paramPreviousResponseID
		return nil, e
	}
	return p.expand(r, body, id.Str)
}

// decode is Decode of a body whose input is complete.
func (p Protocol) decode(body []byte) (*corev1.GenerateRequest, *apierror.Error) {
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, invalid("the request body must be a JSON object")
	}
	var w rw.Request
	if err := strictjson.Unmarshal(body, &w); err != nil {
		return nil, invalid("the request body does not match the responses request: %v", err)
	}
	if w.Model == "" {
		return nil, invalid("model is required")
	}
	req := &corev1.GenerateRequest{
		EndpointFamily: p.Family(),
		Protocol:       p.protocol(),
		Model:          w.Model,
		Stream:         w.Stream != nil && *w.Stream,
	}
	var params []string
	param := func(name string, present bool) {
		if present {
			params = append(params, name)
		}
	}

	system, apiErr := instructions(w.Instructions)
	if apiErr != nil {
		return nil, apiErr
	}
	in := inputDecoder{system: system}
	if apiErr := in.decode(&w); apiErr != nil {
		return nil, apiErr
	}
	req.System = strings.Join(in.system, "\n\n")
	req.Messages = in.messages

	if w.Temperature != nil {
		req.Temperature = w.Temperature
	}
	param("temperature", w.Temperature != nil)
	if w.TopP != nil {
		req.TopP = w.TopP
	}
	param("top_p", w.TopP != nil)
	if w.MaxOutputTokens != nil {
		if *w.MaxOutputTokens < 1 {
			return nil, invalid("max_output_tokens must be a positive integer")
		}
		req.MaxOutputTokens = w.MaxOutputTokens
	}
	param("max_tokens", w.MaxOutputTokens != nil)
	param("stream", req.Stream)

	if req.Tools, apiErr = tools(w.Tools); apiErr != nil {
		return nil, apiErr
	}
	param("tools", len(w.Tools) > 0)
	if req.ToolChoice, apiErr = toolChoice(w.ToolChoice); apiErr != nil {
		return nil, apiErr
	}
	param("tool_choice", req.ToolChoice != nil)
	req.ParallelToolCalls = w.ParallelToolCalls

	if req.ResponseFormat, apiErr = responseFormat(w.Text); apiErr != nil {
		return nil, apiErr
	}
	// text.format {type:"text"} is the default, not a request for structured output.
	param("response_format", req.ResponseFormat != nil && req.ResponseFormat.GetType() != corev1.ResponseFormat_TYPE_TEXT)
	req.Reasoning = reasoning(w.Reasoning)

	for _, inc := range w.Include {
		if inc == rw.IncludeOutputLogprobs {
			req.Logprobs = true
		}
	}
	param("logprobs", req.Logprobs)
	req.TopLogprobs = w.TopLogprobs
	param("top_logprobs", w.TopLogprobs != nil)

	// safety_identifier replaced user in the API; either is the end-user label.
	switch {
	case w.SafetyIdentifier != nil && *w.SafetyIdentifier != "":
		req.User = *w.SafetyIdentifier
	case w.User != nil:
		req.User = *w.User
	}
	param("user", req.User != "")
	if w.PromptCacheKey != nil {
		req.PromptCacheKey = *w.PromptCacheKey // route affinity (core/routing)
	}
	req.Parameters = params
	return req, nil
}

func invalid(format string, args ...any) *apierror.Error {
	return apierror.New(apierror.InvalidRequest, format, args...)
}

// instructions is the top-level system prompt: a string or null.
func instructions(raw json.RawMessage) ([]string, *apierror.Error) {
	switch rw.InputKind(raw) {
	case rw.InputAbsent:
		return nil, nil
	case rw.InputString:
		var s string
		if err := strictjson.Unmarshal(raw, &s); err != nil {
			return nil, invalid("instructions: %v", err)
		}
		if s == "" {
			return nil, nil
		}
		return []string{s}, nil
	}
	return nil, invalid("instructions must be a string")
}

// tools keeps the function tools, flattening namespaces (see namespacedName); hosted tools
// have no canonical form and stay in the raw body only.
func tools(in []rw.Tool) ([]*corev1.Tool, *apierror.Error) {
	var out []*corev1.Tool
	for i, t := range in {
		switch t.Type {
		case rw.ToolFunction:
			ct, apiErr := functionTool(t, "")
			if apiErr != nil {
				return nil, invalid("tools[%d]: %s", i, apiErr.Message)
			}
			out = append(out, ct)
		case rw.ToolNamespace:
			for j, inner := range t.Tools {
				if inner.Type != rw.ToolFunction {
					continue
				}
				ct, apiErr := functionTool(inner, t.Name)
				if apiErr != nil {
					return nil, invalid("tools[%d].tools[%d]: %s", i, j, apiErr.Message)
				}
				out = append(out, ct)
			}
		case "":
			return nil, invalid("tools[%d]: type is required", i)
		}
	}
	return out, nil
}

func functionTool(t rw.Tool, namespace string) (*corev1.Tool, *apierror.Error) {
	if t.Name == "" {
		return nil, invalid("name is required")
	}
	ct := &corev1.Tool{Name: namespacedName(namespace, t.Name), Strict: t.Strict}
	if t.Description != nil {
		ct.Description = *t.Description
	}
	if rw.InputKind(t.Parameters) != rw.InputAbsent {
		if p := bytes.TrimSpace(t.Parameters); p[0] != '{' {
			return nil, invalid("parameters must be a JSON Schema object")
		}
		ct.Parameters = string(t.Parameters)
	}
	return ct, nil
}

// namespaceSeparator joins a namespace and a tool name into one canonical tool name, the way
// agent tools already name grouped tools (mcp__server__tool). The encoder splits calls back
// using the request's own namespace list, never by guessing at the separator.
const namespaceSeparator = "__"

func namespacedName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + namespaceSeparator + name
}

func toolChoice(raw json.RawMessage) (*corev1.ToolChoice, *apierror.Error) {
	switch rw.InputKind(raw) {
	case rw.InputAbsent:
		return nil, nil
	case rw.InputString:
		var s string
		if err := strictjson.Unmarshal(raw, &s); err != nil {
			return nil, invalid("tool_choice: %v", err)
		}
		mode, ok := choiceModes[s]
		if !ok {
			return nil, invalid("tool_choice %q is not one of none, auto, required", s)
		}
		return &corev1.ToolChoice{Mode: mode}, nil
	}
	var o rw.ToolChoiceObject
	if err := strictjson.Unmarshal(raw, &o); err != nil {
		return nil, invalid("tool_choice: %v", err)
	}
	switch o.Type {
	case rw.ToolFunction:
		if o.Name == "" {
			return nil, invalid("tool_choice.name is required for a function")
		}
		return &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_NAMED, Name: o.Name}, nil
	case rw.ToolChoiceAllowed:
		// The restriction to a subset has no canonical form; the mode does.
		if mode, ok := choiceModes[o.Mode]; ok {
			return &corev1.ToolChoice{Mode: mode}, nil
		}
		return nil, invalid("tool_choice.mode %q is not one of auto, required", o.Mode)
	case "":
		return nil, invalid("tool_choice.type is required")
	}
	// A hosted tool: only a responses upstream can honour it.
	return &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_UNSPECIFIED}, nil
}

var choiceModes = map[string]corev1.ToolChoice_Mode{
	rw.ToolChoiceNone:     corev1.ToolChoice_MODE_NONE,
	rw.ToolChoiceAuto:     corev1.ToolChoice_MODE_AUTO,
	rw.ToolChoiceRequired: corev1.ToolChoice_MODE_REQUIRED,
}

func responseFormat(text *rw.TextConfig) (*corev1.ResponseFormat, *apierror.Error) {
	if text == nil || text.Format == nil {
		return nil, nil
	}
	f := text.Format
	switch f.Type {
	case rw.FormatText:
		return &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_TEXT}, nil
	case rw.FormatJSONObject:
		return &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_JSON_OBJECT}, nil
	case rw.FormatJSONSchema:
		if rw.InputKind(f.Schema) == rw.InputAbsent {
			return nil, invalid("text.format.schema is required for json_schema")
		}
		return &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_JSON_SCHEMA, Name: f.Name,
			Schema: string(f.Schema), Strict: f.Strict}, nil
	}
	return nil, invalid("text.format.type %q is not one of text, json_object, json_schema", f.Type)
}

func reasoning(r *rw.ReasoningParam) *corev1.Reasoning {
	if r == nil || (r.Effort == nil && r.Summary == nil) {
		return nil
	}
	out := &corev1.Reasoning{}
	if r.Effort != nil {
		out.Effort = *r.Effort
		out.Disabled = *r.Effort == rw.ReasoningEffortNone
	}
	// Any summary setting (auto, concise, detailed) asks to see the reasoning.
	out.IncludeThoughts = r.Summary != nil && *r.Summary != ""
	return out
}
