package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/tidwall/gjson"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// Stored responses (contract.md "Stored responses"): the rows are core/store's; the front
// expands previous_response_id before decoding, so that every upstream kind, the hold and
// the charge see the whole conversation as the request's own input.

// DefaultResponsesTTL is GATEWAY_RESPONSES_TTL's default: OpenAI keeps responses 30 days.
const DefaultResponsesTTL = 720 * time.Hour

// responsesFamily is the endpoint family every stored-response call needs.
const responsesFamily = "responses"

// storedDBTimeout bounds one stored-response statement when no ledger sets the timeout.
const storedDBTimeout = 5 * time.Second

// storedCaller is the key of a stored-response call; it must have the responses family.
func (s *CoreServer) storedCaller(ctx context.Context) (*snapshot.Key, error) {
	_, k, err := s.caller(ctx)
	if err != nil {
		return nil, err
	}
	if !k.AllowsEndpoint(responsesFamily) {
		return nil, apierror.New(apierror.EndpointNotAllowed, "this API key may not use the %s endpoint", responsesFamily)
	}
	return k, nil
}

func (s *CoreServer) storedTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	d := storedDBTimeout
	if s.Deps != nil && s.Deps.Ledger != nil && s.Deps.Ledger.DBTimeout > 0 {
		d = s.Deps.Ledger.DBTimeout
	}
	return context.WithTimeout(ctx, d)
}

func (s *CoreServer) responsesTTL() time.Duration {
	if s.Deps != nil && s.Deps.ResponsesTTL > 0 {
		return s.Deps.ResponsesTTL
	}
	return DefaultResponsesTTL
}

// storedError turns a store failure into what the client is told.
func storedError(ctx context.Context, what, id string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return apierror.New(apierror.NotFound, "no stored response with id %q", id)
	}
	return unavailable(ctx, what, err)
}

// GetStoredResponseChain implements the RPC: the items a previous_response_id stands for.
// Every refusal is invalid_request_error: the id is a parameter of the request being made.
func (s *CoreServer) GetStoredResponseChain(ctx context.Context, req *corev1.GetStoredResponseChainRequest) (*corev1.StoredResponseChain, error) {
	k, err := s.storedCaller(ctx)
	if err != nil {
		return nil, err
	}
	dbCtx, cancel := s.storedTimeout(ctx)
	defer cancel()
	links, err := s.Store.StoredResponseChain(dbCtx, k.ProfileID, req.GetId())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, apierror.New(apierror.InvalidRequest,
			"previous response with id %q not found: it is unknown, expired, deleted, or was stored with store=false", req.GetId())
	case errors.Is(err, store.ErrChainBroken):
		return nil, apierror.New(apierror.InvalidRequest,
			"previous response with id %q cannot be continued: an earlier response of its conversation was deleted", req.GetId())
	case errors.Is(err, store.ErrChainTooLarge):
		return nil, apierror.New(apierror.PayloadTooLarge,
			"previous response with id %q cannot be continued: its conversation is above %d MiB", req.GetId(), store.MaxChainBytes>>20)
	case err != nil:
		return nil, unavailable(ctx, "read stored response chain", err)
	}
	return &corev1.StoredResponseChain{Items: chainItems(links), Responses: int32(len(links))}, nil
}

