package admin

import (
	"context"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "modelgateway/gen/gateway/admin/v1"

	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// Page sizes of ListProfileBatches.
const (
	defaultBatchesPage = 20
	maxBatchesPage     = 1000
)

// ListProfileBatches implements GET /admin/v1/profiles/{id}/batches: the profile's batches,
// newest first, with their counts, and the counts of every batch of the range added up
// (the bot's /usage and its Mini App show them).
func (s *Server) ListProfileBatches(ctx context.Context, req *adminv1.ListProfileBatchesRequest) (*adminv1.ListProfileBatchesResponse, error) {
	id, err := parseID("id", req.GetId())
	if err != nil {
		return nil, err
	}
	var key uuid.UUID
	if req.GetKeyId() != "" {
		if key, err = parseID("key_id", req.GetKeyId()); err != nil {
			return nil, err
		}
	}
	var since time.Time
	if ts := req.GetStartTime(); ts != nil {
		if err := ts.CheckValid(); err != nil {
			return nil, apierror.New(apierror.InvalidRequest, "start_time: %v", err)
		}
		since = ts.AsTime()
	}
	// AIP-158: a negative size is an error, a size above the maximum is coerced to it.
	size := int(req.GetPageSize())
	switch {
	case size < 0:
		return nil, apierror.New(apierror.InvalidRequest, "page_size must not be negative")
	case size == 0:
		size = defaultBatchesPage
	case size > maxBatchesPage:
		size = maxBatchesPage
	}
	if _, err := s.Store.GetProfile(ctx, id); err != nil {
		return nil, storeError("profile", err)
	}
	got, err := s.Store.ListProfileBatches(ctx, id, key, since, size)
	if err != nil {
		return nil, err
	}
	t := got.Totals
	resp := &adminv1.ListProfileBatchesResponse{Batches: make([]*adminv1.ProfileBatch, 0, len(got.Batches)),
		Totals: &adminv1.ProfileBatchTotals{Batches: t.Batches, Running: t.Running, Total: t.Total, Completed: t.Completed,
			Failed: t.Failed, Canceled: t.Canceled, Expired: t.Expired}}
	for _, b := range got.Batches {
		resp.Batches = append(resp.Batches, profileBatch(b))
	}
	return resp, nil
}

func profileBatch(b *store.Batch) *adminv1.ProfileBatch {
	out := &adminv1.ProfileBatch{Id: b.ID, Api: b.API, Endpoint: b.Endpoint, Status: b.Status, KeyId: b.KeyID.String(),
		Total: int64(b.Total), Completed: int64(b.Completed), Failed: int64(b.Failed), Canceled: int64(b.Canceled), Expired: int64(b.Expired),
		CreateTime: timestamppb.New(b.CreatedAt)}
	for _, end := range []*time.Time{b.CompletedAt, b.FailedAt, b.ExpiredAt, b.CancelledAt} {
		if end != nil && b.Ended() {
			out.EndTime = timestamppb.New(*end)
			break
		}
	}
	return out
}
