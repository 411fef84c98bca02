// Package batches serves the files and batches routes (contract.md "Files and batches"):
// OpenAI's /v1/files and /v1/batches and Anthropic's /v1/messages/batches. Core checks the key
// and its family, keeps the files and batches and runs the items; this package turns HTTP into
// core's RPCs and streams file bytes both ways without holding a file.
package batches

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/front/relay"
)

// Route prefixes.
const (
	FilesPath          = "/v1/files"
	BatchesPath        = "/v1/batches"
	MessageBatchesPath = "/v1/messages/batches"
)

// Serves reports whether path is one of this package's routes.
func Serves(path string) bool {
	for _, p := range []string{FilesPath, BatchesPath, MessageBatchesPath} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// Bounds of what the front reads of a request.
const (
	// DefaultMaxFileBytes is GATEWAY_FILES_MAX_BYTES' default (core enforces the limit too).
	DefaultMaxFileBytes = 100 << 20
	// multipartSlack is what a multipart body may carry beside the file: headers, boundaries,
	// the purpose part.
	multipartSlack = 1 << 20
	// uploadPiece is how much of a file one message to core carries.
	uploadPiece = 256 << 10
	// maxJSONBody bounds the JSON bodies of the batch routes (a message batch lists its
	// requests inline; spec 8's generation limit).
	maxJSONBody = 32 << 20
	// maxSmallPart bounds a multipart field other than the file.
	maxSmallPart = 4 << 10
)

// Handler serves the routes.
type Handler struct {
	Core corev1.CoreServiceClient
	// MaxFileBytes bounds an upload; DefaultMaxFileBytes when 0.
	MaxFileBytes int64
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := relay.ExtractKey(r)
	if key == "" {
		relay.WriteError(w, r, apierror.New(apierror.InvalidKey, "no API key was provided"))
		return
	}
	relay.SetBearer(r, key)
	p := r.URL.Path
	switch {
	case p == FilesPath || strings.HasPrefix(p, FilesPath+"/"):
		h.files(w, r, strings.TrimPrefix(strings.TrimPrefix(p, FilesPath), "/"))
	case p == MessageBatchesPath || strings.HasPrefix(p, MessageBatchesPath+"/"):
		h.batches(w, r, corev1.BatchAPI_BATCH_API_ANTHROPIC, strings.TrimPrefix(strings.TrimPrefix(p, MessageBatchesPath), "/"))
	default:
		h.batches(w, r, corev1.BatchAPI_BATCH_API_OPENAI, strings.TrimPrefix(strings.TrimPrefix(p, BatchesPath), "/"))
	}
}

func notAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	relay.WriteError(w, r, apierror.New(apierror.MethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
}

func noRoute(w http.ResponseWriter, r *http.Request) {
	relay.WriteError(w, r, apierror.New(apierror.NotFound, "no route for %s %s", r.Method, r.URL.Path))
}

// writeJSON writes a core answer as it is, or its error.
func writeJSON(w http.ResponseWriter, r *http.Request, out *corev1.BatchAPIJSON, err error) {
	if err != nil {
		relay.WriteError(w, r, relay.ErrorOf(err))
		return
	}
	relay.SetJSON(w.Header())
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out.GetJson())
}

// files serves /v1/files, /v1/files/{id} and /v1/files/{id}/content.
func (h *Handler) files(w http.ResponseWriter, r *http.Request, rest string) {
	ctx := relay.OutgoingContext(r)
	id, content := strings.CutSuffix(rest, "/content")
	switch {
	case rest == "":
		switch r.Method {
		case http.MethodPost:
			out, err := h.upload(ctx, r)
			writeJSON(w, r, out, err)
		case http.MethodGet:
			q := r.URL.Query()
			req := &corev1.ListBatchFilesRequest{After: q.Get("after"), Order: q.Get("order"), Purpose: q.Get("purpose")}
			n, ok := limitParam(q.Get("limit"))
			if !ok {
				relay.WriteError(w, r, apierror.New(apierror.InvalidRequest, "limit must be a positive integer"))
				return
			}
			req.Limit = n
			out, err := h.Core.ListBatchFiles(ctx, req)
			writeJSON(w, r, out, err)
		default:
			notAllowed(w, r, "GET, POST")
		}
	case id == "" || strings.Contains(id, "/"):
		noRoute(w, r)
	case content:
		if r.Method != http.MethodGet {
			notAllowed(w, r, "GET")
			return
		}
		stream, err := h.Core.GetBatchFileContent(ctx, &corev1.GetBatchFileContentRequest{Id: id})
		streamOut(w, r, stream, err, "application/octet-stream")
	case r.Method == http.MethodGet:
		out, err := h.Core.GetBatchFile(ctx, &corev1.GetBatchFileRequest{Id: id})
		writeJSON(w, r, out, err)
	case r.Method == http.MethodDelete:
		out, err := h.Core.DeleteBatchFile(ctx, &corev1.DeleteBatchFileRequest{Id: id})
		writeJSON(w, r, out, err)
	default:
		notAllowed(w, r, "GET, DELETE")
	}
}

func limitParam(s string) (int32, bool) {
	if s == "" {
		return 0, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 1<<20 {
		return 0, false
	}
	return int32(n), true
}

// chunkStream is a server stream of chunks.
type chunkStream interface {
	Recv() (*corev1.BatchFileChunk, error)
}

// streamOut writes a stream of chunks as the body; a failure before the first chunk is the
// error envelope, one after it cuts the body (the client sees a short read).
func streamOut(w http.ResponseWriter, r *http.Request, stream chunkStream, err error, contentType string) {
	if err != nil {
		relay.WriteError(w, r, relay.ErrorOf(err))
		return
	}
	first, err := stream.Recv()
	if err != nil && !errors.Is(err, io.EOF) {
		relay.WriteError(w, r, relay.ErrorOf(err))
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	for err == nil {
		if _, werr := w.Write(first.GetData()); werr != nil {
			return
		}
		first, err = stream.Recv()
	}
	if !errors.Is(err, io.EOF) {
		panic(http.ErrAbortHandler) // the body is incomplete: the client must not take it whole
	}
}

// upload streams a multipart upload to core: the file part piece by piece as it is read, the
// purpose whenever it comes (openai-go sends it after the file).
func (h *Handler) upload(ctx context.Context, r *http.Request) (*corev1.BatchAPIJSON, error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		return nil, apierror.New(apierror.UnsupportedContentType, "POST /v1/files takes multipart/form-data")
	}
	max := h.MaxFileBytes
	if max <= 0 {
		max = DefaultMaxFileBytes
	}
	r.Body = http.MaxBytesReader(nil, r.Body, max+multipartSlack)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, apierror.New(apierror.InvalidRequest, "the multipart body cannot be read: %v", err)
	}
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel() // an upload left unfinished is dropped by core
	var stream corev1.CoreService_UploadBatchFileClient
	purpose, sawFile := "", false
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, bodyError(err, max)
		}
		switch part.FormName() {
		case "file":
			if sawFile {
				return nil, apierror.New(apierror.InvalidRequest, "only one file part may be sent")
			}
			sawFile = true
			stream, err = h.Core.UploadBatchFile(callCtx)
			if err != nil {
				return nil, err
			}
			if err := stream.Send(&corev1.UploadBatchFileRequest{Filename: part.FileName()}); err != nil {
				return nil, closeErr(stream, err)
			}
			for {
				// A fresh buffer per message: the in-process channel hands the message over
				// without copying it, and core may still hold the last one.
				buf := make([]byte, uploadPiece)
				n, rerr := io.ReadFull(part, buf)
				if n > 0 {
					if err := stream.Send(&corev1.UploadBatchFileRequest{Data: buf[:n]}); err != nil {
						return nil, closeErr(stream, err)
					}
				}
				if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
					break
				}
				if rerr != nil {
					return nil, bodyError(rerr, max)
				}
			}
		case "purpose":
			b, err := io.ReadAll(io.LimitReader(part, maxSmallPart))
			if err != nil {
				return nil, bodyError(err, max)
			}
			purpose = strings.TrimSpace(string(b))
		default:
			// Other fields (expires_after[...]) are accepted and not used: batch files keep
			// the contract's 30 days.
			_, _ = io.Copy(io.Discard, part)
		}
	}
	if !sawFile {
		e := apierror.New(apierror.InvalidRequest, "the file part is required")
		e.Param = "file"
		return nil, e
	}
	if err := stream.Send(&corev1.UploadBatchFileRequest{Purpose: purpose, Finish: true}); err != nil {
		return nil, closeErr(stream, err)
	}
	return stream.CloseAndRecv()
}

// closeErr is the error a failed send stands for: core's answer when it ended the call.
func closeErr(stream corev1.CoreService_UploadBatchFileClient, err error) error {
	if errors.Is(err, io.EOF) {
		if _, rerr := stream.CloseAndRecv(); rerr != nil {
			return rerr
		}
	}
	return err
}

func bodyError(err error, max int64) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return apierror.New(apierror.PayloadTooLarge, "the file is larger than %d bytes", max)
	}
	return apierror.New(apierror.InvalidRequest, "the multipart body cannot be read: %v", err)
}
