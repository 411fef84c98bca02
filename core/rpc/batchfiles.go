package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"time"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// Files (contract.md "Files and batches"): OpenAI's Files API for batch input, and the output
// and error files a batch makes. The bytes stream to and from storage chunk by chunk.

// Endpoint families of the files and batches routes.
const (
	FilesFamily          = "files"
	BatchesFamily        = "batches"
	MessageBatchesFamily = "messages.batches"
)

// Defaults of the files limits.
const (
	// DefaultFilesMaxBytes is GATEWAY_FILES_MAX_BYTES' default.
	DefaultFilesMaxBytes = 100 << 20
	// DefaultFilesQuotaBytes is GATEWAY_FILES_QUOTA_BYTES' default: the live files of one
	// profile, uploads and batch results together.
	DefaultFilesQuotaBytes = 10 << 30
	// FilesTTL is how long batch files and batch results are kept.
	FilesTTL = 30 * 24 * time.Hour
)

// purposeBatch is the one upload purpose the gateway has a use for; batch_output marks the
// files a batch makes.
const (
	purposeBatch       = "batch"
	purposeBatchOutput = "batch_output"
)

// Pages of GET /v1/files (as OpenAI's).
const maxFilesLimit = 10000

// BatchConfig is the files and batches part of Deps.
type BatchConfig struct {
	// FilesMaxBytes bounds one upload; DefaultFilesMaxBytes when 0.
	FilesMaxBytes int64
	// FilesQuotaBytes bounds a profile's live files; DefaultFilesQuotaBytes when 0.
	FilesQuotaBytes int64
	// Window is what completion_window "24h" gives a batch (GATEWAY_BATCH_WINDOW, for
	// tests); DefaultBatchWindow when 0.
	Window time.Duration
	// Now is the clock of batch windows; time.Now when nil (tests move it).
	Now func() time.Time
}

func (s *CoreServer) batchConfig() BatchConfig {
	var c BatchConfig
	if s.Deps != nil {
		c = s.Deps.Batches
	}
	if c.FilesMaxBytes <= 0 {
		c.FilesMaxBytes = DefaultFilesMaxBytes
	}
	if c.FilesQuotaBytes <= 0 {
		c.FilesQuotaBytes = DefaultFilesQuotaBytes
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// familyCaller is the key of a call that needs family.
func (s *CoreServer) familyCaller(ctx context.Context, family string) (*snapshot.Snapshot, *snapshot.Key, error) {
	snap, k, err := s.caller(ctx)
	if err != nil {
		return nil, nil, err
	}
	if !k.AllowsEndpoint(family) {
		return nil, nil, apierror.New(apierror.EndpointNotAllowed, "this API key may not use the %s endpoint", family)
	}
	return snap, k, nil
}

// fileObject is OpenAI's file object.
type fileObject struct {
	ID            string  `json:"id"`
	Object        string  `json:"object"`
	Bytes         int64   `json:"bytes"`
	CreatedAt     int64   `json:"created_at"`
	ExpiresAt     *int64  `json:"expires_at"`
	Filename      string  `json:"filename"`
	Purpose       string  `json:"purpose"`
	Status        string  `json:"status"`
	StatusDetails *string `json:"status_details"`
}

func renderFile(f *store.BatchFile) fileObject {
	o := fileObject{ID: f.ID, Object: "file", Bytes: f.Bytes, CreatedAt: f.CreatedAt.Unix(), Filename: f.Filename,
		Purpose: f.Purpose, Status: "processed"}
	if f.ExpiresAt != nil {
		e := f.ExpiresAt.Unix()
		o.ExpiresAt = &e
	}
	return o
}

func jsonAnswer(v any) (*corev1.BatchAPIJSON, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, apierror.New(apierror.Internal, "the answer cannot be written: %v", err)
	}
	return &corev1.BatchAPIJSON{Json: b}, nil
}

func fileError(ctx context.Context, what, id string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return apierror.New(apierror.NotFound, "no file with id %q", id)
	}
	return unavailable(ctx, what, err)
}

// UploadBatchFile implements the RPC: the bytes go to storage as they arrive, and the file
// exists only once the last message has come and the quota holds.
func (s *CoreServer) UploadBatchFile(stream corev1.CoreService_UploadBatchFileServer) error {
	ctx := stream.Context()
	_, k, err := s.familyCaller(ctx, FilesFamily)
	if err != nil {
		return err
	}
	cfg := s.batchConfig()
	first, err := stream.Recv()
	if err != nil {
		return apierror.New(apierror.InvalidRequest, "the upload ended before it began: %v", err)
	}
	filename := first.GetFilename()
	if filename == "" {
		filename = "upload"
	}
	up, err := s.Store.BeginFileUpload(ctx, store.NewFileID(), k.ProfileID, filename)
	if err != nil {
		return unavailable(ctx, "begin file upload", err)
	}
	defer up.Abort(context.WithoutCancel(ctx))
	msg := first
	for {
		if d := msg.GetData(); len(d) > 0 {
			if up.Bytes()+int64(len(d)) > cfg.FilesMaxBytes {
				return apierror.New(apierror.PayloadTooLarge, "the file is larger than %d bytes", cfg.FilesMaxBytes)
			}
			if err := up.Write(ctx, d); err != nil {
				return unavailable(ctx, "write file", err)
			}
		}
		if msg.GetFinish() {
			break
		}
		msg, err = stream.Recv()
		if errors.Is(err, io.EOF) {
			return apierror.New(apierror.InvalidRequest, "the upload ended before its last part")
		}
		if err != nil {
			return err
		}
	}
	purpose := msg.GetPurpose()
	switch {
	case purpose == "":
		e := apierror.New(apierror.InvalidRequest, "purpose is required")
		e.Param = "purpose"
		return e
	case purpose != purposeBatch:
		e := apierror.New(apierror.InvalidRequest, "purpose %q is not supported here: only %q", purpose, purposeBatch)
		e.Param = "purpose"
		return e
	}
	expires := cfg.Now().Add(FilesTTL)
	f, err := up.Finish(ctx, purpose, &expires, cfg.FilesQuotaBytes)
	if errors.Is(err, store.ErrFileQuota) {
		return apierror.New(apierror.PayloadTooLarge, "the file does not fit the %d bytes of file storage this profile may use; delete files first", cfg.FilesQuotaBytes)
	}
	if err != nil {
		return unavailable(ctx, "finish file upload", err)
	}
	out, err := jsonAnswer(renderFile(f))
	if err != nil {
		return err
	}
	return stream.SendAndClose(out)
}

