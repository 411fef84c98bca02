package media

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
)

const speechBody = `{"model":"tts-1","input":"hi","voice":"alloy"}`

// A JSON answer is held until its usage arrives, so that the cost travels in the headers,
// and goes out then, before core's call returns.
func TestHeldAnswer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		answer   []*corev1.ForwardResponse
		status   int
		ctype    string
		cost     string
		currency string
		body     string
	}{
		{"JSON with its cost", jsonAnswer(), 200, "application/json", "0.0042", "EUR", okJSON},
		{"usage without a cost: nothing charged, no cost headers",
			[]*corev1.ForwardResponse{respHead(200, "application/json"), respData(`{"results":[]}`), respUsage("", "")},
			200, "application/json", "", "", `{"results":[]}`},
		{"no usage at all: written when the call returns",
			[]*corev1.ForwardResponse{respHead(200, "application/json"), respData(`{"results":[]}`)},
			200, "application/json", "", "", `{"results":[]}`},
		{"a text transcript is held too",
			[]*corev1.ForwardResponse{respHead(200, "text/plain; charset=utf-8"), respData("hello "), respData("world\n"), respUsage("0.01", "USD")},
			200, "text/plain; charset=utf-8", "0.01", "USD", "hello world\n"},
		{"the upstream's status goes through",
			[]*corev1.ForwardResponse{respHead(201, "application/json"), respData(`{}`), respUsage("1", "USD")},
			201, "application/json", "1", "USD", `{}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			h := newHandler(t, "rerank", func(s corev1.CoreService_ForwardServer) error {
				if err := receive(s).err; err != nil {
					return err
				}
				for _, m := range tc.answer {
					if rec.Code != 200 || rec.Body.Len() != 0 {
						t.Errorf("written before the usage: %d %q", rec.Code, rec.Body)
					}
					if err := s.Send(m); err != nil {
						t.Fatalf("Send: %v", err)
					}
				}
				if _, isUsage := tc.answer[len(tc.answer)-1].GetMsg().(*corev1.ForwardResponse_Usage); isUsage {
					if rec.Body.String() != tc.body {
						t.Errorf("not written at the usage: %q", rec.Body)
					}
					if err := s.Send(respData("late")); err == nil {
						t.Error("Send after the answer was written succeeded")
					}
				}
				return nil
			})
			h.ServeHTTP(rec, newRequest([]byte(`{"model":"m"}`), "application/json", false))
			checkTempDirEmpty(t, h.TempDir)
			hd := rec.Header()
			if rec.Code != tc.status || rec.Body.String() != tc.body || hd.Get("Content-Type") != tc.ctype ||
				hd.Get("X-Request-Cost") != tc.cost || hd.Get("X-Request-Currency") != tc.currency {
				t.Errorf("status %d headers %v body %q", rec.Code, hd, rec.Body)
			}
		})
	}
}

// Speech audio is written and flushed as each piece arrives (other-endpoints.md: "chunked as
// generated"), without cost headers.
func TestBinaryAnswerStreams(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	pieces := []string{"ID3\x04\x00", "\xff\xfb\x90\x00more", "end"}
	h := newHandler(t, "audio.speech", func(s corev1.CoreService_ForwardServer) error {
		if err := receive(s).err; err != nil {
			return err
		}
		if err := s.Send(respHead(200, "audio/mpeg")); err != nil {
			return err
		}
		sent := ""
		for _, p := range pieces {
			rec.Flushed = false
			if err := s.Send(respData(p)); err != nil {
				return err
			}
			sent += p
			if rec.Body.String() != sent || !rec.Flushed {
				t.Errorf("after %q: body %q, flushed %t", p, rec.Body, rec.Flushed)
			}
		}
		return s.Send(respUsage("0.015", "USD"))
	})
	h.ServeHTTP(rec, newRequest([]byte(speechBody), "application/json", false))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "audio/mpeg" || rec.Header().Get("X-Request-Cost") != "" {
		t.Errorf("status %d headers %v", rec.Code, rec.Header())
	}
}

func TestAnswerErrors(t *testing.T) {
	t.Parallel()
	insufficient := apierror.New(apierror.InsufficientBalance, "the balance is too low")
	cases := []struct {
		name    string
		family  string
		answer  []*corev1.ForwardResponse
		err     error
		status  int
		code    string
		message string
		body    string // the partial answer, when no envelope can be written
	}{
		{"core refuses before the head", "rerank", nil, insufficient, 402, apierror.InsufficientBalance, "too low", ""},
		{"core's error as a gRPC status", "moderations", nil,
			apistatus.ToStatus(apierror.New(apierror.ModelNotAllowed, "not for this key"), requestID), 403, apierror.ModelNotAllowed, "not for this key", ""},
		{"a plain error", "rerank", nil, errors.New("boom"), 500, apierror.Internal, "", ""},
		{"nothing at all", "images.generations", nil, nil, 502, apierror.UpstreamError, "answered nothing", ""},
		{"a held answer failing before its usage is not sent", "images.generations",
			[]*corev1.ForwardResponse{respHead(200, "application/json"), respData(`{"data":[`)},
			apierror.New(apierror.UpstreamTimeout, "the upstream stalled"), 504, apierror.UpstreamTimeout, "stalled", ""},
		{"a binary answer failing before its first byte", "audio.speech",
			[]*corev1.ForwardResponse{respHead(200, "audio/mpeg")},
			apierror.New(apierror.UpstreamError, "reset"), 502, apierror.UpstreamError, "reset", ""},
		{"an empty binary answer", "audio.speech", []*corev1.ForwardResponse{respHead(200, "audio/mpeg")}, nil, 200, "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHandler(t, tc.family, func(s corev1.CoreService_ForwardServer) error {
				if err := receive(s).err; err != nil {
					return err
				}
				for _, m := range tc.answer {
					if err := s.Send(m); err != nil {
						t.Fatalf("Send: %v", err)
					}
				}
				return tc.err
			})
			body := `{"model":"m","input":"x","voice":"alloy"}`
			rec := serve(t, h, newRequest([]byte(body), "application/json", false))
			if tc.code != "" {
				checkError(t, rec, tc.status, tc.code, tc.message)
				return
			}
			if rec.Code != tc.status || rec.Body.String() != tc.body {
				t.Errorf("status %d body %q", rec.Code, rec.Body)
			}
		})
	}
}

// A binary answer is complete only with its usage, which core sends once the charge is
// committed: an answer that began without it is broken off (http.ErrAbortHandler), so that the
// client sees a failed transfer, never a whole-looking file it was not charged for.
func TestBinaryAnswerWithoutUsageIsBrokenOff(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		answer []*corev1.ForwardResponse
		err    error
		cut    bool
	}{
		{"charged: usage after the audio", []*corev1.ForwardResponse{respHead(200, "audio/mpeg"), respData("ID3"), respUsage("1.5", "RUB")}, nil, false},
		{"the upstream broke off: no usage, no error", []*corev1.ForwardResponse{respHead(200, "audio/mpeg"), respData("ID3")}, nil, true},
		{"the charge failed: core's error after the audio", []*corev1.ForwardResponse{respHead(200, "audio/mpeg"), respData("ID3")},
			apierror.New(apierror.Unavailable, "the charge could not be recorded"), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHandler(t, "audio.speech", func(s corev1.CoreService_ForwardServer) error {
				if err := receive(s).err; err != nil {
					return err
				}
				for _, m := range tc.answer {
					if err := s.Send(m); err != nil {
						t.Fatalf("Send: %v", err)
					}
				}
				return tc.err
			})
			rec := httptest.NewRecorder()
			var aborted any
			func() {
				defer func() { aborted = recover() }()
				h.ServeHTTP(rec, newRequest([]byte(speechBody), "application/json", false))
			}()
			checkTempDirEmpty(t, h.TempDir)
			if rec.Body.String() != "ID3" {
				t.Errorf("body %q, want the audio sent so far", rec.Body)
			}
			if tc.cut && aborted != http.ErrAbortHandler {
				t.Errorf("handler ended with %v, want it to break the response off", aborted)
			}
			if !tc.cut && aborted != nil {
				t.Errorf("a charged answer was broken off: %v", aborted)
			}
		})
	}

	// Over a real connection the client's read fails instead of ending cleanly.
	for _, charged := range []bool{true, false} {
		h := newHandler(t, "audio.speech", func(s corev1.CoreService_ForwardServer) error {
			if err := receive(s).err; err != nil {
				return err
			}
			_ = s.Send(respHead(200, "audio/mpeg"))
			_ = s.Send(respData("ID3"))
			if charged {
				return s.Send(respUsage("1.5", "RUB"))
			}
			return nil
		})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, newRequest([]byte(speechBody), "application/json", false).WithContext(r.Context()))
		}))
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if charged && (err != nil || string(body) != "ID3") {
			t.Errorf("charged answer: %q, %v", body, err)
		}
		if !charged && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("uncharged answer read as %q, %v; want io.ErrUnexpectedEOF", body, err)
		}
	}
}

// Send's error tells core the client is gone; misuse is an error too, not a panic.
func TestSendRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		cancel  bool
		before  []*corev1.ForwardResponse
		message *corev1.ForwardResponse
	}{
		{"the client has gone", true, nil, respHead(200, "application/json")},
		{"data before the head", false, nil, respData("x")},
		{"usage before the head", false, nil, respUsage("1", "USD")},
		{"a second head", false, []*corev1.ForwardResponse{respHead(200, "application/json")}, respHead(200, "application/json")},
		{"an empty message", false, nil, &corev1.ForwardResponse{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHandler(t, "rerank", func(s corev1.CoreService_ForwardServer) error {
				for _, m := range tc.before {
					if err := s.Send(m); err != nil {
						t.Fatalf("Send: %v", err)
					}
				}
				if err := s.Send(tc.message); err == nil {
					t.Error("Send succeeded")
				}
				return nil
			})
			r := newRequest([]byte(`{"model":"m"}`), "application/json", false)
			if tc.cancel {
				ctx, cancel := context.WithCancel(r.Context())
				cancel()
				r = r.WithContext(ctx)
			}
			serve(t, h, r)
		})
	}
}

var _ http.Handler = (*Handler)(nil)
