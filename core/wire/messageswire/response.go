package messageswire

// Message is the response object of a non-streaming request, and the message inside
// message_start (with empty content and a null stop reason).
type Message struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"` // "message"
	Role         string         `json:"role"` // "assistant"
	Model        string         `json:"model"`
	Content      []ContentBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        Usage          `json:"usage"`
}

// Stop reasons.
const (
	StopEndTurn       = "end_turn"
	StopMaxTokens     = "max_tokens"
	StopStopSequence  = "stop_sequence"
	StopToolUse       = "tool_use"
	StopPauseTurn     = "pause_turn"
	StopRefusal       = "refusal"
	StopContextWindow = "model_context_window_exceeded"
)

// Usage is the usage object. Every count is a pointer: a message_delta carries only the
// counts it updates, and a reader must overwrite exactly those (never add). Writers set all
// four so that clients that read them unconditionally (Claude Code) find them.
type Usage struct {
	InputTokens              *int64               `json:"input_tokens,omitempty"`
	OutputTokens             *int64               `json:"output_tokens,omitempty"`
	CacheCreationInputTokens *int64               `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     *int64               `json:"cache_read_input_tokens,omitempty"`
	OutputTokensDetails      *OutputTokensDetails `json:"output_tokens_details,omitempty"`
	ServiceTier              string               `json:"service_tier,omitempty"`
}

// OutputTokensDetails splits output tokens.
type OutputTokensDetails struct {
	ThinkingTokens int64 `json:"thinking_tokens"`
}

// FullUsage is a Usage with all four counts set.
func FullUsage(input, output, cacheRead, cacheWrite int64) Usage {
	return Usage{InputTokens: &input, OutputTokens: &output, CacheReadInputTokens: &cacheRead, CacheCreationInputTokens: &cacheWrite}
}
