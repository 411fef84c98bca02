package media

import (
	"bytes"
	"io"
	"mime/multipart"
	"os"
	"testing"

	"modelgateway/core/wire/strictjson"
)

// FuzzMultipart reads a client's form the way the handler does: the head, then every message
// after it. No body may panic, grow past the limits or loop. Seeds: forms of the shapes the
// golden transcripts record.
func FuzzMultipart(f *testing.F) {
	seed := func(parts ...[3]string) []byte {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		_ = mw.SetBoundary("B")
		for _, p := range parts {
			if p[1] != "" {
				w, _ := mw.CreateFormFile(p[0], p[1])
				_, _ = io.WriteString(w, p[2])
			} else {
				_ = mw.WriteField(p[0], p[2])
			}
		}
		_ = mw.Close()
		return b.Bytes()
	}
	f.Add(seed([3]string{"file", "a.mp3", "abc"}, [3]string{"model", "", "whisper-1"}, [3]string{"prompt", "", "p"}), uint8(0))
	f.Add(seed([3]string{"model", "", "dall-e-2"}, [3]string{"image[]", "a.png", "x"}, [3]string{"mask", "m.png", "y"}, [3]string{"n", "", "2"}), uint8(1))
	f.Add(seed([3]string{"model", "", "m"}, [3]string{"stream", "", "true"}), uint8(2))
	families := []string{"audio.transcriptions", "images.edits", "images.variations", "audio.translations"}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body []byte, fam uint8) {
		family := families[int(fam)%len(families)]
		const limit = 1 << 20
		form := newForm(family, dir, &limitedBody{r: bytes.NewReader(body), limit: limit}, "B", int64(len(body)))
		defer form.spool.remove()
		bounded := func() {
			if form.parts > maxParts+1 || form.fieldBytes > maxFields+1 {
				t.Fatalf("read %d parts and %d field bytes before refusing", form.parts, form.fieldBytes)
			}
		}
		defer bounded()
		if _, err := form.readHead(); err != nil {
			return
		}
		for range 10000 {
			if _, err := form.next(); err != nil {
				return
			}
		}
		t.Fatalf("no end after 10000 messages of a %d-byte body", len(body))
	})
}

// FuzzJSONHead: no JSON body of a media route makes the head reader panic. Seeds: the
// simulator's golden answers (any JSON will do) and the routes' request shapes. Bodies reach
// jsonHead only after relay.ReadJSON's strictjson.Check, so only those are read.
func FuzzJSONHead(f *testing.F) {
	for _, p := range []string{"../../core/simulator/testdata/moderations.json", "../../core/simulator/testdata/rerank.json"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"model":"tts","input":"hi","voice":"alloy","stream_format":"sse"}`))
	f.Add([]byte(`{"model":"rr","query":"q","documents":["a","b"],"top_n":1,"user":"u"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if strictjson.Check(body) != nil {
			return
		}
		head, err := jsonHead("audio.speech", body)
		if (head == nil) == (err == nil) {
			t.Fatalf("head %v and error %v", head, err)
		}
	})
}
