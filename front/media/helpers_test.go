package media

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const (
	goodKey   = "Bearer sk-good"
	requestID = "req-media-1"
	boundary  = "test-boundary-0123456789"
)

// keyCore answers Authorize as core does: only goodKey may call anything. It is what
// relay.KeyFirst asks when the body is rejected before core sees it.
type keyCore struct {
	corev1.CoreServiceClient
	mu    sync.Mutex
	calls int
}

func (k *keyCore) Authorize(ctx context.Context, _ *corev1.AuthorizeRequest, _ ...grpc.CallOption) (*corev1.AuthorizeResponse, error) {
	k.mu.Lock()
	k.calls++
	k.mu.Unlock()
	md, _ := metadata.FromOutgoingContext(ctx)
	if got := md.Get("authorization"); len(got) != 1 || got[0] != goodKey {
		return nil, apistatus.ToStatus(apierror.New(apierror.InvalidKey, "the key is not valid"), "")
	}
	return &corev1.AuthorizeResponse{}, nil
}

// part is one part of a test form.
type part struct {
	name, filename, contentType string
	body                        []byte
}

func field(name, value string) part { return part{name: name, body: []byte(value)} }

// file is a file part of n pseudo-random bytes; seed makes files differ.
func file(name, filename, contentType string, n int, seed uint64) part {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return part{name: name, filename: filename, contentType: contentType, body: b}
}

func (p part) isFile() bool { return p.filename != "" }

