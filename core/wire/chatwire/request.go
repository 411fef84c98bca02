// Package chatwire holds the JSON shapes of the chat-completions and legacy completions
// protocols (openai-chat.md), shared by the client front (front/chatcompletions,
// front/completions) and the upstream adapter (core/provider/openai). It is a leaf: stdlib only.
//
// Optional fields are pointers or json.RawMessage so that "absent" and "zero" stay distinct:
// the front must know which parameters a client used (spec 2.6), and the adapter must not send
// an upstream parameters the client never set.
package chatwire

import (
	"encoding/json"

	"modelgateway/core/wire/strictjson"
)

// Present reports a raw field that is there and not null.
func Present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// Request is the body of POST /v1/chat/completions. Fields the gateway does not interpret are
// not listed: passthrough sends the client's raw body, so they survive there.
type Request struct {
	Model               string          `json:"model"`
	Messages            []Message       `json:"messages"`
	Stream              *bool           `json:"stream,omitempty"`
	StreamOptions       *StreamOptions  `json:"stream_options,omitempty"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens,omitempty"`
	MaxTokens           *int64          `json:"max_tokens,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	N                   *int32          `json:"n,omitempty"`
	Stop                StringList      `json:"stop,omitempty"`
	PresencePenalty     *float64        `json:"presence_penalty,omitempty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty,omitempty"`
	Seed                *int64          `json:"seed,omitempty"`
	Logprobs            *bool           `json:"logprobs,omitempty"`
	TopLogprobs         *int32          `json:"top_logprobs,omitempty"`
	LogitBias           json.RawMessage `json:"logit_bias,omitempty"`
	Tools               []Tool          `json:"tools,omitempty"`
	// ToolChoice is "none" | "auto" | "required" or an object; see ToolChoiceObject.
	ToolChoice        json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	ResponseFormat    *ResponseFormat `json:"response_format,omitempty"`
	ReasoningEffort   *string         `json:"reasoning_effort,omitempty"`
	User              *string         `json:"user,omitempty"`
	SafetyIdentifier  *string         `json:"safety_identifier,omitempty"`
	PromptCacheKey    *string         `json:"prompt_cache_key,omitempty"`
}

// StreamOptions of a streaming request.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one entry of messages; Role discriminates which fields apply.
type Message struct {
	Role string `json:"role"`
	// Content is a string, an array of ContentPart, or null (assistant with tool calls).
	Content json.RawMessage `json:"content,omitempty"`
	Name    string          `json:"name,omitempty"`
	// ToolCalls of an assistant message.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID of a tool message.
	ToolCallID string  `json:"tool_call_id,omitempty"`
	Refusal    *string `json:"refusal,omitempty"`
	// ReasoningContent is the non-standard reasoning text some servers return and some
	// clients echo back in assistant history.
	ReasoningContent *string `json:"reasoning_content,omitempty"`
}

// Message roles.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// ContentPart is one element of an array content.
type ContentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	Refusal  string    `json:"refusal,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// Content part types.
const (
	PartText     = "text"
	PartImageURL = "image_url"
	PartRefusal  = "refusal"
)

// ImageURL is an http(s) URL or a data: URL.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// ToolCall is a complete call in an assistant message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function; Arguments is JSON text inside a JSON string.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is one declaration; only Type "function" has a Function.
type Tool struct {
	Type     string       `json:"type"`
	Function *FunctionDef `json:"function,omitempty"`
}

// FunctionDef declares a function tool; Parameters is a JSON Schema.
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ToolChoiceObject is the object form of tool_choice: {type:"function",function:{name}}, or
// {type:"allowed_tools",allowed_tools:{mode}}.
type ToolChoiceObject struct {
	Type         string        `json:"type"`
	Function     *FunctionName `json:"function,omitempty"`
	AllowedTools *AllowedTools `json:"allowed_tools,omitempty"`
}

// FunctionName is the function of a named tool_choice.
type FunctionName struct {
	Name string `json:"name"`
}

// AllowedTools restricts the callable tools; only its mode is read.
type AllowedTools struct {
	Mode string `json:"mode"`
}

// ResponseFormat is {type:"text"|"json_object"|"json_schema", json_schema?}.
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema is the structured-output schema.
type JSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// StringList is stop: a string or an array of strings on the wire, always an array when sent.
type StringList []string

// UnmarshalJSON accepts a string, an array of strings or null.
func (s *StringList) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = nil
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var one string
		if err := strictjson.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = StringList{one}
		return nil
	}
	var many []string
	if err := strictjson.Unmarshal(b, &many); err != nil {
		return err
	}
	*s = many
	return nil
}
