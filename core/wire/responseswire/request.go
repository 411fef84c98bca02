// Package responseswire holds the JSON shapes of the responses protocol (POST /v1/responses and
// /v1/responses/compact): the request with its input items, the Response object, the stream
// events and the compaction object. It is a leaf (stdlib only) shared by the front's decoder and
// encoder; pieces the gateway only passes along stay json.RawMessage.
package responseswire

import (
	"bytes"
	"encoding/json"
	"modelgateway/core/wire/strictjson"
)

// Request is the body of POST /v1/responses; the compact route takes a subset of it.
type Request struct {
	Model string `json:"model"`
	// Input is a string (one user message) or an array of InputItem; see Input.
	Input              json.RawMessage `json:"input,omitempty"`
	Instructions       json.RawMessage `json:"instructions,omitempty"`
	MaxOutputTokens    *int64          `json:"max_output_tokens,omitempty"`
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"top_p,omitempty"`
	Tools              []Tool          `json:"tools,omitempty"`
	ToolChoice         json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls,omitempty"`
	MaxToolCalls       *int64          `json:"max_tool_calls,omitempty"`
	Text               *TextConfig     `json:"text,omitempty"`
	Reasoning          *ReasoningParam `json:"reasoning,omitempty"`
	Stream             *bool           `json:"stream,omitempty"`
	Store              *bool           `json:"store,omitempty"`
	PreviousResponseID *string         `json:"previous_response_id,omitempty"`
	Conversation       json.RawMessage `json:"conversation,omitempty"`
	Prompt             json.RawMessage `json:"prompt,omitempty"`
	Include            []string        `json:"include,omitempty"`
	User               *string         `json:"user,omitempty"`
	SafetyIdentifier   *string         `json:"safety_identifier,omitempty"`
	TopLogprobs        *int32          `json:"top_logprobs,omitempty"`
	Metadata           json.RawMessage `json:"metadata,omitempty"`
	Truncation         *string         `json:"truncation,omitempty"`
	ServiceTier        *string         `json:"service_tier,omitempty"`
	PromptCacheKey     *string         `json:"prompt_cache_key,omitempty"`
	Background         *bool           `json:"background,omitempty"`
}

// IncludeOutputLogprobs is the include entry that asks for output text logprobs.
const IncludeOutputLogprobs = "message.output_text.logprobs"

// Input kinds of a request's "input" field.
const (
	InputAbsent = iota // absent or null
	InputString
	InputItems
)

// InputKind says which form Input has; -1 when it is neither a string, an array nor null.
func InputKind(raw json.RawMessage) int {
	return jsonKind(raw, InputString, InputItems)
}

// jsonKind classifies a raw value: absent/null, string, array, or -1 for anything else.
func jsonKind(raw json.RawMessage, str, arr int) int {
	t := bytes.TrimLeft(raw, " \t\r\n")
	switch {
	case len(t) == 0 || bytes.Equal(t, []byte("null")):
		return InputAbsent
	case t[0] == '"':
		return str
	case t[0] == '[':
		return arr
	}
	return -1
}

// InputItem is one element of the input array. Items are a union discriminated by Type (empty
// for the easy message form); fields of the other kinds stay zero.
type InputItem struct {
	Type   string `json:"type,omitempty"`
	ID     string `json:"id,omitempty"`
	Status string `json:"status,omitempty"`

	// message: Role and Content (a string or an array of ContentPart). For reasoning items
	// Content holds reasoning_text parts.
	Role    string          `json:"role,omitempty"`
	Content json.RawMessage `json:"content,omitempty"`

	// function_call and function_call_output.
	CallID    string `json:"call_id,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	// Output of function_call_output: a string or an array of ContentPart.
	Output json.RawMessage `json:"output,omitempty"`

	// reasoning and compaction.
	Summary          []SummaryPart `json:"summary,omitempty"`
	EncryptedContent *string       `json:"encrypted_content,omitempty"`
}

// Input item types.
const (
	ItemMessage            = "message"
	ItemFunctionCall       = "function_call"
	ItemFunctionCallOutput = "function_call_output"
	ItemReasoning          = "reasoning"
	ItemReference          = "item_reference"
	ItemCompaction         = "compaction"
)

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
	RoleDeveloper = "developer"
)

// ContentParts decodes a message's content: a string becomes one input_text part.
func ContentParts(raw json.RawMessage) ([]ContentPart, error) {
	switch jsonKind(raw, InputString, InputItems) {
	case InputAbsent:
		return nil, nil
	case InputString:
		var s string
		if err := strictjson.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []ContentPart{{Type: PartInputText, Text: s}}, nil
	}
	var parts []ContentPart
	if err := strictjson.Unmarshal(raw, &parts); err != nil {
		return nil, err
	}
	return parts, nil
}

// ContentPart is a content part of an input message, an output message or a tool output.
type ContentPart struct {
	Type string `json:"type"`
	// input_text, output_text, reasoning_text.
	Text string `json:"text,omitempty"`
	// input_image.
	ImageURL string `json:"image_url,omitempty"`
	FileID   string `json:"file_id,omitempty"`
	Detail   string `json:"detail,omitempty"`
	// input_file.
	FileData string `json:"file_data,omitempty"`
	FileURL  string `json:"file_url,omitempty"`
	Filename string `json:"filename,omitempty"`
	// refusal.
	Refusal string `json:"refusal,omitempty"`
}

// Content part types.
const (
	PartInputText     = "input_text"
	PartInputImage    = "input_image"
	PartInputFile     = "input_file"
	PartOutputText    = "output_text"
	PartRefusal       = "refusal"
	PartReasoningText = "reasoning_text"
	PartSummaryText   = "summary_text"
)

// SummaryPart is one entry of a reasoning item's summary.
type SummaryPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Tool is one entry of "tools". Function tools are flat (name, parameters at the top level);
// a namespace groups function tools under a name; hosted tools (web_search, ...) keep only
// their type here, the raw body carries the rest.
type Tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description *string         `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
	// namespace: the grouped tools.
	Tools []Tool `json:"tools,omitempty"`
}

// Tool types the gateway understands.
const (
	ToolFunction  = "function"
	ToolNamespace = "namespace"
)

// ToolChoiceObject is the object form of tool_choice: {type:"function",name},
// {type:"allowed_tools",mode,tools}, or a hosted tool type.
type ToolChoiceObject struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
	Mode string `json:"mode,omitempty"`
}

// Tool choice modes (string form, and allowed_tools.mode).
const (
	ToolChoiceNone     = "none"
	ToolChoiceAuto     = "auto"
	ToolChoiceRequired = "required"
	ToolChoiceAllowed  = "allowed_tools"
)

// TextConfig is the "text" parameter: output format and verbosity.
type TextConfig struct {
	Format    *TextFormat `json:"format,omitempty"`
	Verbosity *string     `json:"verbosity,omitempty"`
}

// TextFormat is text.format; json_schema is flat (no inner json_schema object).
type TextFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// Text format types.
const (
	FormatText       = "text"
	FormatJSONObject = "json_object"
	FormatJSONSchema = "json_schema"
)

// ReasoningParam is the "reasoning" parameter (and its echo in a Response).
type ReasoningParam struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// ReasoningEffortNone turns reasoning off on models that allow it.
const ReasoningEffortNone = "none"
