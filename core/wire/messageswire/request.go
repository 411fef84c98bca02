// Package messageswire holds the JSON shapes of the messages protocol (POST /v1/messages and
// /v1/messages/count_tokens): requests, responses, stream events, usage and errors. It is a
// leaf (stdlib only) shared by the front that speaks the protocol to clients and the provider
// adapter that speaks it to upstreams. Pieces the gateway only passes along stay
// json.RawMessage.
package messageswire

import "encoding/json"

// Version is the only protocol version there is; both official SDKs hard-code it.
const Version = "2023-06-01"

// Request is the body of POST /v1/messages. Unknown fields are tolerated on decode and not
// re-emitted: passthrough sends the client's own bytes, not this struct.
type Request struct {
	Model string `json:"model"`
	// MaxTokens is required by the protocol; a pointer so that "absent" is distinguishable.
	MaxTokens     *int64          `json:"max_tokens,omitempty"`
	Messages      []MessageParam  `json:"messages"`
	System        Content         `json:"system,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	TopK          *int64          `json:"top_k,omitempty"`
	Stream        *bool           `json:"stream,omitempty"`
	Tools         []Tool          `json:"tools,omitempty"`
	ToolChoice    *ToolChoice     `json:"tool_choice,omitempty"`
	Thinking      *Thinking       `json:"thinking,omitempty"`
	Metadata      *Metadata       `json:"metadata,omitempty"`
	OutputConfig  *OutputConfig   `json:"output_config,omitempty"`
	ServiceTier   string          `json:"service_tier,omitempty"`
	CacheControl  json.RawMessage `json:"cache_control,omitempty"`
}

// CountTokensRequest is the body of POST /v1/messages/count_tokens: a Request without the
// generation controls.
type CountTokensRequest struct {
	Model        string          `json:"model"`
	Messages     []MessageParam  `json:"messages"`
	System       Content         `json:"system,omitempty"`
	Tools        []Tool          `json:"tools,omitempty"`
	ToolChoice   *ToolChoice     `json:"tool_choice,omitempty"`
	Thinking     *Thinking       `json:"thinking,omitempty"`
	OutputConfig *OutputConfig   `json:"output_config,omitempty"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// CountTokensResponse is the answer of /v1/messages/count_tokens.
type CountTokensResponse struct {
	InputTokens int64 `json:"input_tokens"`
}

// MessageParam is one turn of the conversation. Role is "user" or "assistant" on the wire;
// Claude Code also sends a trailing "system" turn, which the front hoists.
type MessageParam struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// Roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
)

// Tool is a tool definition. Custom tools have Type "" or "custom" and an InputSchema;
// versioned server and client tools (web_search_…, bash_…) carry only Type and Name here, the
// rest of their definition is not needed by the gateway.
type Tool struct {
	Type         string          `json:"type,omitempty"`
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	Strict       *bool           `json:"strict,omitempty"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// IsCustom reports whether the tool is a plain function tool that other protocols can express.
func (t *Tool) IsCustom() bool {
	return (t.Type == "" || t.Type == "custom") && len(t.InputSchema) > 0
}

// Tool choice types.
const (
	ToolChoiceAuto = "auto"
	ToolChoiceAny  = "any"
	ToolChoiceNone = "none"
	ToolChoiceTool = "tool"
)

// ToolChoice is {type: auto|any|none} or {type: tool, name}.
type ToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse *bool  `json:"disable_parallel_tool_use,omitempty"`
}

// Thinking types.
const (
	ThinkingEnabled  = "enabled"
	ThinkingDisabled = "disabled"
	ThinkingAdaptive = "adaptive"
)

// Thinking configures extended thinking.
type Thinking struct {
	Type         string `json:"type"`
	BudgetTokens int64  `json:"budget_tokens,omitempty"`
	// Display is "summarized" or "omitted".
	Display string `json:"display,omitempty"`
}

// Metadata carries the end-user label.
type Metadata struct {
	UserID string `json:"user_id,omitempty"`
}

// OutputConfig holds effort and structured-output settings (newer models).
type OutputConfig struct {
	Effort string        `json:"effort,omitempty"`
	Format *OutputFormat `json:"format,omitempty"`
}

// OutputFormat is {type: json_schema, schema}.
type OutputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema,omitempty"`
}
