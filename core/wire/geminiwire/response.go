package geminiwire

import "encoding/json"

// GenerateContentResponse is a whole answer, or one stream chunk holding only the new parts.
type GenerateContentResponse struct {
	Candidates     []Candidate     `json:"candidates,omitempty"`
	PromptFeedback *PromptFeedback `json:"promptFeedback,omitempty"`
	UsageMetadata  *UsageMetadata  `json:"usageMetadata,omitempty"`
	ModelVersion   string          `json:"modelVersion,omitempty"`
	ResponseID     string          `json:"responseId,omitempty"`
}

// Candidate is one generated answer. Content is absent when the candidate was blocked.
type Candidate struct {
	Content          *Content        `json:"content,omitempty"`
	FinishReason     string          `json:"finishReason,omitempty"`
	Index            int             `json:"index"`
	SafetyRatings    json.RawMessage `json:"safetyRatings,omitempty"`
	CitationMetadata json.RawMessage `json:"citationMetadata,omitempty"`
	FinishMessage    string          `json:"finishMessage,omitempty"`
	AvgLogprobs      *float64        `json:"avgLogprobs,omitempty"`
	LogprobsResult   json.RawMessage `json:"logprobsResult,omitempty"`
}

// Finish reasons. There is no tool-call reason: a candidate with functionCall parts ends STOP.
const (
	FinishUnspecified            = "FINISH_REASON_UNSPECIFIED"
	FinishStop                   = "STOP"
	FinishMaxTokens              = "MAX_TOKENS"
	FinishSafety                 = "SAFETY"
	FinishRecitation             = "RECITATION"
	FinishLanguage               = "LANGUAGE"
	FinishOther                  = "OTHER"
	FinishBlocklist              = "BLOCKLIST"
	FinishProhibitedContent      = "PROHIBITED_CONTENT"
	FinishSPII                   = "SPII"
	FinishMalformedFunctionCall  = "MALFORMED_FUNCTION_CALL"
	FinishImageSafety            = "IMAGE_SAFETY"
	FinishUnexpectedToolCall     = "UNEXPECTED_TOOL_CALL"
	FinishTooManyToolCalls       = "TOO_MANY_TOOL_CALLS"
	FinishImageProhibitedContent = "IMAGE_PROHIBITED_CONTENT"
	FinishNoImage                = "NO_IMAGE"
	FinishImageRecitation        = "IMAGE_RECITATION"
	FinishImageOther             = "IMAGE_OTHER"
)

// PromptFeedback says why a prompt was blocked; such an answer has no candidates.
type PromptFeedback struct {
	BlockReason   string          `json:"blockReason,omitempty"`
	SafetyRatings json.RawMessage `json:"safetyRatings,omitempty"`
}

// UsageMetadata is cumulative on every stream chunk; the last one is authoritative.
// PromptTokenCount includes CachedContentTokenCount; CandidatesTokenCount excludes
// ThoughtsTokenCount.
type UsageMetadata struct {
	PromptTokenCount           int64           `json:"promptTokenCount"`
	CandidatesTokenCount       int64           `json:"candidatesTokenCount,omitempty"`
	CachedContentTokenCount    int64           `json:"cachedContentTokenCount,omitempty"`
	ThoughtsTokenCount         int64           `json:"thoughtsTokenCount,omitempty"`
	ToolUsePromptTokenCount    int64           `json:"toolUsePromptTokenCount,omitempty"`
	TotalTokenCount            int64           `json:"totalTokenCount,omitempty"`
	PromptTokensDetails        json.RawMessage `json:"promptTokensDetails,omitempty"`
	CandidatesTokensDetails    json.RawMessage `json:"candidatesTokensDetails,omitempty"`
	CacheTokensDetails         json.RawMessage `json:"cacheTokensDetails,omitempty"`
	ToolUsePromptTokensDetails json.RawMessage `json:"toolUsePromptTokensDetails,omitempty"`
}
