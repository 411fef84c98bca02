package rpc

import (
	"context"
	"errors"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
	"modelgateway/core/provider"
	"modelgateway/core/routing"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// countTokensRPC is the counting RPC (CountTokens): the upstream counts when its protocol can, else
// the local tokenizer does. Nothing is charged, but counting is not free for the gateway
// (an upstream call, the body's memory): like any request it takes its id, needs a positive
// available balance, counts toward the key's limits (KeyLimiter) and is recorded, so that
// it shows in ListUsage (with cost 0).
func (s *CoreServer) countTokensRPC(ctx context.Context, req *corev1.GenerateRequest) (*corev1.CountTokensResponse, error) {
	b, err := s.admit(ctx, req.GetEndpointFamily(), req.GetModel())
	if err != nil {
		return nil, err
	}
	defer b.finish()
	if err := s.checkBalance(ctx, b.snap, b.k, req.GetEndpointFamily(), b.m); err != nil {
		var ae *apierror.Error
		if errors.As(err, &ae) {
			return nil, b.refuse(ae)
		}
		return nil, err
	}
	n, err := s.countTokens(ctx, b.snap, b.m, req)
	if err != nil {
		b.out.Status = store.StatusUpstreamError
		return nil, err
	}
	// The count is the usage; the cost stays unset: no ledger entry is written for it.
	b.out.Usage = metering.Usage{Input: n, Reliable: true}
	return &corev1.CountTokensResponse{InputTokens: n}, nil
}

// countTokens asks the model's routes to count, then the local tokenizer.
func (s *CoreServer) countTokens(ctx context.Context, snap *snapshot.Snapshot, m *snapshot.Model, req *corev1.GenerateRequest) (int64, error) {
	var lastErr error
	for route, p := range routing.Routes(snap, m, req.GetEndpointFamily()) {
		adapter := s.Deps.Adapters[p.Kind]
		if adapter == nil {
			continue
		}
		n, err := adapter.CountTokens(ctx, s.Deps.call(m, routing.Upstream(m, p, route, s.Deps.Env), req))
		if err == nil {
			return n, nil
		}
		if errors.Is(err, provider.ErrCannotCount) {
			break
		}
		lastErr = err
		var pe *provider.Error
		if errors.As(err, &pe) && !pe.Retryable {
			return 0, upstreamError(err)
		}
	}
	if lastErr != nil && s.Deps.Counter == nil {
		return 0, upstreamError(lastErr)
	}
	if s.Deps.Counter == nil {
		return 0, apierror.New(apierror.Internal, "no token counter")
	}
	return s.Deps.Counter(req), nil
}