// GetBatchFile implements the RPC.
func (s *CoreServer) GetBatchFile(ctx context.Context, req *corev1.GetBatchFileRequest) (*corev1.BatchAPIJSON, error) {
	_, k, err := s.familyCaller(ctx, FilesFamily)
	if err != nil {
		return nil, err
	}
	dbCtx, cancel := s.storedTimeout(ctx)
	defer cancel()
	f, err := s.Store.GetBatchFile(dbCtx, k.ProfileID, req.GetId())
	if err != nil {
		return nil, fileError(ctx, "read file", req.GetId(), err)
	}
	return jsonAnswer(renderFile(f))
}

// listObject is OpenAI's cursor page.
type listObject struct {
	Object  string  `json:"object"`
	Data    []any   `json:"data"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
	HasMore bool    `json:"has_more"`
}

func pageOf(data []any, ids []string, more bool) listObject {
	l := listObject{Object: "list", Data: data, HasMore: more}
	if l.Data == nil {
		l.Data = []any{}
	}
	if len(ids) > 0 {
		l.FirstID, l.LastID = &ids[0], &ids[len(ids)-1]
	}
	return l
}

// ListBatchFiles implements the RPC.
func (s *CoreServer) ListBatchFiles(ctx context.Context, req *corev1.ListBatchFilesRequest) (*corev1.BatchAPIJSON, error) {
	_, k, err := s.familyCaller(ctx, FilesFamily)
	if err != nil {
		return nil, err
	}
	limit := int(req.GetLimit())
	switch {
	case limit == 0:
		limit = maxFilesLimit
	case limit < 0 || limit > maxFilesLimit:
		return nil, apierror.New(apierror.InvalidRequest, "limit must be between 1 and %d", maxFilesLimit)
	}
	desc := true
	switch strings.ToLower(req.GetOrder()) {
	case "", "desc":
	case "asc":
		desc = false
	default:
		return nil, apierror.New(apierror.InvalidRequest, "order must be asc or desc")
	}
	dbCtx, cancel := s.storedTimeout(ctx)
	defer cancel()
	files, err := s.Store.ListBatchFiles(dbCtx, k.ProfileID, req.GetAfter(), limit+1, desc, req.GetPurpose())
	if err != nil {
		return nil, unavailable(ctx, "list files", err)
	}
	more := len(files) > limit
	if more {
		files = files[:limit]
	}
	data, ids := make([]any, 0, len(files)), make([]string, 0, len(files))
	for _, f := range files {
		data, ids = append(data, renderFile(f)), append(ids, f.ID)
	}
	return jsonAnswer(pageOf(data, ids, more))
}

// DeleteBatchFile implements the RPC.
func (s *CoreServer) DeleteBatchFile(ctx context.Context, req *corev1.DeleteBatchFileRequest) (*corev1.BatchAPIJSON, error) {
	_, k, err := s.familyCaller(ctx, FilesFamily)
	if err != nil {
		return nil, err
	}
	dbCtx, cancel := s.storedTimeout(ctx)
	defer cancel()
	if err := s.Store.DeleteBatchFile(dbCtx, k.ProfileID, req.GetId()); err != nil {
		return nil, fileError(ctx, "delete file", req.GetId(), err)
	}
	return jsonAnswer(map[string]any{"id": req.GetId(), "object": "file", "deleted": true})
}

// GetBatchFileContent implements the RPC: an uploaded file chunk by chunk; a batch's result
// file as the lines of its finished items.
func (s *CoreServer) GetBatchFileContent(req *corev1.GetBatchFileContentRequest, stream corev1.CoreService_GetBatchFileContentServer) error {
	ctx := stream.Context()
	_, k, err := s.familyCaller(ctx, FilesFamily)
	if err != nil {
		return err
	}
	f, err := s.Store.GetBatchFile(ctx, k.ProfileID, req.GetId())
	if err != nil {
		return fileError(ctx, "read file", req.GetId(), err)
	}
	if f.BatchID != "" {
		return s.streamResults(ctx, f.BatchID, f.ResultKind, stream.Send)
	}
	for seq := 0; ; seq++ {
		data, ok, err := s.Store.FileChunk(ctx, f.ID, seq)
		if err != nil {
			return unavailable(ctx, "read file", err)
		}
		if !ok {
			return nil
		}
		if err := stream.Send(&corev1.BatchFileChunk{Data: data}); err != nil {
			return err
		}
	}
}
