package openai

import (
	"context"
	"net/http"
	"strings"

	"modelgateway/core/provider"
)

// Forward implements provider.Forwarder: moderations, images and audio go to the same path
// below the base URL, with the body core built.
func (Adapter) Forward(ctx context.Context, call *provider.ForwardCall) (*http.Response, error) {
	path, ok := provider.FamilyPaths[call.Family]
	if !ok || call.Family == "rerank" {
		return nil, &provider.Error{Status: http.StatusBadRequest, Message: "an openai provider does not serve " + call.Family}
	}
	return provider.PostForward(ctx, call, strings.TrimRight(call.BaseURL, "/")+path, provider.Bearer(call.APIKey))
}
