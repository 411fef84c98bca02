package media

import (
	"io"
	"net/http"
	"testing"
)

// pieces hands out a body n bytes per Read, as a client's chunks arrive.
type pieces struct {
	b []byte
	n int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), p.n)], p.b)
	p.b = p.b[n:]
	return n, nil
}

// The size core holds for and caps an upload at is a property of the form, never of how the
// body was read: the same chunked form gives the same body_size whatever the sizes of the
// client's chunks and of files around the read buffer, and core then receives at most that
// many bytes (it refuses an upload that sends more than body_size as payload_too_large).
func TestBodySizeIsTheFormsNotTheReadBuffers(t *testing.T) {
	t.Parallel()
	model := field("model", "whisper-1")
	prompt := field("prompt", "names: Ada")
	cases := []struct {
		name  string
		parts []part
		want  int64 // -1: a file is still to come when the head is sent
	}{
		{"a file just under the read buffer, then the model", []part{file("file", "a.mp3", "audio/mpeg", readBuffer-1, 1), model, prompt},
			readBuffer - 1 + 9 + 10},
		{"a file of exactly the read buffer, then the model", []part{file("file", "a.mp3", "audio/mpeg", readBuffer, 2), model},
			readBuffer + 9},
		{"a file over twice the read buffer, then the model", []part{file("file", "a.mp3", "audio/mpeg", 2*readBuffer+17, 3), prompt, model},
			2*readBuffer + 17 + 10 + 9},
		{"a small staged file, the model, then a file larger than the buffer", []part{file("file", "a.mp3", "audio/mpeg", 10, 4), model,
			file("file", "b.mp3", "audio/mpeg", readBuffer+100, 5)}, -1},
		{"the model first, then a file", []part{model, file("file", "a.mp3", "audio/mpeg", 3*readBuffer, 6)}, -1},
		{"the model and an empty file", []part{model, file("file", "a.mp3", "audio/mpeg", 0, 7)}, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := buildForm(t, tc.parts...)
			for _, chunk := range []int{1 << 20, readBuffer, 4096, 1000, 7} {
				core := &fakeCore{answer: jsonAnswer()}
				h := newHandler(t, "audio.transcriptions", core.forward)
				r := newRequest(nil, formType, true)
				r.Body = io.NopCloser(&pieces{b: body, n: chunk})
				rec := serve(t, h, r)
				if rec.Code != http.StatusOK || core.got.err != nil {
					t.Fatalf("chunks of %d: status %d %s, core read %v", chunk, rec.Code, rec.Body, core.got.err)
				}
				checkForm(t, tc.parts, core.got)
				got := core.got.head.GetBodySize()
				if got != tc.want {
					t.Errorf("chunks of %d: body_size %d, want %d", chunk, got, tc.want)
				}
				if sent := partBytes(core.got); got >= 0 && sent > got {
					t.Errorf("chunks of %d: core received %d bytes, over the body_size %d it would refuse at", chunk, sent, got)
				}
			}
		})
	}
}

// With a Content-Length, a form the head did not finish holds for the declared length.
func TestBodySizeOfADeclaredFormThatIsStillArriving(t *testing.T) {
	t.Parallel()
	parts := []part{field("model", "whisper-1"), file("file", "a.mp3", "audio/mpeg", 2*readBuffer, 8)}
	body := buildForm(t, parts...)
	core := &fakeCore{answer: jsonAnswer()}
	rec := serve(t, newHandler(t, "audio.transcriptions", core.forward), newRequest(body, formType, false))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if got := core.got.head.GetBodySize(); got != int64(len(body)) {
		t.Errorf("body_size %d, want the Content-Length %d", got, len(body))
	}
}

// partBytes counts what core's upload cap counts: plain field values and file contents.
func partBytes(g received) int64 {
	var n int64
	for _, p := range g.parts {
		n += int64(len(p.part.GetValue()) + len(p.data))
	}
	return n
}
