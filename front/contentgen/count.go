package contentgen

import (
	"encoding/json"
	"net/http"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/geminiwire"
	"modelgateway/core/wire/strictjson"
	"modelgateway/front/relay"
)

// CountProtocol serves :countTokens.
type CountProtocol struct{}

var _ relay.CountProtocol = CountProtocol{}

// Decode implements relay.CountProtocol: {"contents":[...]} or
// {"generateContentRequest":{...}}, the only form that carries a system instruction and tools.
func (CountProtocol) Decode(r *http.Request, body []byte) (*corev1.GenerateRequest, *apierror.Error) {
	model, action, ok := SplitPath(r.URL.Path)
	if !ok || action != ActionCount {
		return nil, apierror.New(apierror.InvalidRequest, "%s is not a token-counting path; use /v1beta/models/{model}:countTokens", r.URL.Path)
	}
	var c geminiwire.CountTokensRequest
	if err := strictjson.Unmarshal(body, &c); err != nil {
		return nil, bodyError(err)
	}
	g := c.GenerateContentRequest
	if g == nil {
		g = &geminiwire.GenerateContentRequest{Contents: c.Contents}
	}
	req, apiErr := decodeGenerate(g, model)
	if apiErr != nil {
		return nil, apiErr
	}
	req.EndpointFamily = FamilyCount
	return req, nil
}

// Render implements relay.CountProtocol.
func (CountProtocol) Render(w http.ResponseWriter, _ *http.Request, inputTokens int64) {
	body, _ := json.Marshal(geminiwire.CountTokensResponse{TotalTokens: inputTokens})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(body, '\n'))
}
