package media

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	corev1 "modelgateway/gen/gateway/core/v1"
)

// patternReader is an endless file body: bytes 0..255 over and over, which never spell the
// boundary.
type patternReader struct{ i byte }

func (p *patternReader) Read(b []byte) (int, error) {
	for k := range b {
		b[k] = p.i
		p.i++
	}
	return len(b), nil
}

// upload is a transcription form whose file is generated while it is read, so that only the
// handler's memory is measured. The form is exactly total bytes.
func upload(total int64, staged bool) *http.Request {
	file := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.mp3\"\r\n" +
		"Content-Type: audio/mpeg\r\n\r\n"
	model := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n"
	end := "--" + boundary + "--\r\n"
	before, after := file, "\r\n"+model+end
	if !staged {
		before, after = model+file, "\r\n"+end
	}
	size := total - int64(len(before)+len(after))
	body := io.MultiReader(strings.NewReader(before), io.LimitReader(&patternReader{}, size), strings.NewReader(after))
	r := httptest.NewRequest(http.MethodPost, "/v1/audio/transcriptions", body)
	r.ContentLength = total
	r.Header.Set("Content-Type", formType)
	r.Header.Set("Authorization", goodKey)
	r.Header.Set("X-Request-Id", requestID)
	return r
}

// discard is core passing the upload on to an upstream that ignores it.
func discard(s corev1.CoreService_ForwardServer) error {
	for {
		_, err := s.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	for _, m := range jsonAnswer() {
		if err := s.Send(m); err != nil {
			return nil
		}
	}
	return nil
}

func serveUpload(tb testing.TB, h *Handler, total int64, staged bool) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, upload(total, staged))
	if rec.Code != 200 {
		tb.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
}

// BenchmarkUpload25MiB pushes a multipart upload up to the route's limit through the handler;
// B/op must be the same for 1 MiB and 25 MiB, staged or streamed live.
func BenchmarkUpload25MiB(b *testing.B) {
	for _, staged := range []bool{true, false} {
		for _, mib := range []int64{1, 25} {
			name := fmt.Sprintf("%s/%dMiB", map[bool]string{true: "staged", false: "live"}[staged], mib)
			b.Run(name, func(b *testing.B) {
				h := newHandler(b, "audio.transcriptions", discard)
				b.ReportAllocs()
				b.SetBytes(mib << 20)
				for b.Loop() {
					serveUpload(b, h, mib<<20, staged)
				}
				checkTempDirEmpty(b, h.TempDir)
			})
		}
	}
}

// An upload of the route's full 25 MiB allocates no more than one of 1 MiB: the file goes
// through one fixed buffer, to the spool and on to core. Not parallel, so that nothing else
// allocates meanwhile.
func TestUploadMemoryIsFlat(t *testing.T) {
	h := newHandler(t, "audio.transcriptions", discard)
	allocated := func(total int64, staged bool) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		serveUpload(t, h, total, staged)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	for _, staged := range []bool{true, false} {
		allocated(1<<20, staged) // warm up lazily built package state
		small, large := allocated(1<<20, staged), allocated(25<<20, staged)
		t.Logf("staged=%t: 1 MiB upload allocated %d bytes, 25 MiB %d", staged, small, large)
		if large > small+64<<10 || large > 512<<10 {
			t.Errorf("staged=%t: 1 MiB upload allocated %d bytes, 25 MiB %d", staged, small, large)
		}
	}
	checkTempDirEmpty(t, h.TempDir)
}
