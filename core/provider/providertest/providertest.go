// Package providertest drives the real provider adapters from the fronts' differential tests
// (FuzzOneReading): a decoded request is sent as core sends it, to a stub upstream.
package providertest

import (
	"context"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/provider"
	"modelgateway/core/wire/strictjson/strictjsontest"
)

// UpstreamModel is the model the stub upstream is sent.
const UpstreamModel = "up-model"

// Decided is what core prices and authorizes of a generation request.
func Decided(req *corev1.GenerateRequest) strictjsontest.Decided {
	return strictjsontest.Decided{PublicModel: req.GetModel(), UpstreamModel: UpstreamModel, MaxOutput: req.MaxOutputTokens, Stream: req.Stream, N: req.N}
}

// Generate sends req through the adapter to the upstream at url; the answer is not read.
func Generate(a provider.Adapter, req *corev1.GenerateRequest, url string) {
	_, _ = a.Generate(context.Background(), &provider.Call{
		Upstream: provider.Upstream{PublicModel: req.GetModel(), UpstreamModel: UpstreamModel, BaseURL: url}, Request: req})
}
