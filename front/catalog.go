package front

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"modelgateway/front/relay"
)

// catalog serves GET /v1/catalog through grpc-gateway, then makes the answer cacheable: the body
// is compacted (protojson varies its whitespace between builds), so unchanged data gives the
// same bytes and the same ETag on every replica, and If-None-Match revalidates to 304.
func (s *Server) catalog(w http.ResponseWriter, r *http.Request) {
	relay.DropKeyHeaders(r.Header) // public route: no credential goes further
	rec := &bufferedResponse{header: http.Header{}, status: http.StatusOK}
	s.coreMux.ServeHTTP(rec, r)
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	if rec.status != http.StatusOK {
		w.WriteHeader(rec.status)
		_, _ = w.Write(rec.body.Bytes())
		return
	}
	var body bytes.Buffer
	if err := json.Compact(&body, rec.body.Bytes()); err != nil {
		body = rec.body
	}
	// Audio rates appear only on the price sets that name them; every other set keeps exactly
	// the five components of spec 2.2.
	data := body.Bytes()
	for _, unpriced := range []string{`,"audio_input":null`, `,"audio_output":null`} {
		data = bytes.ReplaceAll(data, []byte(unpriced), nil)
	}
	sum := sha256.Sum256(data)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "public, max-age=60")
	h.Set("Vary", "Accept-Encoding")
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		h.Del("Content-Type")
		h.Del("Content-Length")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

func etagMatches(header, etag string) bool {
	for _, candidate := range strings.Split(header, ",") {
		c := strings.TrimPrefix(strings.TrimSpace(candidate), "W/")
		if c == etag || c == "*" {
			return true
		}
	}
	return false
}

// bufferedResponse holds a small unary answer so headers can be derived from its body.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header         { return b.header }
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferedResponse) WriteHeader(status int)      { b.status = status }
