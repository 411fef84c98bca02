// Package completions is the client protocol of the legacy POST /v1/completions: a string
// prompt only (spec 4.2 rule 3), no streaming (spec 4.2: the route does not stream), and a
// text_completion object as the answer (openai-chat.md).
package completions

import (
	"net/http"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/chatwire"
	"modelgateway/core/wire/strictjson"
	"modelgateway/front/relay"
)

// Family is the contract's endpoint family of the route.
const Family = "completions"

// Protocol implements relay.Protocol for POST /v1/completions.
type Protocol struct{}

var _ relay.Protocol = Protocol{}

// Decode implements relay.Protocol. The prompt becomes one user text message, so that any
// upstream kind can answer it.
func (Protocol) Decode(_ *http.Request, body []byte) (*corev1.GenerateRequest, *apierror.Error) {
	var in chatwire.CompletionRequest
	if err := strictjson.Unmarshal(body, &in); err != nil {
		return nil, invalid("the body is not a valid completions request: %v", err)
	}
	if in.Model == "" {
		return nil, invalid("model is required")
	}
	if len(in.Prompt) == 0 || string(in.Prompt) == "null" {
		return nil, invalid("prompt is required")
	}
	if in.Prompt[0] != '"' {
		return nil, apierror.New(apierror.UnsupportedPromptShape, "prompt must be a string; batch and token-id prompts are not supported")
	}
	var prompt string
	if err := strictjson.Unmarshal(in.Prompt, &prompt); err != nil {
		return nil, invalid("prompt: %v", err)
	}
	if in.Stream != nil && *in.Stream {
		return nil, apierror.New(apierror.StreamingNotSupported, "/v1/completions does not stream")
	}
	if in.MaxTokens != nil && *in.MaxTokens < 0 {
		return nil, invalid("max_tokens must not be negative")
	}
	out := &corev1.GenerateRequest{
		EndpointFamily:  Family,
		Protocol:        corev1.Protocol_PROTOCOL_COMPLETIONS,
		Model:           in.Model,
		MaxOutputTokens: in.MaxTokens,
		Messages: []*corev1.Message{{Role: corev1.Role_ROLE_USER, Parts: []*corev1.Part{
			{Kind: &corev1.Part_Text{Text: prompt}},
		}}},
		Temperature:      in.Temperature,
		TopP:             in.TopP,
		N:                in.N,
		Stop:             in.Stop,
		PresencePenalty:  in.PresencePenalty,
		FrequencyPenalty: in.FrequencyPenalty,
		Seed:             in.Seed,
		Parameters:       parameters(&in),
	}
	if in.User != nil {
		out.User = *in.User
	}
	// Legacy logprobs is the number of alternatives per token (0..5); 0 still asks for the
	// chosen tokens' own log probabilities.
	if lp := in.Logprobs; lp != nil {
		out.Logprobs = true
		if *lp > 0 {
			out.TopLogprobs = lp
		}
	}
	return out, nil
}

// parameters lists the canonical names (spec 2.6) of the optional parameters the client set.
func parameters(in *chatwire.CompletionRequest) []string {
	var p relay.Params
	p.Add(in.Temperature != nil, "temperature")
	p.Add(in.TopP != nil, "top_p")
	p.Add(in.MaxTokens != nil, "max_tokens")
	p.Add(in.FrequencyPenalty != nil, "frequency_penalty")
	p.Add(in.PresencePenalty != nil, "presence_penalty")
	p.Add(len(in.Stop) > 0, "stop")
	p.Add(in.Seed != nil, "seed")
	p.Add(in.N != nil, "n")
	p.Add(in.Logprobs != nil, "logprobs")
	p.Add(len(in.LogitBias) > 0 && string(in.LogitBias) != "null", "logit_bias")
	p.Add(in.User != nil, "user")
	return p
}

func invalid(format string, args ...any) *apierror.Error {
	return apierror.New(apierror.InvalidRequest, format, args...)
}
