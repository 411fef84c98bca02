package rpc

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/billing"
	"modelgateway/core/metering"
	"modelgateway/core/provider"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// Embed implements the embedding RPC: the checks, price and hold of every priced call, the
// first route that answers, and a charge by input tokens. Upstreams that report no usage
// (the content-generation embed routes never do) are measured with the local tokenizer, so
// that embeddings are never free by accident.
func (s *CoreServer) Embed(ctx context.Context, req *corev1.EmbedRequest) (*corev1.EmbedResponse, error) {
	raw := len(req.GetRawBody())
	input := billing.InputEstimate(max(raw, proto.Size(req)-raw))
	b, err := s.admit(ctx, req.GetEndpointFamily(), req.GetModel(), tokenLimit{
		estimate:  func(*snapshot.Model) int64 { return input },
		setHeader: func(md metadata.MD) error { return grpc.SetHeader(ctx, md) },
	})
	if err != nil {
		return nil, err
	}
	defer b.finish()
	if req.GetStream() {
		return nil, b.refuse(apierror.New(apierror.StreamingNotSupported, "%s does not stream", req.GetEndpointFamily()))
	}
	if err := b.checkParameters(req.GetParameters()); err != nil {
		return nil, err
	}
	if err := b.holdWorstCase(false, input, 0); err != nil {
		return nil, err
	}
	res, _, err := firstAnswer(b, always, func(a provider.Adapter, up provider.Upstream) (*provider.EmbedResult, error) {
		e, ok := a.(provider.Embedder)
		if !ok {
			return nil, errNoAdapter
		}
		return e.Embed(ctx, &provider.EmbedCall{Upstream: up, Request: req})
	})
	if err != nil {
		b.out.Status = store.StatusUpstreamError
		return nil, err
	}
	u := res.Usage
	if !u.Reliable && s.Deps.TextCounter != nil && !req.GetTokenInput() {
		u = metering.Usage{Input: s.Deps.TextCounter(req.GetTexts()), Reliable: true}
	}
	b.charge(u)
	if err := b.settle(); err != nil {
		return nil, err
	}
	resp := &corev1.EmbedResponse{NativeBody: res.NativeBody, Usage: usageMessage(u)}
	resp.Usage.Cost, resp.Usage.Currency = b.costString()
	if res.NativeBody == nil {
		resp.Embeddings = make([]*corev1.Embedding, len(res.Vectors))
		for i, v := range res.Vectors {
			resp.Embeddings[i] = &corev1.Embedding{Values: v}
		}
	}
	return resp, nil
}

func usageMessage(u metering.Usage) *corev1.Usage {
	return provider.UsageEvent(u).GetUsage()
}
