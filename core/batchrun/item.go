package batchrun

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/tidwall/gjson"

	"modelgateway/core/rpc"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// runItem runs one attempt of an item; its result is recorded by the next round.
func (r *Runner) runItem(ctx context.Context, it *store.ClaimedItem) result {
	var res *store.ItemResult
	outcome := ""
	if it.PreviousRequestID != "" {
		// An earlier attempt's replica died. If that attempt's charge committed, running the
		// item again would charge it twice: it ends with what is known of it instead.
		charged, err := r.Store.RequestCharged(ctx, it.ProfileID, it.PreviousRequestID)
		if err != nil {
			r.Log.Warn("checking a batch item's earlier attempt failed", "batch", it.BatchID, "item", it.Idx, "err", err)
			return result{item: store.FinishedItem{Item: it}, abandon: true} // the claim lapses and the item is tried again
		}
		if charged {
			res = &store.ItemResult{Outcome: store.OutcomeError, ErrorCode: "result_lost",
				ErrorText: "the request ran and was charged (request id " + it.PreviousRequestID + "), but the replica running it stopped before recording its answer"}
			outcome = OutcomeLost
		}
	}
	if res == nil && it.Stopped != "" {
		// Its batch was cancelled or ran out of time meanwhile, and its earlier attempt
		// charged nothing: it ends as its unstarted siblings did.
		res, outcome = &store.ItemResult{Outcome: it.Stopped}, it.Stopped
	}
	if res == nil {
		var retry bool
		res, outcome, retry = r.serve(ctx, it)
		if retry {
			sleep(ctx, time.Second) // a key limit: the item comes back after a pause
			if err := r.Store.ReleaseBatchItem(ctx, it); err != nil {
				r.Log.Warn("releasing a batch item failed", "err", err)
			}
			return result{item: store.FinishedItem{Item: it}, abandon: true}
		}
	}
	return result{item: store.FinishedItem{Item: it, Result: res}, outcome: outcome}
}

// path is the route an item runs on.
func path(it *store.ClaimedItem) string {
	if it.API == "anthropic" {
		return "/v1/messages"
	}
	return it.Endpoint
}

// serve runs the item through the front. retry: the gateway asked it to come back later
// (rate_limited), and the item goes back unstarted.
func (r *Runner) serve(ctx context.Context, it *store.ClaimedItem) (res *store.ItemResult, outcome string, retry bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, path(it), bytes.NewReader(it.Body))
	if err != nil {
		return &store.ItemResult{Outcome: store.OutcomeError, ErrorCode: apierror.Internal, ErrorText: err.Error()}, OutcomeRefused, false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+rpc.BatchCredential(it.KeyID))
	if it.API == "anthropic" {
		req.Header.Set("Anthropic-Version", "2023-06-01")
	}
	req.RemoteAddr = "127.0.0.1:0"
	rec := httptest.NewRecorder()
	r.Serve(rec, req, it.RequestID)
	status, body := rec.Code, rec.Body.Bytes()
	if status >= 200 && status < 300 {
		return &store.ItemResult{Outcome: store.OutcomeResponse, StatusCode: status, Response: body}, OutcomeSucceeded, false
	}
	code := gjson.GetBytes(body, "error.code").String()
	if code == "" {
		code = gjson.GetBytes(body, "error.type").String()
	}
	switch code {
	case apierror.RateLimited:
		return nil, "", true
	case apierror.UpstreamError:
		// The upstream answered: its answer is the item's response, whatever its status.
		return &store.ItemResult{Outcome: store.OutcomeResponse, StatusCode: status, Response: body}, OutcomeAnswered, false
	}
	if code == "" {
		code = apierror.Internal
	}
	return &store.ItemResult{Outcome: store.OutcomeError, ErrorCode: code, ErrorText: gjson.GetBytes(body, "error.message").String()}, OutcomeRefused, false
}
