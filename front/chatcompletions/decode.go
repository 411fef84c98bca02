// Package chatcompletions is the client protocol of POST /v1/chat/completions: it decodes the
// chat request into the canonical GenerateRequest and renders canonical events back as
// chat.completion objects or data-only SSE chunks ending with data: [DONE] (openai-chat.md).
package chatcompletions

import (
	"encoding/json"
	"net/http"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/chatwire"
	"modelgateway/core/wire/strictjson"
	"modelgateway/front/relay"
)

// Family is the contract's endpoint family of the route.
const Family = "chat.completions"

// Protocol implements relay.Protocol for POST /v1/chat/completions.
type Protocol struct{}

var _ relay.Protocol = Protocol{}

// Decode implements relay.Protocol. Only what core and a translating adapter need is read;
// the raw body goes upstream unchanged on passthrough, so unknown fields survive there.
func (Protocol) Decode(_ *http.Request, body []byte) (*corev1.GenerateRequest, *apierror.Error) {
	var in chatwire.Request
	if err := decodeRequest(body, &in); err != nil {
		return nil, invalid("the body is not a valid chat-completions request: %v", err)
	}
	if in.Model == "" {
		return nil, invalid("model is required")
	}
	if len(in.Messages) == 0 {
		return nil, invalid("messages must be a non-empty array")
	}
	x := new(decoded)
	out := &x.req
	out.EndpointFamily, out.Protocol = Family, corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS
	out.Model, out.Stream = in.Model, in.Stream != nil && *in.Stream
	var err *apierror.Error
	if out.System, out.Messages, err = decodeMessages(in.Messages, &x.room); err != nil {
		return nil, err
	}
	if err := decodeOptions(&in, out); err != nil {
		return nil, err
	}
	out.Parameters = parameters(&in)
	return out, nil
}

// decoded is a decoded request and the room for its first messages, in one allocation: most
// requests have a message or two, which cost the request, the slice and each message one
// allocation apiece otherwise.
type decoded struct {
	req  corev1.GenerateRequest
	room messageRoom
}

// roomMessages is how many messages a decoded request holds in its own allocation.
const roomMessages = 2

// messageRoom holds the first messages of a request and the slice's first backing array.
type messageRoom struct {
	ptrs [roomMessages]*corev1.Message
	msgs [roomMessages]corev1.Message
	n    int
}

// message is a message of role and parts, in the room while it lasts.
func (r *messageRoom) message(role corev1.Role, parts []*corev1.Part) *corev1.Message {
	if r.n == len(r.msgs) {
		return &corev1.Message{Role: role, Parts: parts}
	}
	m := &r.msgs[r.n]
	r.n++
	m.Role, m.Parts = role, parts
	return m
}

// decodeOptions fills the canonical optional fields.
func decodeOptions(in *chatwire.Request, out *corev1.GenerateRequest) *apierror.Error {
	// max_completion_tokens is the current name and wins; max_tokens is its deprecated alias.
	limit, name := in.MaxCompletionTokens, "max_completion_tokens"
	if limit == nil {
		limit, name = in.MaxTokens, "max_tokens"
	}
	if limit != nil {
		if *limit < 0 {
			return invalid("%s must not be negative", name)
		}
		out.MaxOutputTokens = limit
	}
	out.Temperature, out.TopP = in.Temperature, in.TopP
	out.PresencePenalty, out.FrequencyPenalty = in.PresencePenalty, in.FrequencyPenalty
	out.Seed, out.N = in.Seed, in.N
	out.Stop = in.Stop
	out.Logprobs = in.Logprobs != nil && *in.Logprobs
	out.TopLogprobs = in.TopLogprobs
	out.ParallelToolCalls = in.ParallelToolCalls
	switch {
	case in.User != nil && *in.User != "":
		out.User = *in.User
	case in.SafetyIdentifier != nil:
		out.User = *in.SafetyIdentifier
	}
	if in.PromptCacheKey != nil {
		out.PromptCacheKey = *in.PromptCacheKey // route affinity (core/routing)
	}
	if e := in.ReasoningEffort; e != nil && *e != "" {
		out.Reasoning = &corev1.Reasoning{Effort: *e, Disabled: *e == "none"}
	}
	var err *apierror.Error
	if out.Tools, err = decodeTools(in.Tools); err != nil {
		return err
	}
	if out.ToolChoice, err = decodeToolChoice(in.ToolChoice); err != nil {
		return err
	}
	out.ResponseFormat, err = decodeResponseFormat(in.ResponseFormat)
	return err
}

