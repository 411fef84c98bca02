package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tidwall/gjson"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// Batches (contract.md "Files and batches"): created from a validated input (an OpenAI JSONL
// file or an Anthropic request list) in one transaction, shown in either provider's shape.
// The items run in batchrun.go.

// Limits of a batch's input.
const (
	maxOpenAIItems    = 50000
	maxAnthropicItems = 100000
	// maxBatchLine bounds one JSONL line: the generation routes' body limit.
	maxBatchLine = 32 << 20
	// maxLineErrors bounds the errors a failed batch lists.
	maxLineErrors = 20
	// DefaultBatchWindow is what completion_window "24h" means unless a test shortens it.
	DefaultBatchWindow = 24 * time.Hour
	maxBatchesLimit    = 100
	maxMsgBatchesLimit = 1000
)

// BatchEndpoints are the endpoints a batch may run, with their families.
var BatchEndpoints = map[string]string{
	"/v1/chat/completions": "chat.completions",
	"/v1/responses":        "responses",
	"/v1/completions":      "completions",
	"/v1/embeddings":       "embeddings",
	"/v1/messages":         "messages",
}

// API names of store.Batch.API.
const (
	apiOpenAI    = "openai"
	apiAnthropic = "anthropic"
)

func (s *CoreServer) batchWindow() time.Duration {
	if s.Deps != nil && s.Deps.Batches.Window > 0 {
		return s.Deps.Batches.Window
	}
	return DefaultBatchWindow
}

// batchAPI is the family and store name of a call's API.
func batchAPI(api corev1.BatchAPI) (family, name string) {
	if api == corev1.BatchAPI_BATCH_API_ANTHROPIC {
		return MessageBatchesFamily, apiAnthropic
	}
	return BatchesFamily, apiOpenAI
}

func batchError(ctx context.Context, what, id string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return apierror.New(apierror.NotFound, "no batch with id %q", id)
	}
	return unavailable(ctx, what, err)
}

// lineError is one entry of a failed batch's errors (OpenAI's BatchError).
type lineError struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	Line    *int    `json:"line"`
}

// errInvalidInput ends a create whose input has bad lines; the errors are the collector's.
var errInvalidInput = errors.New("the batch input is invalid")

// CreateBatch implements the RPC.
func (s *CoreServer) CreateBatch(ctx context.Context, req *corev1.CreateBatchRequest) (*corev1.BatchAPIJSON, error) {
	family, _ := batchAPI(req.GetApi())
	snap, k, err := s.familyCaller(ctx, family)
	if err != nil {
		return nil, err
	}
	if req.GetApi() == corev1.BatchAPI_BATCH_API_ANTHROPIC {
		return s.createMessageBatch(ctx, k, req)
	}
	return s.createOpenAIBatch(ctx, snap, k, req)
}

func invalidParam(param, format string, args ...any) *apierror.Error {
	e := apierror.New(apierror.InvalidRequest, format, args...)
	e.Param = param
	return e
}

func (s *CoreServer) createOpenAIBatch(ctx context.Context, snap *snapshot.Snapshot, k *snapshot.Key, req *corev1.CreateBatchRequest) (*corev1.BatchAPIJSON, error) {
	body := req.GetBody()
	if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() {
		return nil, apierror.New(apierror.InvalidRequest, "the request body is not a JSON object")
	}
	in, endpoint, window := gjson.GetBytes(body, "input_file_id"), gjson.GetBytes(body, "endpoint"), gjson.GetBytes(body, "completion_window")
	if in.Type != gjson.String || in.String() == "" {
		return nil, invalidParam("input_file_id", "input_file_id is required")
	}
	family, ok := BatchEndpoints[endpoint.String()]
	if endpoint.Type != gjson.String || !ok {
		return nil, invalidParam("endpoint", "endpoint must be one of /v1/chat/completions, /v1/responses, /v1/completions, /v1/embeddings, /v1/messages")
	}
	if window.String() != "24h" {
		return nil, invalidParam("completion_window", "completion_window must be \"24h\"")
	}
	var metadata json.RawMessage
	if md := gjson.GetBytes(body, "metadata"); md.Exists() && md.Type != gjson.Null {
		if !md.IsObject() {
			return nil, invalidParam("metadata", "metadata must be an object of strings")
		}
		n, bad := 0, false
		md.ForEach(func(key, v gjson.Result) bool {
			n++
			bad = bad || v.Type != gjson.String || len(key.String()) > 64 || len(v.String()) > 512
			return !bad
		})
		if bad || n > 16 {
			return nil, invalidParam("metadata", "metadata holds at most 16 pairs of strings, keys up to 64 and values up to 512 characters")
		}
		metadata = json.RawMessage(md.Raw)
	}
	dbCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	file, err := s.Store.GetBatchFile(dbCtx, k.ProfileID, in.String())
	if err != nil {
		return nil, fileError(ctx, "read input file", in.String(), err)
	}
	if file.Purpose != purposeBatch {
		return nil, invalidParam("input_file_id", "the file %q was not uploaded with purpose batch", file.ID)
	}
	now := s.batchConfig().Now()
	b := &store.Batch{ID: store.NewObjectID("batch_"), API: apiOpenAI, Endpoint: endpoint.String(), InputFileID: file.ID,
		CompletionWindow: "24h", ProfileID: k.ProfileID, KeyID: k.ID, Metadata: metadata, ExpiresAt: now.Add(s.batchWindow())}
	v := &lineValidator{snap: snap, key: k, family: family, endpoint: endpoint.String(), seen: map[string]bool{},
		lines: bufio.NewReaderSize(&chunkReader{ctx: dbCtx, st: s.Store, id: file.ID}, 64<<10)}
	out, err := s.Store.CreateBatch(dbCtx, b, v.next)
	switch {
	case errors.Is(err, errInvalidInput):
		errs, _ := json.Marshal(map[string]any{"object": "list", "data": v.errs})
		b.Errors = errs
		out, err = s.Store.InsertFailedBatch(dbCtx, b)
		if err != nil {
			return nil, unavailable(ctx, "create batch", err)
		}
	case err != nil:
		return nil, unavailable(ctx, "create batch", err)
	}
	return jsonAnswer(openAIBatch(out))
}

