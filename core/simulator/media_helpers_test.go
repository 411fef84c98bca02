package simulator

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"testing"
)

// testPNG is a real w×h PNG.
func testPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		img.SetNRGBA(x, x%h, color.NRGBA{R: 200, A: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// testWAV is a real WAV file of the given length: 16 kHz, 16-bit, mono.
func testWAV(seconds float64) []byte {
	const rate = 16000
	data := make([]byte, int(seconds*rate)*2)
	for i := 0; i+1 < len(data); i += 2 {
		binary.LittleEndian.PutUint16(data[i:], uint16(i*7))
	}
	var b bytes.Buffer
	b.WriteString("RIFF")
	_ = binary.Write(&b, binary.LittleEndian, uint32(36+len(data)))
	b.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(rate), uint32(2 * rate), uint16(2), uint16(16)} {
		_ = binary.Write(&b, binary.LittleEndian, v)
	}
	b.WriteString("data")
	_ = binary.Write(&b, binary.LittleEndian, uint32(len(data)))
	b.Write(data)
	return b.Bytes()
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// formPart is one part of a test upload: a plain field, or a file when filename is set.
type formPart struct {
	name, value         string
	filename, mediaType string
	data                []byte
}

func field(name, value string) formPart { return formPart{name: name, value: value} }

func file(name, filename, mediaType string, data []byte) formPart {
	return formPart{name: name, filename: filename, mediaType: mediaType, data: data}
}

// writeForm writes parts as a multipart body.
func writeForm(w *multipart.Writer, parts []formPart) error {
	for _, p := range parts {
		if p.filename == "" {
			if err := w.WriteField(p.name, p.value); err != nil {
				return err
			}
			continue
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="`+p.name+`"; filename="`+p.filename+`"`)
		h.Set("Content-Type", p.mediaType)
		pw, err := w.CreatePart(h)
		if err != nil {
			return err
		}
		if _, err := pw.Write(p.data); err != nil {
			return err
		}
	}
	return w.Close()
}

// postForm sends parts to base+path as multipart/form-data and returns status, headers and body.
func postForm(t *testing.T, base, path string, parts ...formPart) (int, http.Header, []byte) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if err := writeForm(w, parts); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(base+path, w.FormDataContentType(), &b)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, raw
}
