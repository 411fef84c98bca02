package media

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
)

// countingReader counts what the handler took from the client.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// formOfSize is a form of exactly size bytes: the file is padded to fit. modelFirst puts the
// model before the file, so the file streams after the head instead of being staged.
func formOfSize(t *testing.T, size int, modelFirst bool, fileName string) ([]part, []byte) {
	t.Helper()
	build := func(n int) []part {
		f := file(fileName, "a.png", "image/png", n, 11)
		if modelFirst {
			return []part{field("model", "dall-e-2"), f, field("n", "1")}
		}
		return []part{f, field("model", "dall-e-2"), field("n", "1")}
	}
	overhead := len(buildForm(t, build(0)...))
	parts := build(size - overhead)
	body := buildForm(t, parts...)
	if len(body) != size {
		t.Fatalf("form of %d bytes, want %d", len(body), size)
	}
	return parts, body
}

// spec 8: the limit is the route's; exactly the limit is fine, one byte more is
// payload_too_large, whether the client declared the length or not.
func TestBodyLimit(t *testing.T) {
	t.Parallel()
	const limit = 100_000 // not a multiple of the copy buffer
	for _, chunked := range []bool{false, true} {
		for _, modelFirst := range []bool{false, true} {
			for _, delta := range []int{-1, 0, 1} {
				name := fmt.Sprintf("multipart chunked=%t model_first=%t limit%+d", chunked, modelFirst, delta)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					parts, body := formOfSize(t, limit+delta, modelFirst, "image")
					core := &fakeCore{answer: jsonAnswer()}
					h := newHandler(t, "images.variations", core.forward)
					h.Limit = limit
					src := &countingReader{r: bytes.NewReader(body)}
					r := newRequest(nil, formType, chunked)
					r.Body = io.NopCloser(src)
					if !chunked {
						r.ContentLength = int64(len(body))
					}
					rec := serve(t, h, r)
					if src.n > limit+1 {
						t.Errorf("read %d bytes of the body, more than the limit and one", src.n)
					}
					if delta <= 0 {
						if rec.Code != 200 {
							t.Fatalf("status %d: %s", rec.Code, rec.Body)
						}
						checkForm(t, parts, core.got)
						return
					}
					checkError(t, rec, http.StatusRequestEntityTooLarge, apierror.PayloadTooLarge, "larger than 100000 bytes")
					switch {
					case !chunked && (src.n != 0 || core.called):
						t.Errorf("a declared oversize body was read (%d bytes, core called %t)", src.n, core.called)
					case chunked && core.called != modelFirst:
						// Staged: the limit is passed before the head. Live: core sees the
						// error in Recv and passes it back.
						t.Errorf("core called %t", core.called)
					}
				})
			}
		}
		for _, delta := range []int{-1, 0, 1} {
			t.Run(fmt.Sprintf("JSON chunked=%t limit%+d", chunked, delta), func(t *testing.T) {
				t.Parallel()
				pad := bytes.Repeat([]byte("a"), limit+delta-len(`{"model":"m","input":""}`))
				body := []byte(`{"model":"m","input":"` + string(pad) + `"}`)
				core := &fakeCore{answer: jsonAnswer()}
				h := newHandler(t, "moderations", core.forward)
				h.Limit = limit
				rec := serve(t, h, newRequest(body, "application/json", chunked))
				if delta <= 0 {
					if rec.Code != 200 || !bytes.Equal(core.got.head.GetBody(), body) {
						t.Errorf("status %d, %d bytes in the head", rec.Code, len(core.got.head.GetBody()))
					}
					return
				}
				checkError(t, rec, http.StatusRequestEntityTooLarge, apierror.PayloadTooLarge, "larger than 100000 bytes")
			})
		}
	}
}

// The bytes after the closing boundary are body too.
func TestBodyLimitCountsTheEpilogue(t *testing.T) {
	t.Parallel()
	body := buildForm(t, file("file", "a.mp3", "audio/mpeg", 100, 1), field("model", "whisper-1"))
	core := &fakeCore{answer: jsonAnswer()}
	h := newHandler(t, "audio.transcriptions", core.forward)
	h.Limit = int64(len(body)) + 10
	rec := serve(t, h, newRequest(append(body, bytes.Repeat([]byte("\r\n"), 6)...), formType, true))
	checkError(t, rec, http.StatusRequestEntityTooLarge, apierror.PayloadTooLarge, "")
}

// When core passes the body's failure back as something else (its upstream transport wraps
// the read error, say), the client still learns the real cause.
func TestBodyFailureAfterHeadWinsOverCoresError(t *testing.T) {
	t.Parallel()
	_, body := formOfSize(t, 50_000, true, "image")
	h := newHandler(t, "images.edits", nil)
	h.Limit = 40_000
	h.Forward = func(s corev1.CoreService_ForwardServer) error {
		got := receive(s)
		if got.head == nil || got.err == nil {
			t.Errorf("core read %v to the end", got.head)
		}
		return fmt.Errorf("upstream request: %w", io.ErrUnexpectedEOF)
	}
	rec := serve(t, h, newRequest(body, formType, true))
	checkError(t, rec, http.StatusRequestEntityTooLarge, apierror.PayloadTooLarge, "larger than 40000 bytes")
}
