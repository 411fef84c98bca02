package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tidwall/gjson"

	"modelgateway/core/store"
)

// The providers' shapes of batches and result lines (protocols/files-batches.md).

// openAIBatchObject is OpenAI's Batch.
type openAIBatchObject struct {
	ID               string          `json:"id"`
	Object           string          `json:"object"`
	Endpoint         string          `json:"endpoint"`
	Errors           json.RawMessage `json:"errors"`
	InputFileID      string          `json:"input_file_id"`
	CompletionWindow string          `json:"completion_window"`
	Status           string          `json:"status"`
	OutputFileID     *string         `json:"output_file_id"`
	ErrorFileID      *string         `json:"error_file_id"`
	CreatedAt        int64           `json:"created_at"`
	InProgressAt     *int64          `json:"in_progress_at"`
	ExpiresAt        *int64          `json:"expires_at"`
	FinalizingAt     *int64          `json:"finalizing_at"`
	CompletedAt      *int64          `json:"completed_at"`
	FailedAt         *int64          `json:"failed_at"`
	ExpiredAt        *int64          `json:"expired_at"`
	CancellingAt     *int64          `json:"cancelling_at"`
	CancelledAt      *int64          `json:"cancelled_at"`
	RequestCounts    map[string]int  `json:"request_counts"`
	Metadata         json.RawMessage `json:"metadata"`
}

func unixOf(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	u := t.Unix()
	return &u
}

func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func rawOrNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

func openAIBatch(b *store.Batch) openAIBatchObject {
	exp := b.ExpiresAt.Unix()
	return openAIBatchObject{
		ID: b.ID, Object: "batch", Endpoint: b.Endpoint, Errors: rawOrNull(b.Errors), InputFileID: b.InputFileID,
		CompletionWindow: b.CompletionWindow, Status: b.Status, OutputFileID: strOrNil(b.OutputFileID), ErrorFileID: strOrNil(b.ErrorFileID),
		CreatedAt: b.CreatedAt.Unix(), InProgressAt: unixOf(b.InProgressAt), ExpiresAt: &exp, FinalizingAt: unixOf(b.FinalizingAt),
		CompletedAt: unixOf(b.CompletedAt), FailedAt: unixOf(b.FailedAt), ExpiredAt: unixOf(b.ExpiredAt),
		CancellingAt: unixOf(b.CancellingAt), CancelledAt: unixOf(b.CancelledAt),
		// Items canceled or expired count as failed: they have no response, and the counts
		// add up to the total once the batch has ended.
		RequestCounts: map[string]int{"total": b.Total, "completed": b.Completed, "failed": b.Failed + b.Canceled + b.Expired},
		Metadata:      rawOrNull(b.Metadata),
	}
}

// messageBatchObject is Anthropic's MessageBatch.
type messageBatchObject struct {
	ID                string         `json:"id"`
	Type              string         `json:"type"`
	ProcessingStatus  string         `json:"processing_status"`
	RequestCounts     map[string]int `json:"request_counts"`
	EndedAt           *string        `json:"ended_at"`
	CreatedAt         string         `json:"created_at"`
	ExpiresAt         string         `json:"expires_at"`
	ArchivedAt        *string        `json:"archived_at"`
	CancelInitiatedAt *string        `json:"cancel_initiated_at"`
	ResultsURL        *string        `json:"results_url"`
}

func rfc3339(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

func (s *CoreServer) messageBatch(ctx context.Context, b *store.Batch, base string) messageBatchObject {
	o := messageBatchObject{ID: b.ID, Type: "message_batch", ProcessingStatus: "in_progress",
		CreatedAt: *rfc3339(&b.CreatedAt), ExpiresAt: *rfc3339(&b.ExpiresAt), CancelInitiatedAt: rfc3339(b.CancellingAt),
		RequestCounts: map[string]int{"processing": b.Total, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}}
	switch {
	case b.Ended():
		o.ProcessingStatus = "ended"
		for _, t := range []*time.Time{b.CompletedAt, b.CancelledAt, b.ExpiredAt, b.FailedAt} {
			if t != nil {
				o.EndedAt = rfc3339(t)
			}
		}
		url := base + "/v1/messages/batches/" + b.ID + "/results"
		o.ResultsURL = &url
		// Anthropic's counts move only when the batch has ended: an upstream answer that is
		// not a success is errored there.
		non2xx, err := s.Store.CountNon2xx(ctx, b.ID)
		if err != nil {
			non2xx = 0
		}
		o.RequestCounts = map[string]int{"processing": 0, "succeeded": b.Completed - non2xx, "errored": b.Failed + non2xx,
			"canceled": b.Canceled, "expired": b.Expired}
	case b.Status == store.BatchCancelling:
		o.ProcessingStatus = "canceling"
	}
	return o
}

// errorBody is the gateway's error object of a refused item.
type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// itemCodes are the codes of items that did not run.
var itemCodes = map[string]errorBody{
	store.OutcomeCanceled: {"batch_cancelled", "the batch was cancelled before this request ran"},
	store.OutcomeExpired:  {"batch_expired", "the request did not run within the batch's completion window"},
}

// openAILine is one line of an OpenAI output or error file.
func openAILine(batchID string, it *store.ResultItem) []byte {
	type response struct {
		StatusCode int             `json:"status_code"`
		RequestID  string          `json:"request_id"`
		Body       json.RawMessage `json:"body"`
	}
	line := struct {
		ID       string     `json:"id"`
		CustomID string     `json:"custom_id"`
		Response *response  `json:"response"`
		Error    *errorBody `json:"error"`
	}{ID: fmt.Sprintf("batch_req_%s_%d", batchID, it.Idx), CustomID: it.CustomID}
	switch it.Outcome {
	case store.OutcomeResponse:
		line.Response = &response{StatusCode: it.StatusCode, RequestID: it.RequestID, Body: jsonOrString(it.Response)}
	case store.OutcomeError:
		line.Error = &errorBody{Code: it.ErrorCode, Message: it.ErrorText}
	default:
		e := itemCodes[it.Outcome]
		line.Error = &e
	}
	b, _ := json.Marshal(line)
	return b
}

// jsonOrString is a response body as JSON: itself when it is JSON, else a string of it.
func jsonOrString(b []byte) json.RawMessage {
	if gjson.ValidBytes(b) && len(b) > 0 {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}

// anthropicLine is one line of Anthropic's results.
func anthropicLine(it *store.ResultItem) []byte {
	var result any
	switch {
	case it.Outcome == store.OutcomeResponse && it.StatusCode >= 200 && it.StatusCode < 300:
		result = map[string]any{"type": "succeeded", "message": jsonOrString(it.Response)}
	case it.Outcome == store.OutcomeResponse:
		body := jsonOrString(it.Response)
		if gjson.GetBytes(body, "type").String() != "error" {
			body, _ = json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": "api_error", "message": string(it.Response)}})
		}
		result = map[string]any{"type": "errored", "error": body}
	case it.Outcome == store.OutcomeError:
		var rid *string
		if it.RequestID != "" {
			rid = &it.RequestID
		}
		result = map[string]any{"type": "errored", "error": map[string]any{"type": "error",
			"error": map[string]string{"type": it.ErrorCode, "message": it.ErrorText}, "request_id": rid}}
	default:
		result = map[string]string{"type": it.Outcome}
	}
	b, _ := json.Marshal(map[string]any{"custom_id": it.CustomID, "result": result})
	return b
}
