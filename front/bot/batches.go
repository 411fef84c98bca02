package bot

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "modelgateway/gen/gateway/admin/v1"
)

// A user's batches (contract.md "Files and batches"), read through the admin API's
// ListProfileBatches: a line of /usage, and a list in the Mini App.

// batchesLine is /usage's line on the batches created since start (of one key when keyID is
// set): how many, how many still run, and their items done, failed and waiting; "" when
// there were none.
func (b *Bot) batchesLine(ctx context.Context, profileID, keyID string, start *timestamppb.Timestamp) (string, error) {
	got, err := b.gw.admin.ListProfileBatches(ctx, &adminv1.ListProfileBatchesRequest{Id: profileID, KeyId: keyID, StartTime: start, PageSize: 1})
	if err != nil {
		return "", err
	}
	t := got.GetTotals()
	if t.GetBatches() == 0 {
		return "", nil
	}
	failed := t.GetFailed() + t.GetCanceled() + t.GetExpired()
	s := fmt.Sprintf("Batches: %d", t.GetBatches())
	if t.GetRunning() > 0 {
		s += fmt.Sprintf(" (%d running)", t.GetRunning())
	}
	s += fmt.Sprintf(" — %d items: %d done, %d failed", t.GetTotal(), t.GetCompleted(), failed)
	if waiting := t.GetTotal() - t.GetCompleted() - failed; waiting > 0 {
		s += fmt.Sprintf(", %d waiting", waiting)
	}
	return s, nil
}

// appBatch is a batch as the Mini App shows it.
type appBatch struct {
	ID       string `json:"id"`
	API      string `json:"api"`
	Endpoint string `json:"endpoint"`
	Status   string `json:"status"`
	KeyID    string `json:"key_id"`
	Total    int64  `json:"total"`
	Done     int64  `json:"done"`
	// Failed counts the items refused, canceled or expired.
	Failed     int64  `json:"failed"`
	CreateTime string `json:"create_time"`
	EndTime    string `json:"end_time,omitempty"`
}

// appBatchesShown bounds the Mini App's list of batches.
const appBatchesShown = 20

// apiBatches is the user's batches of the last webAppDays days, newest first (at most
// appBatchesShown), with their request counts and the counts of all of them.
func (b *Bot) apiBatches(c *apiCall) (any, error) {
	got, err := b.gw.admin.ListProfileBatches(c.ctx, &adminv1.ListProfileBatchesRequest{Id: c.profile.GetId(),
		StartTime: windowStart(time.Now()), PageSize: appBatchesShown})
	if err != nil {
		return nil, err
	}
	list := make([]appBatch, 0, len(got.GetBatches()))
	for _, x := range got.GetBatches() {
		list = append(list, appBatch{ID: x.GetId(), API: x.GetApi(), Endpoint: x.GetEndpoint(), Status: x.GetStatus(), KeyID: x.GetKeyId(),
			Total: x.GetTotal(), Done: x.GetCompleted(), Failed: x.GetFailed() + x.GetCanceled() + x.GetExpired(),
			CreateTime: timeText(x.GetCreateTime()), EndTime: timeText(x.GetEndTime())})
	}
	t := got.GetTotals()
	return map[string]any{"batches": list, "days": webAppDays, "count": t.GetBatches(), "running": t.GetRunning(),
		"total": t.GetTotal(), "done": t.GetCompleted(), "failed": t.GetFailed() + t.GetCanceled() + t.GetExpired()}, nil
}
