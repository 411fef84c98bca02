package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func get(t *testing.T, url string, to Timeouts) (*http.Response, error) {
	t.Helper()
	req, err := NewRequest(context.Background(), url, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	return Do(req, to)
}

func TestDoClassifiesFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		status    int
		body      string
		retryable bool
		message   string // substring; "" = must not contain body text
	}{
		{"rate limit keeps the upstream message", 429, `{"error":{"message":"slow down"}}`, true, "slow down"},
		{"server error is retryable", 503, `{"error":{"message":"overloaded"}}`, true, "overloaded"},
		{"bad request is final", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"bad field"}}`, false, "bad field"},
		{"credential refusal hides the message", 401, `{"error":{"message":"Incorrect API key provided: sk-abc***xyz"}}`, false, ""},
		{"non-JSON body", 502, `<html>bad gateway</html>`, true, "status 502"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			_, err := get(t, srv.URL, Timeouts{})
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not *Error", err)
			}
			if pe.Status != tc.status || pe.Retryable != tc.retryable || pe.Timeout {
				t.Fatalf("got %+v", pe)
			}
			if tc.message == "" {
				if strings.Contains(pe.Message, "sk-") {
					t.Fatalf("credential leaked: %q", pe.Message)
				}
			} else if !strings.Contains(pe.Message, tc.message) {
				t.Fatalf("message %q lacks %q", pe.Message, tc.message)
			}
		})
	}
}

func TestDoTimeouts(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body lets the server notice a closed connection (r.Context ends).
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/slow-headers":
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
		case "/slow-body", "/pause":
			w.WriteHeader(200)
			w.(http.Flusher).Flush() // headers, but no body byte yet
			if r.URL.Path == "/pause" {
				io.WriteString(w, "data: 1\n\n")
				w.(http.Flusher).Flush()
				time.Sleep(150 * time.Millisecond) // shorter than idle: normal
				io.WriteString(w, "data: 2\n\n")
				w.(http.Flusher).Flush()
			}
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
		}
	}))
	t.Cleanup(srv.Close) // subtests run in parallel after this function returns
	// Idle is well above the 150 ms pause: on a loaded machine the pause itself may stretch.
	to := Timeouts{FirstByte: 100 * time.Millisecond, Idle: time.Second}

	t.Run("no headers within first byte", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		_, err := get(t, srv.URL+"/slow-headers", to)
		var pe *Error
		if !errors.As(err, &pe) || !pe.Timeout || !pe.Retryable {
			t.Fatalf("got %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("took %v", d)
		}
	})
	t.Run("headers but no body byte within first byte", func(t *testing.T) {
		t.Parallel()
		resp, err := get(t, srv.URL+"/slow-body", to)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		var pe *Error
		if !errors.As(err, &pe) || !pe.Timeout || !pe.Retryable {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a pause shorter than idle is fine, a longer one is not retryable", func(t *testing.T) {
		t.Parallel()
		resp, err := get(t, srv.URL+"/pause", to)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		var pe *Error
		if !errors.As(err, &pe) || !pe.Timeout || pe.Retryable {
			t.Fatalf("got %v", err)
		}
		if string(got) != "data: 1\n\ndata: 2\n\n" {
			t.Fatalf("body before the stall: %q", got)
		}
	})
	t.Run("connection refused is retryable", func(t *testing.T) {
		t.Parallel()
		_, err := get(t, "http://127.0.0.1:1/", to)
		var pe *Error
		if !errors.As(err, &pe) || !pe.Retryable || pe.Timeout {
			t.Fatalf("got %v", err)
		}
	})
}

func TestPublicModel(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, up, pub, want string }{
		{`{"id":"x","model":"up-gpt","choices":[]}`, "up-gpt", "gpt", `{"id":"x","model":"gpt","choices":[]}`},
		{`{"model":"same"}`, "same", "same", `{"model":"same"}`},
		{`{"model":"up-gpt-2025-08-07"}`, "up-gpt", "gpt", `{"model":"gpt"}`},
	}
	for _, tc := range cases {
		if got := string(PublicModel([]byte(tc.in), tc.up, tc.pub)); got != tc.want {
			t.Errorf("PublicModel(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestSetModelKeepsOtherFields(t *testing.T) {
	t.Parallel()
	got, err := SetModel([]byte(`{"model":"pub","x":{"y":[1,2]},"messages":[]}`), "up")
	if err != nil || string(got) != `{"model":"up","x":{"y":[1,2]},"messages":[]}` {
		t.Fatalf("%s %v", got, err)
	}
	if _, err := SetModel([]byte(`[1]`), "up"); err == nil {
		t.Fatal("a non-object body was accepted")
	}
}

// slowReader yields n pieces with a pause before each.
type slowReader struct {
	n     int
	pause time.Duration
}

func (s *slowReader) Read(p []byte) (int, error) {
	if s.n == 0 {
		return 0, io.EOF
	}
	s.n--
	time.Sleep(s.pause)
	return copy(p, "chunk"), nil
}

// An upload that takes longer than the first-byte timeout is not a timeout; an upstream that
// stays silent after the upload's last byte is.
func TestDoUploadTimesFromTheLastByte(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/silent" {
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
			return
		}
		fmt.Fprintf(w, "%d", n)
	}))
	t.Cleanup(srv.Close)
	to := Timeouts{FirstByte: 150 * time.Millisecond, Idle: time.Second}
	post := func(path string) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, http.NoBody)
		if err != nil {
			t.Fatal(err)
		}
		// Eight pieces 60 ms apart: about 480 ms of upload, three first-byte timeouts long.
		return DoUpload(req, &slowReader{n: 8, pause: 60 * time.Millisecond}, to)
	}
	resp, err := post("/echo")
	if err != nil {
		t.Fatalf("a slow upload failed: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != "40" {
		t.Errorf("upstream read %s bytes, want 40", got)
	}
	_, err = post("/silent")
	var pe *Error
	if !errors.As(err, &pe) || !pe.Timeout {
		t.Fatalf("a silent upstream after the upload: got %v, want a timeout", err)
	}
}

func TestPublicAnswerModel(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"compact", `{"data":[],"model":"up","usage":{}}`, `{"data":[],"model":"pub","usage":{}}`},
		{"spaced", "{\"model\" :\n \"up-2024\"}", "{\"model\" :\n \"pub\"}"},
		{"nested model keys are not the answer's", `{"data":[{"model":"x"}],"model":"up"}`, `{"data":[{"model":"x"}],"model":"pub"}`},
		{"no model", `{"data":[]}`, `{"data":[]}`},
		{"a model that is not a string", `{"model":null}`, `{"model":null}`},
	}
	for _, tc := range cases {
		got := PublicAnswerModel([]byte(tc.in), "up", "pub")
		if string(got) != tc.want {
			t.Errorf("%s: got %s; want %s", tc.name, got, tc.want)
		}
	}
	if got := PublicAnswerModel([]byte(`{"model":"same"}`), "same", "same"); string(got) != `{"model":"same"}` {
		t.Errorf("same model rewritten: %s", got)
	}
}

// A provider API never redirects a POST; following one would resend the request and its
// credentials to wherever the Location points, so the redirect is the upstream's answer.
func TestDoFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, `{}`)
	}))
	defer elsewhere.Close()
	// The target answers when asked directly: the check below can see a followed redirect.
	resp, err := get(t, elsewhere.URL, Timeouts{})
	if err != nil || hits.Load() != 1 {
		t.Fatalf("direct call: %v, %d hits", err, hits.Load())
	}
	resp.Body.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	req, err := NewRequest(context.Background(), srv.URL, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	SetBearer(req.Header, "sk-upstream")
	_, err = Do(req, Timeouts{})
	var pe *Error
	if !errors.As(err, &pe) || pe.Status != http.StatusTemporaryRedirect || pe.Retryable {
		t.Fatalf("got %v, want a final *Error with status 307", err)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("the redirect was followed: the other server had %d requests", n)
	}
}

// A request NewRequest made is sent under the call it carries (its answer's body is that
// call's), and follows the client's context; sent a second time, it gets a call of its own
// under the client's context, not under the first call, whose end does not reach it.
func TestNewRequestCarriesItsCall(t *testing.T) {
	t.Parallel()
	var bodies atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, _ := io.ReadAll(r.Body); string(b) == `{"n":1}` {
			bodies.Add(1)
		}
		io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := NewRequest(ctx, srv.URL, []byte(`{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	first, ok := req.Context().(*call)
	if !ok || first.body == nil {
		t.Fatalf("the request's context is %T, not a call NewRequest made", req.Context())
	}
	resp, err := Do(req, Timeouts{})
	if err != nil {
		t.Fatal(err)
	}
	if tb, ok := resp.Body.(*timedBody); !ok || tb != first.body {
		t.Fatalf("the answer's body %T is not the request's call's", resp.Body)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close() // ends the first call
	if first.Err() == nil {
		t.Fatal("closing the answer did not end its call")
	}
	// As a retry would send it: the body reopened.
	if req.Body, err = req.GetBody(); err != nil {
		t.Fatal(err)
	}
	resp2, err := Do(req, Timeouts{})
	if err != nil {
		t.Fatalf("sent again: %v", err)
	}
	second := resp2.Body.(*timedBody)
	if second == first.body || second.call.parent != ctx {
		t.Fatalf("sent again under %v, not a call of its own under the client's context", second.call.parent)
	}
	if n := bodies.Load(); n != 2 {
		t.Fatalf("the upstream read the body %d times, want 2", n)
	}
	if second.call.Err() != nil {
		t.Fatal("the second call ended before the client did")
	}
	cancel()
	select {
	case <-second.call.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the client's cancellation did not reach the second call")
	}
	resp2.Body.Close()
}

// TestNewRequestIsNetHTTPs: a request NewRequest copies from its URL's template is the one
// http.NewRequestWithContext makes (URL, Host, body framing), with headers of its own: an
// adapter's credential set on one request is not on the next to the same URL.
func TestNewRequestIsNetHTTPs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name, url string
		body      []byte
	}{
		{"body", "http://upstream.test:8080/v1/chat/completions?x=1", []byte(`{"n":1}`)},
		{"empty", "https://upstream.test/v1/models", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := http.NewRequestWithContext(ctx, http.MethodPost, tc.url, bytes.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			a, err := NewRequest(ctx, tc.url, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			SetBearer(a.Header, "secret-a")
			b, err := NewRequest(ctx, tc.url, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if a.URL != b.URL {
				t.Error("two requests to one URL parsed it twice")
			}
			if b.Header.Get("Authorization") != "" {
				t.Fatalf("the second request carries the first's credential: %v", b.Header)
			}
			for _, r := range []*http.Request{a, b} {
				if r.Method != want.Method || *r.URL != *want.URL || r.Host != want.Host || r.ContentLength != want.ContentLength ||
					r.Proto != want.Proto || (r.Body == http.NoBody) != (want.Body == http.NoBody) {
					t.Fatalf("request %+v, net/http's %+v", r, want)
				}
				if got := r.Header.Get(HeaderContentType); got != "application/json" {
					t.Fatalf("Content-Type %q", got)
				}
				rc, err := r.GetBody()
				if err != nil {
					t.Fatal(err)
				}
				if got, _ := io.ReadAll(rc); !bytes.Equal(got, tc.body) {
					t.Fatalf("GetBody reads %q, want %q", got, tc.body)
				}
			}
		})
	}
	if _, err := NewRequest(ctx, "http://bad host/", nil); err == nil {
		t.Fatal("a URL net/http refuses was taken")
	}
}
