package simulator

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A 25 MiB upload goes through a pipe, so neither side ever holds it whole; the simulator must
// hash it on the fly, record it exactly, and allocate far less than its size. The test is not
// parallel so that no other test allocates while it measures.
func TestLargeUploadIsStreamed(t *testing.T) {
	sim, url := start(t, Options{})
	const size = 25 << 20
	header := testWAV(0)[:44]
	// The file: a WAV header claiming 25 MiB of 16 kHz samples, then a repeating pattern.
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	want := sha256.New()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			if err := mw.WriteField("model", "whisper-1"); err != nil {
				return err
			}
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", `form-data; name="file"; filename="big.wav"`)
			h.Set("Content-Type", "audio/wav")
			fw, err := mw.CreatePart(h)
			if err != nil {
				return err
			}
			out := io.MultiWriter(fw, want)
			if _, err := out.Write(header); err != nil {
				return err
			}
			for left := size - len(header); left > 0; left -= len(chunk) {
				if _, err := out.Write(chunk[:min(left, len(chunk))]); err != nil {
					return err
				}
			}
			if err := mw.WriteField("response_format", "text"); err != nil {
				return err
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, err := http.Post(url+"/v1/audio/transcriptions", mw.FormDataContentType(), pr)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	runtime.ReadMemStats(&after)

	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), fmt.Sprintf("Transcribed %d bytes of big.wav: ", size)) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("the upload allocated %d bytes in all; it must be streamed, not buffered", got)
	}
	wantForm := []FormPart{
		{Name: "model", Value: "whisper-1"},
		{Name: "file", File: true, Filename: "big.wav", ContentType: "audio/wav", Size: size, SHA256: hex.EncodeToString(want.Sum(nil))},
		{Name: "response_format", Value: "text"},
	}
	if diff := cmp.Diff(wantForm, sim.LastForm()); diff != "" {
		t.Errorf("recorded form (-want +got):\n%s", diff)
	}
	if sim.Requests("/v1/audio/transcriptions") != 1 || sim.LastBody() != nil {
		t.Errorf("requests %d, body %d bytes", sim.Requests("/v1/audio/transcriptions"), len(sim.LastBody()))
	}
}

func TestFormErrors(t *testing.T) {
	t.Parallel()
	sim, url := start(t, Options{})
	wav := file("file", "a.wav", "audio/wav", testWAV(0.1))
	pngFile := file("image", "a.png", "image/png", testPNG(t, 2, 2))
	jpeg := file("image", "a.jpg", "image/jpeg", []byte("\xff\xd8\xff\xe0 not a png"))
	cases := []struct {
		name, path string
		parts      []formPart
		status     int
		param      string
	}{
		{"transcription without file", "/v1/audio/transcriptions", []formPart{field("model", "whisper-1")}, 400, "file"},
		{"transcription without model", "/v1/audio/transcriptions", []formPart{wav}, 400, "model"},
		{"translation without file", "/v1/audio/translations", []formPart{field("model", "whisper-1")}, 400, "file"},
		{"unknown response format", "/v1/audio/transcriptions", []formPart{wav, field("model", "whisper-1"), field("response_format", "xml")}, 400, "response_format"},
		{"edit without image", "/v1/images/edits", []formPart{field("prompt", "p")}, 400, "image"},
		{"edit without prompt", "/v1/images/edits", []formPart{pngFile}, 400, "prompt"},
		{"edit of a JPEG for dall-e-2", "/v1/images/edits", []formPart{jpeg, field("prompt", "p")}, 400, "image"},
		{"edit with a JPEG mask", "/v1/images/edits", []formPart{pngFile, file("mask", "m.jpg", "image/jpeg", jpeg.data), field("prompt", "p"), field("model", "gpt-image-1")}, 400, "mask"},
		{"variation of a text file", "/v1/images/variations", []formPart{file("image", "a.txt", "text/plain", []byte("hello"))}, 400, "image"},
		{"variation with n out of range", "/v1/images/variations", []formPart{pngFile, field("n", "11")}, 400, "n"},
		{"fail directive in the prompt", "/v1/audio/transcriptions", []formPart{wav, field("model", "whisper-1"), field("prompt", "#sim:fail=429")}, 429, ""},
	}
	for _, tc := range cases {
		status, _, raw := postForm(t, url, tc.path, tc.parts...)
		var e struct {
			Error openAIError `json:"error"`
		}
		if err := json.Unmarshal(raw, &e); err != nil || status != tc.status || e.Error.Message == "" {
			t.Errorf("%s: %d %s", tc.name, status, raw)
			continue
		}
		if tc.param != "" && (e.Error.Param == nil || *e.Error.Param != tc.param) {
			t.Errorf("%s: %s, want param %q", tc.name, raw, tc.param)
		}
		if got := sim.LastForm(); len(got) != len(tc.parts) {
			t.Errorf("%s: recorded %d parts, sent %d", tc.name, len(got), len(tc.parts))
		}
	}

	// Bodies that are not multipart at all.
	for _, ct := range []string{"application/json", "multipart/form-data", "multipart/mixed; boundary=x"} {
		resp, err := http.Post(url+"/v1/audio/transcriptions", ct, strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("Content-Type %q: %d", ct, resp.StatusCode)
		}
	}
	// A body cut in the middle of a part.
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	_ = writeForm(mw, []formPart{field("model", "whisper-1"), wav})
	resp, err := http.Post(url+"/v1/audio/transcriptions", mw.FormDataContentType(), bytes.NewReader(b.Bytes()[:b.Len()/2]))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 || len(sim.LastForm()) != 1 {
		t.Errorf("truncated body: %d, recorded %+v", resp.StatusCode, sim.LastForm())
	}
	req, _ := http.NewRequest("GET", url+"/v1/images/edits", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 405 {
		t.Errorf("GET on a multipart route: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}
