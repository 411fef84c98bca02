package chatwire

import "encoding/json"

// Object names.
const (
	ObjectCompletion     = "chat.completion"
	ObjectChunk          = "chat.completion.chunk"
	ObjectTextCompletion = "text_completion"
)

// Finish reasons (choices[].finish_reason).
const (
	FinishStop          = "stop"
	FinishLength        = "length"
	FinishToolCalls     = "tool_calls"
	FinishContentFilter = "content_filter"
	FinishFunctionCall  = "function_call" // deprecated, read only
)

// Done is the data of the stream terminator event.
const Done = "[DONE]"

// Completion is the non-streaming chat.completion object.
type Completion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []Choice `json:"choices"`
	// Usage is kept raw on decode so that metering sees exactly what the upstream said; see
	// NewUsage for the encode side.
	Usage             json.RawMessage `json:"usage,omitempty"`
	SystemFingerprint string          `json:"system_fingerprint,omitempty"`
	// Error is set only on error bodies; never on a normal object.
	Error json.RawMessage `json:"error,omitempty"`
}

// Choice of a chat.completion. Logprobs is null unless requested (nil RawMessage encodes as
// null, which is what the schema requires).
type Choice struct {
	Index        int             `json:"index"`
	Message      AnswerMessage   `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

// AnswerMessage is the assistant message of a chat.completion: content and refusal are
// required keys whose value may be null.
type AnswerMessage struct {
	Role             string     `json:"role"`
	Content          *string    `json:"content"`
	Refusal          *string    `json:"refusal"`
	ReasoningContent *string    `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
}

// Chunk is one chat.completion.chunk of a stream.
type Chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	// Usage is null on every chunk but the final usage chunk (whose choices are []).
	Usage             json.RawMessage `json:"usage"`
	SystemFingerprint string          `json:"system_fingerprint,omitempty"`
	// Error is an in-stream failure ({"error":{...}}); never set on a normal chunk.
	Error json.RawMessage `json:"error,omitempty"`
}

// ChunkChoice is one choice's delta; FinishReason is null until the choice ends.
type ChunkChoice struct {
	Index        int             `json:"index"`
	Delta        Delta           `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs,omitempty"`
	FinishReason *string         `json:"finish_reason"`
}

// Delta is what a chunk adds to the message.
type Delta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
	// ReasoningContent is the non-standard reasoning fragment (DeepSeek, vLLM, many gateways);
	// Reasoning is the spelling some other servers use. Clients ignore both.
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	Reasoning        *string         `json:"reasoning,omitempty"`
	Refusal          *string         `json:"refusal,omitempty"`
	ToolCalls        []ToolCallDelta `json:"tool_calls,omitempty"`
}

// ToolCallDelta is a fragment of a tool call: the first carries id, type and name (and
// arguments ""), the later ones only index and an arguments piece.
type ToolCallDelta struct {
	Index    int            `json:"index"`
	ID       string         `json:"id,omitempty"`
	Type     string         `json:"type,omitempty"`
	Function *FunctionDelta `json:"function,omitempty"`
}

// FunctionDelta is the function part of a ToolCallDelta. Arguments is always written: the
// first fragment carries "" explicitly, as OpenAI sends it.
type FunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// Usage is CompletionUsage: prompt_tokens includes cached and cache-write tokens,
// completion_tokens includes reasoning tokens.
type Usage struct {
	PromptTokens            int64                    `json:"prompt_tokens"`
	CompletionTokens        int64                    `json:"completion_tokens"`
	TotalTokens             int64                    `json:"total_tokens"`
	PromptTokensDetails     *PromptTokensDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
}

// PromptTokensDetails breaks prompt_tokens down.
type PromptTokensDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
	// CacheWriteTokens is a newer field; written only when non-zero so that strict clients
	// of the older schema see nothing new.
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

// CompletionTokensDetails breaks completion_tokens down.
type CompletionTokensDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// NewUsage renders the gateway's four disjoint categories (uncached input, cached input,
// cache write, output with reasoning inside) in the chat convention.
func NewUsage(input, cached, cacheWrite, output, reasoning int64) Usage {
	prompt := input + cached + cacheWrite
	return Usage{
		PromptTokens: prompt, CompletionTokens: output, TotalTokens: prompt + output,
		PromptTokensDetails:     &PromptTokensDetails{CachedTokens: cached, CacheWriteTokens: cacheWrite},
		CompletionTokensDetails: &CompletionTokensDetails{ReasoningTokens: reasoning},
	}
}

// ErrorBody is the inside of an OpenAI error object ({"error":{...}}), as upstreams send it;
// code and param may be strings, numbers or null.
type ErrorBody struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Param   json.RawMessage `json:"param,omitempty"`
	Code    json.RawMessage `json:"code,omitempty"`
}
