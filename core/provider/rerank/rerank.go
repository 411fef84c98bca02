// Package rerank is the adapter of provider kind "rerank": Cohere- and Jina-style ranking
// APIs that take {model, query, documents, top_n} at {base_url}/rerank. The client's body
// goes through with the model rewritten; the answer comes back as the upstream wrote it.
package rerank

import (
	"context"
	"net/http"
	"strings"

	"modelgateway/core/provider"
)

// Adapter speaks the rerank kind. It serves only the rerank family: text generation routed
// to such a provider is a catalogue mistake, answered as a clear upstream error.
type Adapter struct{}

var errTextOnRerank = &provider.Error{Status: http.StatusBadRequest, Message: "a rerank provider serves only /v1/rerank"}

// Generate implements provider.Adapter.
func (Adapter) Generate(context.Context, *provider.Call) (provider.Stream, error) {
	return nil, errTextOnRerank
}

// CountTokens implements provider.Adapter: core counts locally.
func (Adapter) CountTokens(context.Context, *provider.Call) (int64, error) {
	return 0, provider.ErrCannotCount
}

// Forward implements provider.Forwarder.
func (Adapter) Forward(ctx context.Context, call *provider.ForwardCall) (*http.Response, error) {
	if call.Family != "rerank" {
		return nil, &provider.Error{Status: http.StatusBadRequest, Message: "a rerank provider does not serve " + call.Family}
	}
	return provider.PostForward(ctx, call, strings.TrimRight(call.BaseURL, "/")+"/rerank", provider.Bearer(call.APIKey))
}
