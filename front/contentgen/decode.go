package contentgen

import (
	"errors"
	"net/http"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/geminiwire"
	"modelgateway/core/wire/strictjson"
	"modelgateway/front/relay"
)

// Protocol serves :generateContent and :streamGenerateContent.
type Protocol struct{}

var _ relay.Protocol = Protocol{}

// Decode implements relay.Protocol. The model comes from the path; a body model must agree.
func (Protocol) Decode(r *http.Request, body []byte) (*corev1.GenerateRequest, *apierror.Error) {
	model, action, ok := SplitPath(r.URL.Path)
	if !ok || (action != ActionGenerate && action != ActionStream) {
		return nil, apierror.New(apierror.InvalidRequest, "%s is not a content-generation path; use /v1beta/models/{model}:generateContent or :streamGenerateContent", r.URL.Path)
	}
	var g geminiwire.GenerateContentRequest
	if err := strictjson.Unmarshal(body, &g); err != nil {
		return nil, bodyError(err)
	}
	req, apiErr := decodeGenerate(&g, model)
	if apiErr != nil {
		return nil, apiErr
	}
	req.EndpointFamily = FamilyGenerate
	req.Stream = action == ActionStream
	req.Parameters = parameters(&g, req.Stream)
	return req, nil
}

// decodeGenerate checks the body against the path model and converts it.
func decodeGenerate(g *geminiwire.GenerateContentRequest, model string) (*corev1.GenerateRequest, *apierror.Error) {
	if g.Model != "" && bareModel(g.Model) != model {
		return nil, apierror.New(apierror.InvalidRequest, "the body's model %q does not match the model %q in the path", g.Model, model)
	}
	if len(g.Contents) == 0 {
		return nil, apierror.New(apierror.InvalidRequest, "contents is required and must not be empty")
	}
	req, apiErr := toCanonical(g)
	if apiErr != nil {
		return nil, apiErr
	}
	req.Protocol = corev1.Protocol_PROTOCOL_CONTENT_GENERATION
	req.Model = model
	return req, nil
}

func bodyError(err error) *apierror.Error {
	var both *geminiwire.ErrBothSpellings
	switch {
	case errors.As(err, &both), errors.Is(err, geminiwire.ErrCountBothForms):
		return apierror.New(apierror.InvalidRequest, "invalid request body: %v", err)
	case errors.Is(err, strictjson.ErrSyntax):
		return apierror.New(apierror.InvalidRequest, "the request body is %v", err)
	}
	return apierror.New(apierror.InvalidRequest, "invalid request body: %v", err)
}

// parameters lists the spec 2.6 names of the optional parameters the request uses, in the
// table's order, for core's capability check.
func parameters(g *geminiwire.GenerateContentRequest, stream bool) []string {
	var out []string
	add := func(used bool, name string) {
		if used {
			out = append(out, name)
		}
	}
	c := g.GenerationConfig
	if c == nil {
		c = &geminiwire.GenerationConfig{}
	}
	add(c.Temperature != nil, "temperature")
	add(c.TopP != nil, "top_p")
	add(c.MaxOutputTokens != nil, "max_tokens")
	add(c.FrequencyPenalty != nil, "frequency_penalty")
	add(c.PresencePenalty != nil, "presence_penalty")
	add(len(c.StopSequences) > 0, "stop")
	add(c.Seed != nil, "seed")
	add(c.CandidateCount != nil, "n")
	add(stream, "stream")
	add(isJSONMime(c.ResponseMimeType), "response_format")
	add(len(g.Tools) > 0, "tools")
	add(g.ToolConfig != nil && g.ToolConfig.FunctionCallingConfig != nil, "tool_choice")
	add(c.ResponseLogprobs != nil && *c.ResponseLogprobs, "logprobs")
	add(c.Logprobs != nil, "top_logprobs")
	return out
}

func isJSONMime(m string) bool {
	m, _, _ = strings.Cut(m, ";")
	return strings.EqualFold(strings.TrimSpace(m), "application/json")
}