// chainItems joins the links' arrays into one: each response's input items, then its output.
func chainItems(links []store.ChainLink) []byte {
	n := 2
	for _, l := range links {
		n += len(l.InputItems) + len(l.Output)
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	add := func(arr []byte) {
		inner := bytes.TrimSpace(arr)
		if len(inner) < 2 {
			return
		}
		inner = bytes.TrimSpace(inner[1 : len(inner)-1])
		if len(inner) == 0 {
			return
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, inner...)
	}
	for _, l := range links {
		add(l.InputItems)
		add(l.Output)
	}
	return append(out, ']')
}

// PutStoredResponse implements the RPC.
func (s *CoreServer) PutStoredResponse(ctx context.Context, req *corev1.PutStoredResponseRequest) (*corev1.PutStoredResponseResponse, error) {
	k, err := s.storedCaller(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetId() == "" || !json.Valid(req.GetResponse()) || !gjson.ValidBytes(req.GetInputItems()) ||
		!bytes.HasPrefix(bytes.TrimSpace(req.GetInputItems()), []byte("[")) {
		return nil, apierror.New(apierror.InvalidRequest, "a stored response needs an id, a response object and an array of input items")
	}
	dbCtx, cancel := s.storedTimeout(ctx)
	defer cancel()
	err = s.Store.PutStoredResponse(dbCtx, &store.StoredResponse{
		ID: req.GetId(), ProfileID: k.ProfileID, PreviousID: req.GetPreviousResponseId(),
		Response: req.GetResponse(), InputItems: req.GetInputItems(), ExpiresAt: time.Now().Add(s.responsesTTL()),
	})
	if err != nil {
		return nil, unavailable(ctx, "store response", err)
	}
	return &corev1.PutStoredResponseResponse{}, nil
}

// GetStoredResponse implements the RPC (GET /v1/responses/{id}).
func (s *CoreServer) GetStoredResponse(ctx context.Context, req *corev1.GetStoredResponseRequest) (*corev1.StoredResponseJSON, error) {
	k, err := s.storedCaller(ctx)
	if err != nil {
		return nil, err
	}
	dbCtx, cancel := s.storedTimeout(ctx)
	defer cancel()
	resp, _, err := s.Store.GetStoredResponse(dbCtx, k.ProfileID, req.GetId())
	if err != nil {
		return nil, storedError(ctx, "read stored response", req.GetId(), err)
	}
	return &corev1.StoredResponseJSON{Json: resp}, nil
}

// Input item pages (as OpenAI's): limit 1..100, default 20; newest first unless asc.
const (
	defaultItemsLimit = 20
	maxItemsLimit     = 100
)

// ListStoredResponseInputItems implements the RPC (GET /v1/responses/{id}/input_items).
func (s *CoreServer) ListStoredResponseInputItems(ctx context.Context, req *corev1.ListStoredResponseInputItemsRequest) (*corev1.StoredResponseJSON, error) {
	k, err := s.storedCaller(ctx)
	if err != nil {
		return nil, err
	}
	limit := int(req.GetLimit())
	switch {
	case limit == 0:
		limit = defaultItemsLimit
	case limit < 0 || limit > maxItemsLimit:
		return nil, apierror.New(apierror.InvalidRequest, "limit must be between 1 and %d", maxItemsLimit)
	}
	desc := true
	switch req.GetOrder() {
	case "", "desc":
	case "asc":
		desc = false
	default:
		return nil, apierror.New(apierror.InvalidRequest, "order must be asc or desc")
	}
	dbCtx, cancel := s.storedTimeout(ctx)
	defer cancel()
	_, in, err := s.Store.GetStoredResponse(dbCtx, k.ProfileID, req.GetId())
	if err != nil {
		return nil, storedError(ctx, "read stored response", req.GetId(), err)
	}
	body, apiErr := itemPage(in, req.GetAfter(), limit, desc)
	if apiErr != nil {
		return nil, apiErr
	}
	return &corev1.StoredResponseJSON{Json: body}, nil
}

// itemList is OpenAI's ResponseItemList.
type itemList struct {
	Object  string            `json:"object"`
	Data    []json.RawMessage `json:"data"`
	FirstID *string           `json:"first_id"`
	LastID  *string           `json:"last_id"`
	HasMore bool              `json:"has_more"`
}

func itemPage(in []byte, after string, limit int, desc bool) ([]byte, *apierror.Error) {
	var items []json.RawMessage
	if err := json.Unmarshal(in, &items); err != nil {
		slog.Error("a stored response's input items are not an array", "err", err)
		return nil, apierror.New(apierror.Internal, "the stored input items cannot be read")
	}
	if desc {
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	}
	start := 0
	if after != "" {
		start = -1
		for i, it := range items {
			if gjson.GetBytes(it, "id").String() == after {
				start = i + 1
				break
			}
		}
		if start < 0 {
			return nil, apierror.New(apierror.InvalidRequest, "after: no input item with id %q in this response", after)
		}
	}
	end := min(start+limit, len(items))
	page := itemList{Object: "list", Data: items[start:end], HasMore: end < len(items)}
	if len(page.Data) > 0 {
		first, last := gjson.GetBytes(page.Data[0], "id").String(), gjson.GetBytes(page.Data[len(page.Data)-1], "id").String()
		page.FirstID, page.LastID = &first, &last
	}
	body, err := json.Marshal(page)
	if err != nil {
		return nil, apierror.New(apierror.Internal, "the input items cannot be written: %v", err)
	}
	return body, nil
}

// DeleteStoredResponse implements the RPC (DELETE /v1/responses/{id}).
func (s *CoreServer) DeleteStoredResponse(ctx context.Context, req *corev1.DeleteStoredResponseRequest) (*corev1.StoredResponseJSON, error) {
	k, err := s.storedCaller(ctx)
	if err != nil {
		return nil, err
	}
	dbCtx, cancel := s.storedTimeout(ctx)
	defer cancel()
	if err := s.Store.DeleteStoredResponse(dbCtx, k.ProfileID, req.GetId()); err != nil {
		return nil, storedError(ctx, "delete stored response", req.GetId(), err)
	}
	body, _ := json.Marshal(map[string]any{"id": req.GetId(), "object": "response.deleted", "deleted": true})
	return &corev1.StoredResponseJSON{Json: body}, nil
}

// Purge of stored responses: every replica runs it; the statements are idempotent.
const (
	DefaultResponsesPurgeEvery = time.Minute
	responsesPurgeBatch        = 1000
	responsesPurgeRounds       = 100 // bounds one tick: 100k rows
)

// PurgeStoredResponses removes deleted and expired responses in batches every interval
// until ctx ends.
func PurgeStoredResponses(ctx context.Context, st *store.Store, every time.Duration, log *slog.Logger) {
	if every <= 0 {
		every = DefaultResponsesPurgeEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for range responsesPurgeRounds {
			dbCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			n, err := st.PurgeStoredResponses(dbCtx, responsesPurgeBatch)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("purging stored responses failed", "err", err)
				}
				break
			}
			// A batch below the limit may still have freed parents whose last child it
			// removed; they go on the next round, and a round that removes nothing ends.
			if n == 0 {
				break
			}
		}
	}
}
