package contentgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"google.golang.org/protobuf/proto"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/geminiwire"
	"modelgateway/core/wire/strictjson"
)

func toolOf(fd geminiwire.FunctionDeclaration) (*corev1.Tool, error) {
	if fd.Name == "" {
		return nil, fmt.Errorf("name is required")
	}
	if fd.Parameters != nil && fd.ParametersJSONSchema != nil {
		return nil, fmt.Errorf("parameters and parametersJsonSchema are mutually exclusive")
	}
	t := &corev1.Tool{Name: fd.Name, Description: fd.Description, Parameters: emptySchema}
	switch {
	case fd.ParametersJSONSchema != nil:
		s, err := compactObject(fd.ParametersJSONSchema)
		if err != nil {
			return nil, fmt.Errorf("parametersJsonSchema: %w", err)
		}
		t.Parameters = s
	case fd.Parameters != nil:
		s, err := openAPIToJSONSchema(fd.Parameters)
		if err != nil {
			return nil, fmt.Errorf("parameters: %w", err)
		}
		t.Parameters = s
	}
	return t, nil
}

func compactObject(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return "", fmt.Errorf("must be a JSON object")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", err
	}
	return b.String(), nil
}

// openAPIToJSONSchema turns the OpenAPI-subset Schema into JSON Schema for other upstreams:
// its type names are enum values ("OBJECT", "STRING") where JSON Schema wants lower case.
func openAPIToJSONSchema(raw json.RawMessage) (string, error) {
	var v any
	if err := strictjson.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	if _, ok := v.(map[string]any); !ok {
		return "", fmt.Errorf("must be a JSON object")
	}
	lowerTypes(v)
	b, err := json.Marshal(v)
	return string(b), err
}

func lowerTypes(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && k == "type" {
				v[k] = strings.ToLower(s)
				continue
			}
			if k == "properties" {
				// Property names are not keywords: descend into each schema only.
				if props, ok := e.(map[string]any); ok {
					for _, p := range props {
						lowerTypes(p)
					}
					continue
				}
			}
			lowerTypes(e)
		}
	case []any:
		for _, e := range v {
			lowerTypes(e)
		}
	}
}

func toolChoice(fc *geminiwire.FunctionCallingConfig) (*corev1.ToolChoice, error) {
	switch strings.ToUpper(fc.Mode) {
	case "", "MODE_UNSPECIFIED", geminiwire.ModeAuto, geminiwire.ModeValidated:
		return &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_AUTO}, nil
	case geminiwire.ModeNone:
		return &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_NONE}, nil
	case geminiwire.ModeAny:
		if len(fc.AllowedFunctionNames) == 1 {
			return &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_NAMED, Name: fc.AllowedFunctionNames[0]}, nil
		}
		// Several allowed names have no canonical form; "must call one" is the closest.
		return &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_REQUIRED}, nil
	}
	return nil, fmt.Errorf("mode %q is not one of AUTO, ANY, NONE, VALIDATED", fc.Mode)
}

func applyConfig(req *corev1.GenerateRequest, c *geminiwire.GenerationConfig) error {
	req.MaxOutputTokens = c.MaxOutputTokens
	req.Temperature = c.Temperature
	req.TopP = c.TopP
	if c.TopK != nil {
		if *c.TopK < 0 || *c.TopK > math.MaxInt32 {
			return fmt.Errorf("topK %v is out of range", *c.TopK)
		}
		req.TopK = proto.Int32(int32(*c.TopK))
	}
	req.Stop = c.StopSequences
	req.Seed = c.Seed
	req.PresencePenalty = c.PresencePenalty
	req.FrequencyPenalty = c.FrequencyPenalty
	req.N = c.CandidateCount
	if isJSONMime(c.ResponseMimeType) {
		rf, err := responseFormat(c)
		if err != nil {
			return err
		}
		req.ResponseFormat = rf
	}
	if c.ResponseLogprobs != nil {
		req.Logprobs = *c.ResponseLogprobs
	}
	req.TopLogprobs = c.Logprobs
	if tc := c.ThinkingConfig; tc != nil {
		req.Reasoning = reasoning(tc)
	}
	return nil
}

func responseFormat(c *geminiwire.GenerationConfig) (*corev1.ResponseFormat, error) {
	rf := &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_JSON_OBJECT}
	switch {
	case c.ResponseJSONSchema != nil:
		s, err := compactObject(c.ResponseJSONSchema)
		if err != nil {
			return nil, fmt.Errorf("responseJsonSchema: %w", err)
		}
		rf.Type, rf.Name, rf.Schema = corev1.ResponseFormat_TYPE_JSON_SCHEMA, "response", s
	case c.ResponseSchema != nil:
		s, err := openAPIToJSONSchema(c.ResponseSchema)
		if err != nil {
			return nil, fmt.Errorf("responseSchema: %w", err)
		}
		rf.Type, rf.Name, rf.Schema = corev1.ResponseFormat_TYPE_JSON_SCHEMA, "response", s
	}
	return rf, nil
}

// reasoning maps thinkingConfig: budget 0 is off, -1 is "let the model decide" (no budget).
func reasoning(tc *geminiwire.ThinkingConfig) *corev1.Reasoning {
	r := &corev1.Reasoning{
		IncludeThoughts: tc.IncludeThoughts != nil && *tc.IncludeThoughts,
	}
	if lvl := strings.ToLower(tc.ThinkingLevel); lvl != "" && lvl != "thinking_level_unspecified" {
		r.Effort = lvl
	}
	if b := tc.ThinkingBudget; b != nil {
		switch {
		case *b == 0:
			r.Disabled = true
		case *b > 0:
			r.BudgetTokens = *b
		}
	}
	return r
}
