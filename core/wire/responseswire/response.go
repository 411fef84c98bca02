package responseswire

import "encoding/json"

// Response is the Response object (object "response"): the non-streaming answer and the
// payload of the lifecycle stream events. Field order follows the API's own answers.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Model              string             `json:"model"`
	Error              *ResponseError     `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       json.RawMessage    `json:"instructions"`
	MaxOutputTokens    *int64             `json:"max_output_tokens"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	Temperature        *float64           `json:"temperature"`
	TopP               *float64           `json:"top_p"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              json.RawMessage    `json:"tools"`
	Metadata           json.RawMessage    `json:"metadata"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          ReasoningParam     `json:"reasoning"`
	Store              bool               `json:"store"`
	Text               json.RawMessage    `json:"text"`
	Truncation         string             `json:"truncation"`
	User               *string            `json:"user,omitempty"`
	Output             []OutputItem       `json:"output"`
	Usage              *Usage             `json:"usage"`
}

// ObjectResponse is Response.Object.
const ObjectResponse = "response"

// Response statuses.
const (
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusIncomplete = "incomplete"
	StatusFailed     = "failed"
)

// Incomplete reasons.
const (
	ReasonMaxOutputTokens = "max_output_tokens"
	ReasonContentFilter   = "content_filter"
)

// ResponseError is Response.error of a failed response.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails says why a response is incomplete.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// OutputItem is one element of Response.output: *MessageItem, *FunctionCallItem or
// *ReasoningItem.
type OutputItem interface{ outputItem() }

// MessageItem is an assistant message in the output.
type MessageItem struct {
	Type    string       `json:"type"`
	ID      string       `json:"id"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []OutputText `json:"content"`
}

// FunctionCallItem is a function call in the output; CallID is what function_call_output
// references.
type FunctionCallItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Arguments string `json:"arguments"`
	Status    string `json:"status"`
}

// ReasoningItem is a reasoning item; clients echo it (with encrypted_content) in the next
// request's input.
type ReasoningItem struct {
	Type             string        `json:"type"`
	ID               string        `json:"id"`
	Summary          []SummaryPart `json:"summary"`
	EncryptedContent *string       `json:"encrypted_content,omitempty"`
}

func (*MessageItem) outputItem()      {}
func (*FunctionCallItem) outputItem() {}
func (*ReasoningItem) outputItem()    {}

// OutputText is an output_text content part. Annotations and Logprobs are always arrays.
type OutputText struct {
	Type        string            `json:"type"`
	Text        string            `json:"text"`
	Annotations []json.RawMessage `json:"annotations"`
	Logprobs    []json.RawMessage `json:"logprobs"`
}

// NewOutputText is an output_text part with empty annotation and logprob arrays.
func NewOutputText(text string) OutputText {
	return OutputText{Type: PartOutputText, Text: text, Annotations: []json.RawMessage{}, Logprobs: []json.RawMessage{}}
}

// Usage is ResponseUsage; input_tokens includes cached and cache-write tokens, output_tokens
// includes reasoning tokens.
type Usage struct {
	InputTokens         int64               `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int64               `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int64               `json:"total_tokens"`
}

// InputTokensDetails splits input_tokens.
type InputTokensDetails struct {
	CachedTokens     int64 `json:"cached_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
}

// OutputTokensDetails splits output_tokens.
type OutputTokensDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// CompactResponse is the answer of POST /v1/responses/compact (object "response.compaction"):
// the user messages followed by one compaction item.
type CompactResponse struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	CreatedAt int64             `json:"created_at"`
	Output    []json.RawMessage `json:"output"`
	Usage     Usage             `json:"usage"`
}

// ObjectCompaction is CompactResponse.Object.
const ObjectCompaction = "response.compaction"

// CompactionItem is the opaque item that replaces older turns; only the upstream that made it
// can read EncryptedContent.
type CompactionItem struct {
	Type             string `json:"type"`
	ID               string `json:"id"`
	EncryptedContent string `json:"encrypted_content"`
	CreatedBy        string `json:"created_by,omitempty"`
}
