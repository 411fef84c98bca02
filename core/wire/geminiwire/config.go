package geminiwire

import (
	"encoding/json"

	"modelgateway/core/wire/strictjson"
)

// GenerationConfig holds the sampling and output options.
type GenerationConfig struct {
	MaxOutputTokens    *int64          `json:"maxOutputTokens,omitempty"`
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"topP,omitempty"`
	TopK               *float64        `json:"topK,omitempty"`
	StopSequences      []string        `json:"stopSequences,omitempty"`
	CandidateCount     *int32          `json:"candidateCount,omitempty"`
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseSchema     json.RawMessage `json:"responseSchema,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	Seed               *int64          `json:"seed,omitempty"`
	PresencePenalty    *float64        `json:"presencePenalty,omitempty"`
	FrequencyPenalty   *float64        `json:"frequencyPenalty,omitempty"`
	ResponseLogprobs   *bool           `json:"responseLogprobs,omitempty"`
	Logprobs           *int32          `json:"logprobs,omitempty"`
	ThinkingConfig     *ThinkingConfig `json:"thinkingConfig,omitempty"`
	ResponseModalities []string        `json:"responseModalities,omitempty"`
	SpeechConfig       json.RawMessage `json:"speechConfig,omitempty"`
	MediaResolution    string          `json:"mediaResolution,omitempty"`
}

// UnmarshalJSON accepts both spellings of every field.
func (g *GenerationConfig) UnmarshalJSON(b []byte) error {
	var w struct {
		MaxOutputTokens     *int64           `json:"maxOutputTokens"`
		MaxOutputTokensS    *int64           `json:"max_output_tokens"`
		Temperature         *float64         `json:"temperature"`
		TopP                *float64         `json:"topP"`
		TopPS               *float64         `json:"top_p"`
		TopK                *float64         `json:"topK"`
		TopKS               *float64         `json:"top_k"`
		StopSequences       *[]string        `json:"stopSequences"`
		StopSequencesS      *[]string        `json:"stop_sequences"`
		CandidateCount      *int32           `json:"candidateCount"`
		CandidateCountS     *int32           `json:"candidate_count"`
		ResponseMimeType    *string          `json:"responseMimeType"`
		ResponseMimeTypeS   *string          `json:"response_mime_type"`
		ResponseSchema      *json.RawMessage `json:"responseSchema"`
		ResponseSchemaS     *json.RawMessage `json:"response_schema"`
		ResponseJSONSchema  *json.RawMessage `json:"responseJsonSchema"`
		ResponseJSONSchemaS *json.RawMessage `json:"response_json_schema"`
		Seed                *int64           `json:"seed"`
		PresencePenalty     *float64         `json:"presencePenalty"`
		PresencePenaltyS    *float64         `json:"presence_penalty"`
		FrequencyPenalty    *float64         `json:"frequencyPenalty"`
		FrequencyPenaltyS   *float64         `json:"frequency_penalty"`
		ResponseLogprobs    *bool            `json:"responseLogprobs"`
		ResponseLogprobsS   *bool            `json:"response_logprobs"`
		Logprobs            *int32           `json:"logprobs"`
		ThinkingConfig      *ThinkingConfig  `json:"thinkingConfig"`
		ThinkingConfigS     *ThinkingConfig  `json:"thinking_config"`
		ResponseModalities  *[]string        `json:"responseModalities"`
		ResponseModalitiesS *[]string        `json:"response_modalities"`
		SpeechConfig        *json.RawMessage `json:"speechConfig"`
		SpeechConfigS       *json.RawMessage `json:"speech_config"`
		MediaResolution     *string          `json:"mediaResolution"`
		MediaResolutionS    *string          `json:"media_resolution"`
	}
	if err := strictjson.Unmarshal(b, &w); err != nil {
		return err
	}
	var s spelling
	*g = GenerationConfig{
		MaxOutputTokens:    one(&s, "maxOutputTokens", "max_output_tokens", w.MaxOutputTokens, w.MaxOutputTokensS),
		Temperature:        w.Temperature,
		TopP:               one(&s, "topP", "top_p", w.TopP, w.TopPS),
		TopK:               one(&s, "topK", "top_k", w.TopK, w.TopKS),
		StopSequences:      val(one(&s, "stopSequences", "stop_sequences", w.StopSequences, w.StopSequencesS)),
		CandidateCount:     one(&s, "candidateCount", "candidate_count", w.CandidateCount, w.CandidateCountS),
		ResponseMimeType:   val(one(&s, "responseMimeType", "response_mime_type", w.ResponseMimeType, w.ResponseMimeTypeS)),
		ResponseSchema:     val(one(&s, "responseSchema", "response_schema", w.ResponseSchema, w.ResponseSchemaS)),
		ResponseJSONSchema: val(one(&s, "responseJsonSchema", "response_json_schema", w.ResponseJSONSchema, w.ResponseJSONSchemaS)),
		Seed:               w.Seed,
		PresencePenalty:    one(&s, "presencePenalty", "presence_penalty", w.PresencePenalty, w.PresencePenaltyS),
		FrequencyPenalty:   one(&s, "frequencyPenalty", "frequency_penalty", w.FrequencyPenalty, w.FrequencyPenaltyS),
		ResponseLogprobs:   one(&s, "responseLogprobs", "response_logprobs", w.ResponseLogprobs, w.ResponseLogprobsS),
		Logprobs:           w.Logprobs,
		ThinkingConfig:     one(&s, "thinkingConfig", "thinking_config", w.ThinkingConfig, w.ThinkingConfigS),
		ResponseModalities: val(one(&s, "responseModalities", "response_modalities", w.ResponseModalities, w.ResponseModalitiesS)),
		SpeechConfig:       val(one(&s, "speechConfig", "speech_config", w.SpeechConfig, w.SpeechConfigS)),
		MediaResolution:    val(one(&s, "mediaResolution", "media_resolution", w.MediaResolution, w.MediaResolutionS)),
	}
	return s.err
}

// Thinking levels (Gemini 3).
const (
	ThinkingMinimal = "MINIMAL"
	ThinkingLow     = "LOW"
	ThinkingMedium  = "MEDIUM"
	ThinkingHigh    = "HIGH"
)

// ThinkingConfig controls thinking. ThinkingBudget 0 turns it off, -1 lets the model decide.
type ThinkingConfig struct {
	IncludeThoughts *bool  `json:"includeThoughts,omitempty"`
	ThinkingBudget  *int64 `json:"thinkingBudget,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
}

// UnmarshalJSON accepts both spellings.
func (t *ThinkingConfig) UnmarshalJSON(b []byte) error {
	var w struct {
		IncludeThoughts  *bool   `json:"includeThoughts"`
		IncludeThoughtsS *bool   `json:"include_thoughts"`
		ThinkingBudget   *int64  `json:"thinkingBudget"`
		ThinkingBudgetS  *int64  `json:"thinking_budget"`
		ThinkingLevel    *string `json:"thinkingLevel"`
		ThinkingLevelS   *string `json:"thinking_level"`
	}
	if err := strictjson.Unmarshal(b, &w); err != nil {
		return err
	}
	var s spelling
	*t = ThinkingConfig{
		IncludeThoughts: one(&s, "includeThoughts", "include_thoughts", w.IncludeThoughts, w.IncludeThoughtsS),
		ThinkingBudget:  one(&s, "thinkingBudget", "thinking_budget", w.ThinkingBudget, w.ThinkingBudgetS),
		ThinkingLevel:   val(one(&s, "thinkingLevel", "thinking_level", w.ThinkingLevel, w.ThinkingLevelS)),
	}
	return s.err
}
