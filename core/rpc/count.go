package rpc

import (
	"context"
	"errors"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
	"modelgateway/core/provider"
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
	n, err := s.countTokens(b, req)
	if err != nil {
		b.out.Status = store.StatusUpstreamError
		return nil, err
	}
	// The count is the usage; the cost stays unset: no ledger entry is written for it.
	b.out.Usage = metering.Usage{Input: n, Reliable: true}
	return &corev1.CountTokensResponse{InputTokens: n}, nil
}

// countTokens asks the model's routes to count as a generation asks them to answer
// (firstAnswer: the routing plan, retries with backoff, the credentials of a pool in turn, a
// refused credential set aside), then the local tokenizer: when the route reached cannot count
// (its protocol has no counting route), or when the routes failed only in ways another
// attempt could get past. A non-retryable upstream answer passes on, as a generation's does.
func (s *CoreServer) countTokens(b *billed, req *corev1.GenerateRequest) (int64, error) {
	var cannot bool
	var last error // the last upstream call's failure
	n, _, err := firstAnswer(b, always, func(a provider.Adapter, up provider.Upstream) (int64, error) {
		if cannot {
			// The local tokenizer counts: no other route is asked, nor recorded as tried.
			return 0, errNoAdapter
		}
		n, err := a.CountTokens(b.ctx, s.Deps.call(b.m, up, req))
		if errors.Is(err, provider.ErrCannotCount) {
			cannot = true
			return 0, errNoAdapter
		}
		last = err
		return n, err
	})
	if err == nil {
		return n, nil
	}
	var pe *provider.Error
	switch {
	case b.ctx.Err() != nil:
		return 0, err
	case errors.As(last, &pe) && !pe.Retryable:
		return 0, err
	case s.Deps.Counter != nil:
		return s.Deps.Counter(req), nil
	case last != nil:
		return 0, err
	}
	return 0, apierror.New(apierror.Internal, "no token counter")
}
