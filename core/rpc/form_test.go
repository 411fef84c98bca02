package rpc

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"testing"

	"google.golang.org/grpc"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
)

// fakeForward is the client side of a Forward stream as core sees it.
type fakeForward struct {
	grpc.ServerStream
	msgs []*corev1.ForwardRequest
	err  error // returned after msgs instead of io.EOF
	recv int
}

func (f *fakeForward) Recv() (*corev1.ForwardRequest, error) {
	if f.recv < len(f.msgs) {
		f.recv++
		return f.msgs[f.recv-1], nil
	}
	if f.err != nil {
		return nil, f.err
	}
	return nil, io.EOF
}

func (f *fakeForward) Send(*corev1.ForwardResponse) error { return nil }

func part(name, value string) *corev1.ForwardRequest {
	return &corev1.ForwardRequest{Msg: &corev1.ForwardRequest_Part{Part: &corev1.FormPart{Name: name, Value: []byte(value)}}}
}

func filePart(name, filename string) *corev1.ForwardRequest {
	return &corev1.ForwardRequest{Msg: &corev1.ForwardRequest_Part{Part: &corev1.FormPart{Name: name, Filename: filename, ContentType: "image/png", File: true}}}
}

func data(b []byte) *corev1.ForwardRequest {
	return &corev1.ForwardRequest{Msg: &corev1.ForwardRequest_Data{Data: b}}
}

// The upstream form holds the head's fields, then every streamed part in order, with the
// model rewritten and file bytes intact; the client's stream is read only as the upstream
// reads.
func TestFormBodyRewritesModelAndStreamsParts(t *testing.T) {
	img := bytes.Repeat([]byte{0x89, 'P', 'N', 'G', 1, 2, 3}, 10000)
	srv := &fakeForward{msgs: []*corev1.ForwardRequest{
		filePart("image[]", `a"b.png`), data(img[:30000]), data(img[30000:]),
		part("prompt", "a cat"),
	}}
	head := []*corev1.FormPart{{Name: "model", Value: []byte("public-model")}, {Name: "n", Value: []byte("2")}}
	fb := newFormBody(srv, head, "gpt-image-1", -1)
	if srv.recv != 0 {
		t.Fatal("the client stream was read before the upstream asked")
	}
	_, params, err := mime.ParseMediaType(fb.contentType())
	if err != nil {
		t.Fatal(err)
	}
	mr := multipart.NewReader(fb, params["boundary"])
	type got struct{ name, filename, value string }
	var parts []got
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		v, _ := io.ReadAll(p)
		parts = append(parts, got{p.FormName(), p.FileName(), string(v)})
	}
	want := []got{{"model", "", "gpt-image-1"}, {"n", "", "2"}, {"image[]", `a"b.png`, string(img)}, {"prompt", "", "a cat"}}
	if len(parts) != len(want) {
		t.Fatalf("got %d parts, want %d", len(parts), len(want))
	}
	for i := range want {
		if parts[i] != want[i] {
			t.Errorf("part %d = %.40q, want %.40q", i, parts[i], want[i])
		}
	}
	if !fb.started {
		t.Error("started must be set once the client stream was read")
	}
}

// A failure of the client's side (the front's payload_too_large) fails the upstream body and
// is kept for Forward to answer with.
func TestFormBodyKeepsTheClientError(t *testing.T) {
	tooLarge := apierror.New(apierror.PayloadTooLarge, "too large")
	fb := newFormBody(&fakeForward{msgs: []*corev1.ForwardRequest{filePart("file", "a.wav"), data([]byte("RIFF"))}, err: tooLarge}, nil, "m", -1)
	_, err := io.ReadAll(fb)
	if !errors.Is(err, tooLarge) || !errors.Is(fb.err, tooLarge) {
		t.Fatalf("err = %v, kept %v; want the client's error", err, fb.err)
	}
	if got := clientError(fb.err); got.Code != apierror.PayloadTooLarge {
		t.Errorf("clientError code = %s", got.Code)
	}
}

// A caller that sends more than the body size its hold was computed from is refused: the
// hold covers what goes upstream (the gRPC listener's callers declare their own size).
func TestFormBodyRefusesMoreThanDeclared(t *testing.T) {
	msgs := []*corev1.ForwardRequest{filePart("file", "a.wav"), data(make([]byte, 600)), data(make([]byte, 600))}
	fb := newFormBody(&fakeForward{msgs: msgs}, nil, "m", 1000)
	_, err := io.ReadAll(fb)
	if got := clientError(err); got.Code != apierror.PayloadTooLarge {
		t.Fatalf("err = %v, want payload_too_large", err)
	}
	fb = newFormBody(&fakeForward{msgs: msgs}, nil, "m", 1300)
	if _, err := io.ReadAll(fb); err != nil {
		t.Fatalf("within the declared size: %v", err)
	}
}

func TestForwardEstimate(t *testing.T) {
	cases := []struct {
		name    string
		head    *corev1.ForwardHead
		in, out int64
	}{
		{"rerank text", &corev1.ForwardHead{EndpointFamily: "rerank", Body: make([]byte, 1000)}, 564, 0},
		{"image generation", &corev1.ForwardHead{EndpointFamily: "images.generations", Body: make([]byte, 100)}, 114, 8192},
		{"known upload", &corev1.ForwardHead{EndpointFamily: "audio.transcriptions", Multipart: true, BodySize: 2_000_000,
			Parts: []*corev1.FormPart{{Name: "model", Value: []byte("whisper-1")}}}, 2000 + 64 + 4, 8192},
		{"unknown upload", &corev1.ForwardHead{EndpointFamily: "images.edits", Multipart: true, BodySize: -1}, 25<<20/1000 + 64, 8192},
	}
	for _, c := range cases {
		in, out := forwardEstimate(c.head)
		if in != c.in || out != c.out {
			t.Errorf("%s: estimate = (%d, %d), want (%d, %d)", c.name, in, out, c.in, c.out)
		}
	}
}
