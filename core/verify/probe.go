package verify

import (
	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/catalog"
)

// ProbeMaxTokens is the output limit of every probe: enough for an upstream to answer at
// all, small enough that a full verification costs next to nothing.
const ProbeMaxTokens = 16

// probeWord is the whole user message. It is "JSON" because an OpenAI upstream refuses
// response_format json_object unless the messages mention JSON; every probe sends the same
// word so that the parameter is the only difference from the baseline.
const probeWord = "JSON"

// probeTool is the one function tool of the tools and tool_choice probes (spec 2.6 rule 4).
var probeTool = &corev1.Tool{
	Name: "probe", Description: "Does nothing.",
	Parameters: `{"type":"object","properties":{}}`,
}

// setters put exactly one optional parameter of spec 2.6 on top of the baseline. A parameter
// without an entry has no canonical field (logit_bias) and cannot be probed: it is reported
// inconclusive. max_tokens has none either because the baseline already carries the output
// limit (the messages protocol requires one, and it bounds the probes' cost): the baseline
// verifies it.
var setters = map[string]func(r *corev1.GenerateRequest){
	"temperature":       func(r *corev1.GenerateRequest) { r.Temperature = ptr(0.5) },
	"top_p":             func(r *corev1.GenerateRequest) { r.TopP = ptr(0.5) },
	"frequency_penalty": func(r *corev1.GenerateRequest) { r.FrequencyPenalty = ptr(0.1) },
	"presence_penalty":  func(r *corev1.GenerateRequest) { r.PresencePenalty = ptr(0.1) },
	"stop":              func(r *corev1.GenerateRequest) { r.Stop = []string{"zzz"} },
	"seed":              func(r *corev1.GenerateRequest) { r.Seed = ptr[int64](1) },
	"n":                 func(r *corev1.GenerateRequest) { r.N = ptr[int32](2) },
	"stream":            func(r *corev1.GenerateRequest) { r.Stream = true },
	"response_format": func(r *corev1.GenerateRequest) {
		r.ResponseFormat = &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_JSON_OBJECT}
	},
	"tools": func(r *corev1.GenerateRequest) { r.Tools = []*corev1.Tool{probeTool} },
	"tool_choice": func(r *corev1.GenerateRequest) {
		r.Tools = []*corev1.Tool{probeTool}
		r.ToolChoice = &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_AUTO}
	},
	"logprobs": func(r *corev1.GenerateRequest) { r.Logprobs = true },
	"top_logprobs": func(r *corev1.GenerateRequest) {
		r.Logprobs = true
		r.TopLogprobs = ptr[int32](2)
	},
	"user": func(r *corev1.GenerateRequest) { r.User = "probe" },
}

// byBaseline are the parameters the baseline request itself verifies.
var byBaseline = map[string]bool{"max_tokens": true}

func ptr[T any](v T) *T { return &v }

// request builds a probe: the baseline alone when param is empty. The protocol is left
// unspecified so that every adapter translates from the canonical fields instead of passing
// a raw body through: a probe has no client body.
func request(model, family, param string, maxTokens int64) *corev1.GenerateRequest {
	r := &corev1.GenerateRequest{
		EndpointFamily:  family,
		Protocol:        corev1.Protocol_PROTOCOL_UNSPECIFIED,
		Model:           model,
		MaxOutputTokens: &maxTokens,
		Parameters:      []string{"max_tokens"},
		Messages: []*corev1.Message{{
			Role:  corev1.Role_ROLE_USER,
			Parts: []*corev1.Part{{Kind: &corev1.Part_Text{Text: probeWord}}},
		}},
	}
	if set := setters[param]; set != nil {
		set(r)
		r.Parameters = append(r.Parameters, param)
	}
	return r
}

// probed reports whether a parameter is verified by a request of its own.
func probed(param string) bool { return setters[param] != nil }

// Parameters are the optional parameters of spec 2.6, in its order.
var Parameters = catalog.OptionalParameters
