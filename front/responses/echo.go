package responses

import (
	"bytes"
	"encoding/json"

	corev1 "modelgateway/gen/gateway/core/v1"

	rw "modelgateway/core/wire/responseswire"
	"modelgateway/core/wire/strictjson"
)

// echo is the part of the request a Response object repeats back. It is read from the raw
// body (once per translated answer) so that tools and instructions come back as sent.
type echo struct {
	Instructions       json.RawMessage    `json:"instructions"`
	MaxOutputTokens    *int64             `json:"max_output_tokens"`
	ParallelToolCalls  *bool              `json:"parallel_tool_calls"`
	Temperature        *float64           `json:"temperature"`
	TopP               *float64           `json:"top_p"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              json.RawMessage    `json:"tools"`
	Metadata           json.RawMessage    `json:"metadata"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          *rw.ReasoningParam `json:"reasoning"`
	Text               json.RawMessage    `json:"text"`
	Truncation         *string            `json:"truncation"`
	User               *string            `json:"user"`
}

var (
	jsonAuto        = json.RawMessage(`"auto"`)
	jsonEmptyArray  = json.RawMessage(`[]`)
	jsonEmptyObject = json.RawMessage(`{}`)
	jsonTextFormat  = json.RawMessage(`{"format":{"type":"text"}}`)
	one             = 1.0
)

// baseResponse is the Response with the request's settings, API defaults where the client
// left them out, status in_progress and no output yet. It also returns the namespace of every
// tool that was declared inside one, keyed by the canonical (flattened) name.
func baseResponse(req *corev1.GenerateRequest, id, model string, created int64) (*rw.Response, map[string]namespaced) {
	var ec echo
	_ = strictjson.Unmarshal(req.GetRawBody(), &ec) // Decode has accepted this body
	r := &rw.Response{
		ID: id, Object: rw.ObjectResponse, CreatedAt: created, Status: rw.StatusInProgress, Model: model,
		Instructions: stringOrNull(ec.Instructions), MaxOutputTokens: ec.MaxOutputTokens,
		ParallelToolCalls: ec.ParallelToolCalls == nil || *ec.ParallelToolCalls,
		Temperature:       orDefault(ec.Temperature, &one), TopP: orDefault(ec.TopP, &one),
		ToolChoice: orRaw(ec.ToolChoice, jsonAuto), Tools: orRaw(ec.Tools, jsonEmptyArray),
		Metadata: orRaw(ec.Metadata, jsonEmptyObject), PreviousResponseID: ec.PreviousResponseID,
		Text: orRaw(ec.Text, jsonTextFormat), Truncation: "disabled", User: ec.User,
		// Nothing is kept server-side for a translated answer.
		Store:  false,
		Output: []rw.OutputItem{},
	}
	if prev := req.GetExpandedPreviousResponseId(); prev != "" {
		r.PreviousResponseID = &prev // the body sent upstream no longer names it
	}
	if ec.Reasoning != nil {
		r.Reasoning = *ec.Reasoning
	}
	if ec.Truncation != nil {
		r.Truncation = *ec.Truncation
	}
	return r, namespaces(ec.Tools)
}

// namespaced is a tool declared inside a namespace.
type namespaced struct{ namespace, name string }

func namespaces(raw json.RawMessage) map[string]namespaced {
	if !bytes.Contains(raw, []byte(`"namespace"`)) {
		return nil
	}
	var tools []rw.Tool
	if strictjson.Unmarshal(raw, &tools) != nil {
		return nil
	}
	m := make(map[string]namespaced)
	flat := make(map[string]bool)
	for _, t := range tools {
		if t.Type == rw.ToolFunction {
			flat[t.Name] = true
		}
	}
	for _, t := range tools {
		if t.Type != rw.ToolNamespace || t.Name == "" {
			continue
		}
		for _, inner := range t.Tools {
			full := namespacedName(t.Name, inner.Name)
			// A flat tool of the same name wins: its calls cannot be told apart.
			if _, taken := m[full]; !taken && !flat[full] {
				m[full] = namespaced{t.Name, inner.Name}
			}
		}
	}
	return m
}

func stringOrNull(raw json.RawMessage) json.RawMessage {
	if rw.InputKind(raw) == rw.InputString {
		return raw
	}
	return nil
}

func orRaw(raw, def json.RawMessage) json.RawMessage {
	if rw.InputKind(raw) == rw.InputAbsent {
		return def
	}
	return raw
}

func orDefault[T any](v, def *T) *T {
	if v == nil {
		return def
	}
	return v
}
