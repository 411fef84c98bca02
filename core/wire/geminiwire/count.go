package geminiwire

import (
	"encoding/json"
	"errors"
	"modelgateway/core/wire/strictjson"
)

// CountTokensRequest is the body of :countTokens: either Contents alone, or a whole
// GenerateContentRequest (the only way to count a system instruction and tools).
type CountTokensRequest struct {
	Contents               []Content               `json:"contents,omitempty"`
	GenerateContentRequest *GenerateContentRequest `json:"generateContentRequest,omitempty"`
}

// ErrCountBothForms is a countTokens body with both contents and generateContentRequest.
var ErrCountBothForms = errors.New("contents and generateContentRequest are mutually exclusive")

// UnmarshalJSON accepts both spellings and rejects both forms at once.
func (c *CountTokensRequest) UnmarshalJSON(b []byte) error {
	var w struct {
		Contents                []Content               `json:"contents"`
		GenerateContentRequest  *GenerateContentRequest `json:"generateContentRequest"`
		GenerateContentRequestS *GenerateContentRequest `json:"generate_content_request"`
	}
	if err := strictjson.Unmarshal(b, &w); err != nil {
		return err
	}
	var s spelling
	*c = CountTokensRequest{
		Contents:               w.Contents,
		GenerateContentRequest: one(&s, "generateContentRequest", "generate_content_request", w.GenerateContentRequest, w.GenerateContentRequestS),
	}
	if s.err == nil && len(c.Contents) > 0 && c.GenerateContentRequest != nil {
		return ErrCountBothForms
	}
	return s.err
}

// CountTokensResponse is the answer of :countTokens.
type CountTokensResponse struct {
	TotalTokens             int64           `json:"totalTokens"`
	CachedContentTokenCount int64           `json:"cachedContentTokenCount,omitempty"`
	PromptTokensDetails     json.RawMessage `json:"promptTokensDetails,omitempty"`
}
