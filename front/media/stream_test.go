package media

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
)

// Core reads the key and the request id from the call's metadata, and stops its upstream
// call when the context ends with the request.
func TestContext(t *testing.T) {
	t.Parallel()
	var stream corev1.CoreService_ForwardServer
	h := newHandler(t, "rerank", func(s corev1.CoreService_ForwardServer) error {
		stream = s
		md, _ := metadata.FromIncomingContext(s.Context())
		if a, id := md.Get("authorization"), md.Get("x-request-id"); len(a) != 1 || a[0] != goodKey || len(id) != 1 || id[0] != requestID {
			t.Errorf("metadata %v", md)
		}
		if s.Context().Err() != nil {
			t.Error("cancelled during the call")
		}
		return errors.New("refused")
	})
	serve(t, h, newRequest([]byte(`{"model":"m"}`), "application/json", false))
	if stream.Context().Err() == nil {
		t.Error("the context outlives the request")
	}
}

// A Recv or Send after the handler has returned fails cleanly: no panic, no read of a body
// that belongs to nobody any more, no write to a finished response.
func TestLateCalls(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, family string
		body         []byte
		contentType  string
		recvs        int // before Forward returns
		want         error
	}{
		{"JSON, head never read", "rerank", []byte(`{"model":"m"}`), "application/json", 0, errRequestEnded},
		{"JSON, head read", "rerank", []byte(`{"model":"m"}`), "application/json", 1, io.EOF},
		{"form, stopped after the head", "images.edits",
			buildForm(t, field("model", "m"), file("image", "a.png", "image/png", 200_000, 1)), formType, 1, errRequestEnded},
		{"form, stopped in a staged file", "images.edits",
			buildForm(t, file("image", "a.png", "image/png", 200_000, 1), field("model", "m")), formType, 3, errRequestEnded},
		{"form, read to its end", "images.edits",
			buildForm(t, file("image", "a.png", "image/png", 10, 1), field("model", "m")), formType, 10, io.EOF},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stream corev1.CoreService_ForwardServer
			h := newHandler(t, tc.family, func(s corev1.CoreService_ForwardServer) error {
				stream = s
				for range tc.recvs {
					if _, err := s.Recv(); err != nil {
						break
					}
				}
				return apierror.New(apierror.InsufficientBalance, "no")
			})
			serve(t, h, newRequest(tc.body, tc.contentType, true))
			for range 2 {
				if _, err := stream.Recv(); err != tc.want {
					t.Errorf("late Recv: %v, want %v", err, tc.want)
				}
			}
			if err := stream.Send(respHead(200, "application/json")); err == nil {
				t.Error("late Send succeeded")
			}
		})
	}
}

// Core's pump may still be receiving when the call returns (its upstream failed); the handler
// waits for a Recv in progress and fails the later ones, under the race detector.
func TestPumpOutlivesTheCall(t *testing.T) {
	t.Parallel()
	for _, staged := range []bool{false, true} {
		t.Run(map[bool]string{false: "live", true: "staged"}[staged], func(t *testing.T) {
			t.Parallel()
			parts := []part{field("model", "m"), file("file", "a.mp3", "audio/mpeg", 1<<20, 1)}
			if staged {
				parts[0], parts[1] = parts[1], parts[0]
			}
			pumped := make(chan error, 1)
			h := newHandler(t, "audio.transcriptions", func(s corev1.CoreService_ForwardServer) error {
				if _, err := s.Recv(); err != nil { // the head
					return err
				}
				go func() {
					for {
						if _, err := s.Recv(); err != nil {
							pumped <- err
							return
						}
					}
				}()
				return apierror.New(apierror.UpstreamError, "the upstream refused")
			})
			rec := serve(t, h, newRequest(buildForm(t, parts...), formType, true))
			checkError(t, rec, 502, apierror.UpstreamError, "refused")
			if err := <-pumped; err != errRequestEnded && err != io.EOF {
				t.Errorf("the pump ended with %v", err)
			}
		})
	}
}

