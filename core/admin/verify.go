package admin

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "modelgateway/gen/gateway/admin/v1"

	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/verify"
	"modelgateway/core/wire/apierror"
)

// Verifier probes which optional parameters models accept (core/verify.Prober).
type Verifier interface {
	Verify(ctx context.Context, snap *snapshot.Snapshot, models, families []string) ([]verify.Result, error)
}

var _ Verifier = (*verify.Prober)(nil)

// VerifyCapabilities implements POST /admin/v1/capabilities:verify: it probes, records every
// pair whose probes ran to the end (a failed baseline records nothing), and reloads this
// replica's snapshot so that the catalogue and the parameter check use the new lists when
// the call answers; the other replicas follow through NOTIFY.
func (s *Server) VerifyCapabilities(ctx context.Context, req *adminv1.VerifyCapabilitiesRequest) (*adminv1.VerifyCapabilitiesResponse, error) {
	if s.Verifier == nil {
		return nil, apierror.New(apierror.Unavailable, "capability verification is not configured on this replica")
	}
	results, err := s.Verifier.Verify(ctx, s.Snapshots.Current(), req.GetModels(), req.GetEndpointFamilies())
	if err != nil {
		return nil, err
	}
	// A verification that ran to its end is kept even if the caller has gone meanwhile.
	wctx := context.WithoutCancel(ctx)
	resp := &adminv1.VerifyCapabilitiesResponse{Capabilities: []*adminv1.Capability{}}
	recorded := false
	for i := range results {
		r := &results[i]
		c := &adminv1.Capability{
			Model: r.Model, EndpointFamily: r.EndpointFamily,
			OptionalParameters: append([]string{}, r.Supported...),
			Inconclusive:       append([]string{}, r.Inconclusive...),
		}
		resp.Capabilities = append(resp.Capabilities, c)
		if !r.Recorded() {
			continue
		}
		err := s.Store.UpsertCapability(wctx, r.Model, r.EndpointFamily, c.OptionalParameters, r.VerifiedAt)
		if errors.Is(err, store.ErrNotFound) {
			continue // the model was deleted while it was probed
		}
		if err != nil {
			return nil, fmt.Errorf("record capabilities: %w", err)
		}
		c.VerifiedAt = timestamppb.New(r.VerifiedAt)
		recorded = true
	}
	if recorded {
		if err := s.changed(wctx); err != nil {
			return nil, err
		}
	}
	return resp, nil
}
