package chatwire

import "encoding/json"

// CompletionRequest is the body of the legacy POST /v1/completions.
type CompletionRequest struct {
	Model string `json:"model"`
	// Prompt is a string, string[], int[] or int[][]; the gateway accepts only a string
	// (spec 4.2 rule 3), so it is kept raw to tell the shapes apart.
	Prompt           json.RawMessage `json:"prompt"`
	Stream           *bool           `json:"stream,omitempty"`
	MaxTokens        *int64          `json:"max_tokens,omitempty"`
	Temperature      *float64        `json:"temperature,omitempty"`
	TopP             *float64        `json:"top_p,omitempty"`
	N                *int32          `json:"n,omitempty"`
	Stop             StringList      `json:"stop,omitempty"`
	PresencePenalty  *float64        `json:"presence_penalty,omitempty"`
	FrequencyPenalty *float64        `json:"frequency_penalty,omitempty"`
	Seed             *int64          `json:"seed,omitempty"`
	// Logprobs is an integer 0..5 here, not a boolean as in chat.
	Logprobs  *int32          `json:"logprobs,omitempty"`
	LogitBias json.RawMessage `json:"logit_bias,omitempty"`
	User      *string         `json:"user,omitempty"`
}

// TextCompletion is the text_completion object (the whole answer, or one stream chunk).
type TextCompletion struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	Choices           []TextChoice    `json:"choices"`
	Usage             json.RawMessage `json:"usage,omitempty"`
	SystemFingerprint string          `json:"system_fingerprint,omitempty"`
}

// TextChoice is one choice of a text_completion; finish_reason is null in non-final chunks.
type TextChoice struct {
	Index        int             `json:"index"`
	Text         string          `json:"text"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}