// buildForm writes the parts as the SDKs do, with a fixed boundary for stable golden files.
func buildForm(t testing.TB, parts ...part) []byte {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if err := mw.SetBoundary(boundary); err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		if p.isFile() {
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, p.name, p.filename))
			h.Set("Content-Type", p.contentType)
		} else {
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q`, p.name))
		}
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(p.body)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const formType = "multipart/form-data; boundary=" + boundary

// newRequest is a request as front.Server hands it on. A chunked request has no
// Content-Length.
func newRequest(body []byte, contentType string, chunked bool) *http.Request {
	var rd io.Reader = bytes.NewReader(body)
	if chunked {
		rd = io.MultiReader(rd) // hides the length: ContentLength -1
	}
	r := httptest.NewRequest(http.MethodPost, "/v1/route", rd)
	r.Header.Set("Content-Type", contentType)
	r.Header.Set("Authorization", goodKey)
	r.Header.Set("X-Request-Id", requestID)
	return r
}

// gotPart is one part as core received it.
type gotPart struct {
	part   *corev1.FormPart
	data   []byte // a file's bytes, copied out of the reused data messages
	chunks int
	inHead bool
}

// received is everything core read from the client side of the stream.
type received struct {
	head     *corev1.ForwardHead
	parts    []gotPart
	err      error // what ended it, nil for io.EOF
	maxChunk int
}

// receive reads the client side to its end as core does.
func receive(s corev1.CoreService_ForwardServer) received {
	var got received
	for {
		m, err := s.Recv()
		if err == io.EOF {
			return got
		}
		if err != nil {
			got.err = err
			return got
		}
		switch msg := m.GetMsg().(type) {
		case *corev1.ForwardRequest_Head:
			if got.head != nil {
				got.err = errors.New("a second head")
				return got
			}
			got.head = proto.Clone(msg.Head).(*corev1.ForwardHead)
			for _, p := range got.head.GetParts() {
				got.parts = append(got.parts, gotPart{part: p, inHead: true})
			}
		case *corev1.ForwardRequest_Part:
			got.parts = append(got.parts, gotPart{part: proto.Clone(msg.Part).(*corev1.FormPart)})
		case *corev1.ForwardRequest_Data:
			last := len(got.parts) - 1
			if got.head == nil || last < 0 || !got.parts[last].part.GetFile() || got.parts[last].inHead {
				got.err = errors.New("data without a file part before it")
				return got
			}
			got.parts[last].data = append(got.parts[last].data, msg.Data...)
			got.parts[last].chunks++
			got.maxChunk = max(got.maxChunk, len(msg.Data))
		}
	}
}

// transcript renders what core received, for the golden files.
func (g received) transcript() string {
	var b strings.Builder
	h := g.head
	fmt.Fprintf(&b, "head family=%s model=%q multipart=%t stream=%t body_size=%d parameters=%v body=%q\n",
		h.GetEndpointFamily(), h.GetModel(), h.GetMultipart(), h.GetStream(), h.GetBodySize(), h.GetParameters(), h.GetBody())
	for _, p := range g.parts {
		indent := ""
		if p.inHead {
			indent = "  in head: "
		}
		if p.part.GetFile() {
			sum := sha256.Sum256(p.data)
			fmt.Fprintf(&b, "%sfile %s filename=%q content_type=%q: %d bytes in %d data messages, sha256 %x\n",
				indent, p.part.GetName(), p.part.GetFilename(), p.part.GetContentType(), len(p.data), p.chunks, sum[:8])
			continue
		}
		fmt.Fprintf(&b, "%sfield %s=%q\n", indent, p.part.GetName(), p.part.GetValue())
	}
	if g.err != nil {
		fmt.Fprintf(&b, "error %v\n", g.err)
	} else {
		b.WriteString("EOF\n")
	}
	return b.String()
}

// checkForm asserts the form arrived whole: every file byte for byte, the fields read before
// the head in the head, and everything else in the form's own order.
func checkForm(t *testing.T, sent []part, got received) {
	t.Helper()
	var head, later []gotPart
	for _, p := range got.parts {
		if p.inHead {
			head = append(head, p)
		} else {
			later = append(later, p)
		}
	}
	if len(head)+len(later) != len(sent) {
		t.Fatalf("%d parts arrived, %d sent", len(head)+len(later), len(sent))
	}
	// The head holds a prefix of the form's plain fields; the rest comes in order.
	i, j := 0, 0
	for _, s := range sent {
		if i < len(head) && !s.isFile() && head[i].part.GetName() == s.name {
			checkPart(t, s, head[i])
			i++
			continue
		}
		if j >= len(later) {
			t.Fatalf("part %s missing or out of order", s.name)
		}
		checkPart(t, s, later[j])
		j++
	}
	if got.maxChunk > chunkSize {
		t.Errorf("a data message of %d bytes, more than %d", got.maxChunk, chunkSize)
	}
}

func checkPart(t *testing.T, s part, g gotPart) {
	t.Helper()
	p := g.part
	if p.GetName() != s.name || p.GetFile() != s.isFile() || p.GetFilename() != s.filename || p.GetContentType() != s.contentType {
		t.Errorf("part %+v arrived as %v", s.name, p)
	}
	got := p.GetValue()
	if s.isFile() {
		got = g.data
	}
	if sha256.Sum256(got) != sha256.Sum256(s.body) {
		t.Errorf("part %s: %d bytes arrived, not the %d sent", s.name, len(got), len(s.body))
	}
}

// fakeCore plays core's Forward: a pump goroutine reads the client side (as core's upstream
// transport reads the request body) while the handler goroutine waits; then it answers, or
// passes a body error back as the call's error.
type fakeCore struct {
	answer []*corev1.ForwardResponse
	got    received
	called bool
}

func (c *fakeCore) forward(s corev1.CoreService_ForwardServer) error {
	c.called = true
	done := make(chan received)
	go func() { done <- receive(s) }()
	c.got = <-done
	if c.got.err != nil {
		return c.got.err
	}
	for _, m := range c.answer {
		if err := s.Send(m); err != nil {
			return nil // the client went away: core stops quietly
		}
	}
	return nil
}

func respHead(status int32, contentType string) *corev1.ForwardResponse {
	return &corev1.ForwardResponse{Msg: &corev1.ForwardResponse_Head{Head: &corev1.ForwardResponseHead{Status: status, ContentType: contentType}}}
}

func respData(s string) *corev1.ForwardResponse {
	return &corev1.ForwardResponse{Msg: &corev1.ForwardResponse_Data{Data: []byte(s)}}
}

func respUsage(cost, currency string) *corev1.ForwardResponse {
	return &corev1.ForwardResponse{Msg: &corev1.ForwardResponse_Usage{Usage: &corev1.Usage{Reliable: true, Cost: cost, Currency: currency}}}
}

const okJSON = `{"created":1730000000,"data":[{"b64_json":"iVBORw0"}]}`

func jsonAnswer() []*corev1.ForwardResponse {
	return []*corev1.ForwardResponse{respHead(200, "application/json"), respData(okJSON[:20]), respData(okJSON[20:]), respUsage("0.0042", "EUR")}
}

// routes as the front wires them (spec 4.3, 4.4, 8).
var routes = map[string]struct {
	limit     int64
	multipart bool
}{
	"rerank":               {32 << 20, false},
	"moderations":          {32 << 20, false},
	"images.generations":   {1 << 20, false},
	"audio.speech":         {1 << 20, false},
	"images.edits":         {25 << 20, true},
	"images.variations":    {25 << 20, true},
	"audio.transcriptions": {25 << 20, true},
	"audio.translations":   {25 << 20, true},
}

func newHandler(t testing.TB, family string, forward ForwardFunc) *Handler {
	t.Helper()
	r, ok := routes[family]
	if !ok {
		t.Fatalf("no route %s", family)
	}
	return &Handler{Core: &keyCore{}, Forward: forward, Family: family, Limit: r.limit, Multipart: r.multipart, TempDir: t.TempDir()}
}

// serve runs the handler and checks that no staged file outlives the request.
func serve(t testing.TB, h *Handler, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	checkTempDirEmpty(t, h.TempDir)
	return rec
}

func checkTempDirEmpty(t testing.TB, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind: %s", filepath.Join(dir, e.Name()))
	}
}

// checkError asserts the spec envelope (spec 2.4, 7).
func checkError(t *testing.T, rec *httptest.ResponseRecorder, status int, code, message string) {
	t.Helper()
	var env apierror.Envelope
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
		t.Fatalf("status %d, not an envelope: %v: %q", rec.Code, err, rec.Body)
	}
	if rec.Code != status || env.Error.Code != code || !strings.Contains(env.Error.Message, message) ||
		env.Error.RequestID != requestID || env.Error.Type != apierror.Type {
		t.Errorf("status %d %+v, want %d %s containing %q", rec.Code, env.Error, status, code, message)
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs:\n--- want\n%s--- got\n%s", path, want, got)
	}
}