// parameters lists the canonical names (spec 2.6) of the optional parameters the client set,
// in the spec's order. A boolean switched off is not a use of the parameter: a model that was
// verified without streaming must still accept stream:false.
func parameters(in *chatwire.Request) []string {
	var p relay.Params
	p.Add(in.Temperature != nil, "temperature")
	p.Add(in.TopP != nil, "top_p")
	p.Add(in.MaxCompletionTokens != nil || in.MaxTokens != nil, "max_tokens")
	p.Add(in.FrequencyPenalty != nil, "frequency_penalty")
	p.Add(in.PresencePenalty != nil, "presence_penalty")
	p.Add(len(in.Stop) > 0, "stop")
	p.Add(in.Seed != nil, "seed")
	p.Add(in.N != nil, "n")
	p.Add(in.Stream != nil && *in.Stream, "stream")
	p.Add(in.ResponseFormat != nil, "response_format")
	p.Add(len(in.Tools) > 0, "tools")
	p.Add(chatwire.Present(in.ToolChoice), "tool_choice")
	p.Add(in.Logprobs != nil && *in.Logprobs, "logprobs")
	p.Add(in.TopLogprobs != nil, "top_logprobs")
	p.Add(chatwire.Present(in.LogitBias), "logit_bias")
	p.Add(in.User != nil || in.SafetyIdentifier != nil, "user")
	return p
}

func decodeTools(tools []chatwire.Tool) ([]*corev1.Tool, *apierror.Error) {
	var out []*corev1.Tool
	for i, t := range tools {
		// Custom and hosted tools have no portable form; passthrough still sends them.
		if t.Type != "function" && !(t.Type == "" && t.Function != nil) {
			continue
		}
		f := t.Function
		if f == nil || f.Name == "" {
			return nil, invalid("tools[%d].function.name is required", i)
		}
		tool := &corev1.Tool{Name: f.Name, Description: f.Description, Strict: f.Strict}
		if chatwire.Present(f.Parameters) {
			tool.Parameters = string(f.Parameters)
		}
		out = append(out, tool)
	}
	return out, nil
}

func decodeToolChoice(raw json.RawMessage) (*corev1.ToolChoice, *apierror.Error) {
	if !chatwire.Present(raw) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := strictjson.Unmarshal(raw, &s); err != nil {
			return nil, invalid("tool_choice: %v", err)
		}
		if m, ok := choiceModes[s]; ok {
			return &corev1.ToolChoice{Mode: m}, nil
		}
		return nil, invalid("tool_choice must be none, auto, required or an object, not %q", s)
	}
	var obj chatwire.ToolChoiceObject
	if err := strictjson.Unmarshal(raw, &obj); err != nil {
		return nil, invalid("tool_choice: %v", err)
	}
	switch obj.Type {
	case "function":
		if obj.Function == nil || obj.Function.Name == "" {
			return nil, invalid("tool_choice.function.name is required")
		}
		return &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_NAMED, Name: obj.Function.Name}, nil
	case "allowed_tools":
		// The restriction to a subset has no canonical form; its mode does.
		if at := obj.AllowedTools; at != nil && (at.Mode == "auto" || at.Mode == "required") {
			return &corev1.ToolChoice{Mode: choiceModes[at.Mode]}, nil
		}
		return nil, invalid("tool_choice.allowed_tools.mode must be auto or required")
	case "custom":
		return nil, nil // custom tools are not translated, so neither is a choice of one
	}
	return nil, invalid("tool_choice.type %q is not supported", obj.Type)
}

var choiceModes = map[string]corev1.ToolChoice_Mode{
	"auto":     corev1.ToolChoice_MODE_AUTO,
	"none":     corev1.ToolChoice_MODE_NONE,
	"required": corev1.ToolChoice_MODE_REQUIRED,
}

func decodeResponseFormat(rf *chatwire.ResponseFormat) (*corev1.ResponseFormat, *apierror.Error) {
	if rf == nil {
		return nil, nil
	}
	switch rf.Type {
	case "text":
		return &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_TEXT}, nil
	case "json_object":
		return &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_JSON_OBJECT}, nil
	case "json_schema":
		s := rf.JSONSchema
		if s == nil {
			return nil, invalid("response_format.json_schema is required for type json_schema")
		}
		out := &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_JSON_SCHEMA, Name: s.Name, Strict: s.Strict}
		if chatwire.Present(s.Schema) {
			out.Schema = string(s.Schema)
		}
		return out, nil
	}
	return nil, invalid("response_format.type must be text, json_object or json_schema, not %q", rf.Type)
}

func invalid(format string, args ...any) *apierror.Error {
	return apierror.New(apierror.InvalidRequest, format, args...)
}

// joinText joins the texts of system and tool contents; pieces are separated the way
// separate system messages are, so that hoisting does not glue sentences together.
func joinText(pieces []string) string { return strings.Join(pieces, "\n\n") }