// createMessageBatch makes an Anthropic message batch: the request list's shape is checked
// now (a bad one is refused whole); each request's params are checked when it runs, and a
// refusal is its errored result, as Anthropic does.
func (s *CoreServer) createMessageBatch(ctx context.Context, k *snapshot.Key, req *corev1.CreateBatchRequest) (*corev1.BatchAPIJSON, error) {
	body := req.GetBody()
	if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() {
		return nil, apierror.New(apierror.InvalidRequest, "the request body is not a JSON object")
	}
	reqs := gjson.GetBytes(body, "requests")
	if !reqs.IsArray() {
		return nil, invalidParam("requests", "requests must be an array")
	}
	list := reqs.Array()
	switch {
	case len(list) == 0:
		return nil, invalidParam("requests", "requests must not be empty")
	case len(list) > maxAnthropicItems:
		return nil, invalidParam("requests", "a batch holds at most %d requests", maxAnthropicItems)
	}
	seen := make(map[string]bool, len(list))
	items := make([]*store.BatchItem, 0, len(list))
	for i, r := range list {
		id, params := r.Get("custom_id"), r.Get("params")
		switch {
		case id.Type != gjson.String || !validCustomID(id.String()):
			return nil, invalidParam(fmt.Sprintf("requests.%d.custom_id", i), "custom_id must be 1 to 64 letters, digits, - or _")
		case seen[id.String()]:
			return nil, invalidParam(fmt.Sprintf("requests.%d.custom_id", i), "the custom_id %q is used twice", id.String())
		case !params.IsObject():
			return nil, invalidParam(fmt.Sprintf("requests.%d.params", i), "params must be an object")
		case params.Get("stream").Type == gjson.True:
			return nil, invalidParam(fmt.Sprintf("requests.%d.params.stream", i), "a batch request cannot stream")
		}
		seen[id.String()] = true
		items = append(items, &store.BatchItem{CustomID: id.String(), Model: params.Get("model").String(), Body: []byte(params.Raw)})
	}
	now := s.batchConfig().Now()
	b := &store.Batch{ID: store.NewObjectID("msgbatch_"), API: apiAnthropic, Endpoint: "/v1/messages", CompletionWindow: "24h",
		ProfileID: k.ProfileID, KeyID: k.ID, ExpiresAt: now.Add(s.batchWindow())}
	i := 0
	dbCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := s.Store.CreateBatch(dbCtx, b, func() (*store.BatchItem, bool, error) {
		if i == len(items) {
			return nil, false, nil
		}
		i++
		return items[i-1], true, nil
	})
	if err != nil {
		return nil, unavailable(ctx, "create batch", err)
	}
	return jsonAnswer(s.messageBatch(ctx, out, req.GetBaseUrl()))
}

// GetBatch implements the RPC.
func (s *CoreServer) GetBatch(ctx context.Context, req *corev1.GetBatchRequest) (*corev1.BatchAPIJSON, error) {
	family, api := batchAPI(req.GetApi())
	_, k, err := s.familyCaller(ctx, family)
	if err != nil {
		return nil, err
	}
	dbCtx, cancel := s.storedTimeout(ctx)
	defer cancel()
	b, err := s.Store.GetBatch(dbCtx, k.ProfileID, api, req.GetId())
	if err != nil {
		return nil, batchError(ctx, "read batch", req.GetId(), err)
	}
	return s.renderBatch(ctx, b, req.GetBaseUrl())
}

func (s *CoreServer) renderBatch(ctx context.Context, b *store.Batch, base string) (*corev1.BatchAPIJSON, error) {
	if b.API == apiAnthropic {
		return jsonAnswer(s.messageBatch(ctx, b, base))
	}
	return jsonAnswer(openAIBatch(b))
}