// Interceptors receive through RecvMsg: they get their own copy of each data message, which
// the next message does not overwrite.
func TestRecvMsgCopies(t *testing.T) {
	t.Parallel()
	f := file("file", "a.mp3", "audio/mpeg", 3*chunkSize, 1)
	var first, second []byte
	h := newHandler(t, "audio.transcriptions", func(s corev1.CoreService_ForwardServer) error {
		gs := &grpc.GenericServerStream[corev1.ForwardRequest, corev1.ForwardResponse]{ServerStream: s}
		for _, keep := range []*[]byte{nil, nil, &first, &second} { // head, part, data, data
			m, err := gs.Recv()
			if err != nil {
				return err
			}
			if keep != nil {
				*keep = m.GetData()
			}
		}
		for {
			if _, err := gs.Recv(); err == io.EOF {
				break
			} else if err != nil {
				return err
			}
		}
		if err := gs.SendMsg(respHead(200, "application/json")); err != nil {
			return err
		}
		return gs.SendMsg(respData("{}"))
	})
	rec := serve(t, h, newRequest(buildForm(t, f, field("model", "whisper-1")), formType, false))
	if rec.Code != 200 || rec.Body.String() != "{}" {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if !bytes.Equal(first, f.body[:chunkSize]) || !bytes.Equal(second, f.body[chunkSize:2*chunkSize]) {
		t.Error("a data message kept through RecvMsg was overwritten")
	}
}

// Over a real connection: an upload sent chunked, the answer streamed back piece by piece
// (the client reads each piece before core sends the next, which only works if each was
// flushed), and an oversize chunked upload refused with 413.
func TestOverHTTP(t *testing.T) {
	t.Parallel()
	read := make(chan struct{})
	pieces := []string{"first audio", "second audio"}
	speech := newHandler(t, "audio.speech", func(s corev1.CoreService_ForwardServer) error {
		if err := receive(s).err; err != nil {
			return err
		}
		if err := s.Send(respHead(200, "audio/mpeg")); err != nil {
			return err
		}
		for _, p := range pieces {
			if err := s.Send(respData(p)); err != nil {
				return err
			}
			<-read
		}
		return nil
	})
	upload := &fakeCore{answer: jsonAnswer()}
	transcriptions := newHandler(t, "audio.transcriptions", upload.forward)
	transcriptions.Limit = 300_000
	mux := http.NewServeMux()
	mux.Handle("/speech", speech)
	mux.Handle("/transcriptions", transcriptions)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}

	post := func(path, contentType string, body []byte) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, io.MultiReader(bytes.NewReader(body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Authorization", goodKey)
		req.Header.Set("X-Request-Id", requestID)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	t.Run("streamed speech", func(t *testing.T) {
		resp := post("/speech", "application/json", []byte(speechBody))
		defer resp.Body.Close()
		for _, p := range pieces {
			buf := make([]byte, len(p))
			if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != p {
				t.Fatalf("read %q, %v; want %q", buf, err, p)
			}
			read <- struct{}{}
		}
		if rest, _ := io.ReadAll(resp.Body); len(rest) != 0 {
			t.Errorf("trailing %q", rest)
		}
	})
	t.Run("chunked upload", func(t *testing.T) {
		parts := []part{file("file", "a.mp3", "audio/mpeg", 250_000, 3), field("model", "whisper-1")}
		resp := post("/transcriptions", formType, buildForm(t, parts...))
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != okJSON || resp.Header.Get("X-Request-Cost") != "0.0042" {
			t.Fatalf("status %d %v: %s", resp.StatusCode, resp.Header, body)
		}
		checkForm(t, parts, upload.got)
		// The whole form was read for the head: the hold is for its parts' bytes.
		if upload.got.head.GetBodySize() != 250_000+int64(len("whisper-1")) {
			t.Errorf("body_size %d, want the parts' 250009 bytes", upload.got.head.GetBodySize())
		}
	})
	t.Run("oversize chunked upload", func(t *testing.T) {
		_, body := formOfSize(t, 300_001, false, "file")
		resp := post("/transcriptions", formType, body)
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !bytes.Contains(got, []byte(apierror.PayloadTooLarge)) {
			t.Errorf("status %d: %s", resp.StatusCode, got)
		}
	})
	checkTempDirEmpty(t, transcriptions.TempDir)
}