// ListBatches implements the RPC.
func (s *CoreServer) ListBatches(ctx context.Context, req *corev1.ListBatchesRequest) (*corev1.BatchAPIJSON, error) {
	family, api := batchAPI(req.GetApi())
	_, k, err := s.familyCaller(ctx, family)
	if err != nil {
		return nil, err
	}
	limit, most := int(req.GetLimit()), maxBatchesLimit
	if api == apiAnthropic {
		most = maxMsgBatchesLimit
	}
	switch {
	case limit == 0:
		limit = 20
	case limit < 0 || limit > most:
		return nil, apierror.New(apierror.InvalidRequest, "limit must be between 1 and %d", most)
	}
	dbCtx, cancel := s.storedTimeout(ctx)
	defer cancel()
	list, err := s.Store.ListBatches(dbCtx, k.ProfileID, api, req.GetAfter(), req.GetBefore(), limit+1)
	if err != nil {
		return nil, unavailable(ctx, "list batches", err)
	}
	more := len(list) > limit
	if more {
		if req.GetBefore() != "" {
			list = list[1:]
		} else {
			list = list[:limit]
		}
	}
	data, ids := make([]any, 0, len(list)), make([]string, 0, len(list))
	for _, b := range list {
		ids = append(ids, b.ID)
		if api == apiAnthropic {
			data = append(data, s.messageBatch(ctx, b, req.GetBaseUrl()))
		} else {
			data = append(data, openAIBatch(b))
		}
	}
	page := pageOf(data, ids, more)
	if api == apiAnthropic {
		// Anthropic's page has no object field.
		return jsonAnswer(map[string]any{"data": page.Data, "has_more": page.HasMore, "first_id": page.FirstID, "last_id": page.LastID})
	}
	return jsonAnswer(page)
}

// CancelBatch implements the RPC.
func (s *CoreServer) CancelBatch(ctx context.Context, req *corev1.CancelBatchRequest) (*corev1.BatchAPIJSON, error) {
	family, api := batchAPI(req.GetApi())
	_, k, err := s.familyCaller(ctx, family)
	if err != nil {
		return nil, err
	}
	dbCtx, cancel := s.storedTimeout(ctx)
	defer cancel()
	b, err := s.Store.CancelBatch(dbCtx, k.ProfileID, api, req.GetId())
	if err != nil {
		return nil, batchError(ctx, "cancel batch", req.GetId(), err)
	}
	return s.renderBatch(ctx, b, req.GetBaseUrl())
}

// DeleteBatch implements the RPC (Anthropic's).
func (s *CoreServer) DeleteBatch(ctx context.Context, req *corev1.DeleteBatchRequest) (*corev1.BatchAPIJSON, error) {
	family, api := batchAPI(req.GetApi())
	_, k, err := s.familyCaller(ctx, family)
	if err != nil {
		return nil, err
	}
	dbCtx, cancel := s.storedTimeout(ctx)
	defer cancel()
	switch err := s.Store.DeleteBatch(dbCtx, k.ProfileID, api, req.GetId()); {
	case errors.Is(err, store.ErrBatchNotEnded):
		return nil, apierror.New(apierror.InvalidRequest, "batch %s is still processing: cancel it first", req.GetId())
	case err != nil:
		return nil, batchError(ctx, "delete batch", req.GetId(), err)
	}
	return jsonAnswer(map[string]string{"id": req.GetId(), "type": "message_batch_deleted"})
}

// GetBatchResults implements the RPC: Anthropic's results JSONL, once the batch has ended.
func (s *CoreServer) GetBatchResults(req *corev1.GetBatchResultsRequest, stream corev1.CoreService_GetBatchResultsServer) error {
	ctx := stream.Context()
	family, api := batchAPI(req.GetApi())
	_, k, err := s.familyCaller(ctx, family)
	if err != nil {
		return err
	}
	b, err := s.Store.GetBatch(ctx, k.ProfileID, api, req.GetId())
	if err != nil {
		return batchError(ctx, "read batch", req.GetId(), err)
	}
	if !b.Ended() {
		return apierror.New(apierror.InvalidRequest, "batch %s is still processing: its results come when it has ended", b.ID)
	}
	return s.streamResults(ctx, b.ID, "", stream.Send)
}

// streamResults sends the result lines of a batch's finished items, about 64 KiB a message:
// OpenAI's output or error file (kind "output" or "error"), or Anthropic's results (kind "").
func (s *CoreServer) streamResults(ctx context.Context, batchID, kind string, send func(*corev1.BatchFileChunk) error) error {
	var buf []byte
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		err := send(&corev1.BatchFileChunk{Data: buf})
		buf = nil
		return err
	}
	err := s.Store.BatchResults(ctx, batchID, kind, func(it *store.ResultItem) error {
		var line []byte
		if kind == "" {
			line = anthropicLine(it)
		} else {
			line = openAILine(batchID, it)
		}
		buf = append(append(buf, line...), '\n')
		if len(buf) >= 64<<10 {
			return flush()
		}
		return nil
	})
	if err != nil {
		return unavailable(ctx, "read batch results", err)
	}
	return flush()
}
