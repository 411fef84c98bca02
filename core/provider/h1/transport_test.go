package h1

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Each framing yields its body, and the connection serves the next request exactly when
// the framing and the connection header allow it.
func TestFraming(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, method, answer string
		serverCloses         bool
		body                 string
		contentLength        int64
		reused               bool
		header               http.Header // expected values of these keys
	}{
		{name: "content-length", answer: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
			body: "hello", contentLength: 5, reused: true},
		{name: "chunked, extensions and trailers", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: a\r\n\r\n",
			body: "hello world", contentLength: -1, reused: true},
		{name: "chunked overrides content-length", answer: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
			body: "abc", contentLength: -1, reused: true, header: http.Header{"Content-Length": nil}},
		{name: "close-delimited", answer: "HTTP/1.1 200 OK\r\n\r\nhello", serverCloses: true,
			body: "hello", contentLength: -1},
		{name: "connection close", answer: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
			body: "ok", contentLength: 2},
		{name: "HTTP/1.0 closes", answer: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
			body: "ok", contentLength: 2},
		{name: "HTTP/1.0 keep-alive", answer: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
			body: "ok", contentLength: 2, reused: true},
		{name: "204 has no body", answer: "HTTP/1.1 204 No Content\r\n\r\n", reused: true},
		{name: "304 has no body", answer: "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", reused: true},
		{name: "HEAD has no body", method: http.MethodHead, answer: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n",
			contentLength: 10, reused: true},
		{name: "empty content-length", answer: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", reused: true},
		{name: "100 continue skipped", answer: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
			body: "ok", contentLength: 2, reused: true},
		{name: "103 early hints skipped", answer: "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nX-Final: 1\r\nContent-Length: 2\r\n\r\nok",
			body: "ok", contentLength: 2, reused: true, header: http.Header{"Link": nil, "X-Final": {"1"}}},
		{name: "headers canonical, repeated, folded, bare LF", answer: "HTTP/1.1 200 OK\nx-multi: a\r\nX-MULTI:  b \r\nx-folded: one\r\n  two\r\nContent-Length: 2\r\n\r\nok",
			body: "ok", contentLength: 2, reused: true, header: http.Header{"X-Multi": {"a", "b"}, "X-Folded": {"one two"}}},
		{name: "unusual reason", answer: "HTTP/1.1 200 Fine Thanks\r\nContent-Length: 2\r\n\r\nok",
			body: "ok", contentLength: 2, reused: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := scripted(t, tc.answer, tc.serverCloses)
			tr, dials := counted(t)
			for i := range 2 {
				method := cmpOr(tc.method, http.MethodGet)
				req, _ := http.NewRequest(method, srv.url()+"/x", nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(b) != tc.body || resp.ContentLength != tc.contentLength {
					t.Fatalf("request %d: body %q (%d) %v, want %q (%d)", i, b, resp.ContentLength, err, tc.body, tc.contentLength)
				}
				if resp.StatusCode/100 != 2 && resp.StatusCode != 304 {
					t.Fatalf("status %s", resp.Status)
				}
				if strings.Contains(tc.name, "reason") && resp.Status != "200 Fine Thanks" {
					t.Fatalf("status %q", resp.Status)
				}
				for k, want := range tc.header {
					if got := resp.Header[k]; !reflect.DeepEqual(got, want) {
						t.Fatalf("header %s = %q, want %q (all: %v)", k, got, want, resp.Header)
					}
				}
				if resp.Close == tc.reused {
					t.Fatalf("resp.Close = %v for a connection reused=%v", resp.Close, tc.reused)
				}
			}
			want := int32(2)
			if tc.reused {
				want = 1
			}
			if n := dials.Load(); n != want {
				t.Fatalf("two requests dialled %d times, want %d", n, want)
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// A broken answer is an error (never a panic), and its connection is never reused: each
// request dials anew. The good answer of the same shape first shows the test can pass.
func TestMalformedAnswers(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 5000)
	cases := []struct {
		name, answer string
		atBody       bool // the head is fine; the body read fails
	}{
		{"not HTTP", "SMTP ready\r\n\r\n", false},
		{"HTTP/2 status line", "HTTP/2.0 200 OK\r\n\r\n", false},
		{"four-digit status", "HTTP/1.1 2000 OK\r\n\r\n", false},
		{"status 099", "HTTP/1.1 099 Odd\r\n\r\n", false},
		{"letters in status", "HTTP/1.1 2x0 OK\r\n\r\n", false},
		{"header without colon", "HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", false},
		{"space in header name", "HTTP/1.1 200 OK\r\nBad Key: v\r\n\r\n", false},
		{"space before colon", "HTTP/1.1 200 OK\r\nKey : v\r\n\r\n", false},
		{"control byte in value", "HTTP/1.1 200 OK\r\nKey: a\x00b\r\n\r\n", false},
		{"fold before any header", "HTTP/1.1 200 OK\r\n folded\r\n\r\n", false},
		{"negative length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", false},
		{"conflicting lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", false},
		{"huge length", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", false},
		{"unknown transfer coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", false},
		{"switching protocols", "HTTP/1.1 101 Switching Protocols\r\n\r\n", false},
		{"too many 1xx", strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 7) + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false},
		{"head cut short", "HTTP/1.1 200 OK\r\nContent-Le", false},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", true},
		{"chunk size overflow", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nhello\r\n0\r\n\r\n", true},
		{"chunk size line too long", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;" + long + "\r\nhello\r\n0\r\n\r\n", true},
		{"chunk without CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n", true},
		{"chunked cut short", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", true},
		{"length cut short", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhel", true},
	}
	// The positive case: the same server and client with a good answer reuse the connection.
	good := scripted(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false)
	tr, dials := counted(t)
	for range 2 {
		if _, body, err := exchange(t, tr, good.url()); err != nil || body != "ok" {
			t.Fatalf("good answer: %q %v", body, err)
		}
	}
	if dials.Load() != 1 {
		t.Fatalf("a good answer's connection was not reused: %d dials", dials.Load())
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The server keeps the connection open after the bad answer (except where it
			// is cut short), so that only the client's refusal keeps it from reuse.
			srv := scripted(t, tc.answer, strings.Contains(tc.name, "cut short"))
			tr, dials := counted(t)
			for i := range 2 {
				resp, body, err := exchange(t, tr, srv.url())
				if err == nil {
					t.Fatalf("request %d: no error; status %v, body %q", i, resp.Status, body)
				}
				if (resp != nil) != tc.atBody {
					t.Fatalf("request %d: failed at the body %v, want %v: %v", i, resp != nil, tc.atBody, err)
				}
			}
			if n := dials.Load(); n != 2 {
				t.Fatalf("two broken answers used %d connections, want 2", n)
			}
		})
	}
}

// A head past 1 MiB is refused; one just under it is read.
func TestOversizeHeader(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		size int
		ok   bool
	}{
		{"just under the bound", MaxHeaderBytes - 1000, true},
		{"one value past the bound", MaxHeaderBytes + 10, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			answer := "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("b", tc.size) + "\r\nContent-Length: 2\r\n\r\nok"
			srv := scripted(t, answer, false)
			tr, _ := counted(t)
			resp, body, err := exchange(t, tr, srv.url())
			if tc.ok {
				if err != nil || body != "ok" || len(resp.Header.Get("X-Big")) != tc.size {
					t.Fatalf("%v %q", err, body)
				}
				return
			}
			if !errors.Is(err, errHeaderTooLarge) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// Keep-alive: sequential requests share one connection, which the trace sees go back to
// the pool each time; a body closed before its end costs its connection.
func TestKeepAliveAndEarlyClose(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, b)
		if r.URL.Path == "/big" {
			w.Write(bytes.Repeat([]byte("x"), 64<<10))
		}
	}))
	defer srv.Close()
	tr, dials := counted(t)
	for i := range 5 {
		put := make(chan error, 1)
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{PutIdleConn: func(err error) { put <- err }})
		resp, err := tr.RoundTrip(post(t, ctx, srv.URL+"/a", "body"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "POST /a body" {
			t.Fatalf("%d: %q", i, b)
		}
		if err := <-put; err != nil {
			t.Fatalf("%d: not pooled: %v", i, err)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("5 requests dialled %d times", n)
	}
	resp, err := tr.RoundTrip(post(t, context.Background(), srv.URL+"/big", ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := resp.Body.Read(make([]byte, 1)); err == nil {
		t.Fatal("a closed body still reads")
	}
	if _, body, err := exchange(t, tr, srv.URL+"/c"); err != nil || body != `POST /c {"a":1}` {
		t.Fatalf("%q %v", body, err)
	}
	if n := dials.Load(); n != 2 {
		t.Fatalf("after a body closed early: %d dials, want 2", n)
	}
}

// closingServer answers each connection's first request in full (without Connection:
// close), then closes the connection, as a server whose idle timeout ran out; it counts the
// requests it read and signals each close.
func closingServer(t *testing.T) (*rawServer, *atomic.Int32, chan struct{}) {
	requests := new(atomic.Int32)
	closed := make(chan struct{}, 10)
	srv := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		_, body, ok := readRequest(br)
		if !ok {
			return
		}
		requests.Add(1)
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		c.Close()
		closed <- struct{}{}
	})
	return srv, requests, closed
}

// A reused connection the server closed while idle fails before any answer byte: the
// request is sent again, once, on a fresh connection, with its body, when the body can be
// sent again (GetBody); one that cannot fails.
func TestStaleIdleConnectionIsRetried(t *testing.T) {
	t.Parallel()
	srv, requests, closed := closingServer(t)
	tr, dials := counted(t)
	tr.staleCheckAfter = time.Hour // the retry, not the peek before reuse, finds the close
	if _, body, err := exchange(t, tr, srv.url()); err != nil || body != `{"a":1}` {
		t.Fatalf("%q %v", body, err)
	}
	<-closed
	req := post(t, context.Background(), srv.url(), `{"again":true}`)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("the stale connection's request was not retried: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != `{"again":true}` || dials.Load() != 2 || requests.Load() != 2 {
		t.Fatalf("body %q, %d dials, %d requests", b, dials.Load(), requests.Load())
	}
	<-closed

	// The same without GetBody: not sent again.
	if _, _, err := exchange(t, tr, srv.url()); err != nil {
		t.Fatal(err)
	}
	<-closed
	req = post(t, context.Background(), srv.url(), `{"once":true}`)
	req.GetBody = nil
	if _, err := tr.RoundTrip(req); err == nil {
		t.Fatal("a request whose body cannot be sent again was retried")
	}
	if dials.Load() != 3 {
		t.Fatalf("%d dials, want 3", dials.Load())
	}
}

// A connection idle past staleCheckAfter and closed by the server is found closed by the
// peek before it is used; an open one is not. One peeker checks it each time, as a pooled
// connection's does before each reuse.
func TestAlivePeek(t *testing.T) {
	t.Parallel()
	srv, _, closed := closingServer(t)
	c, err := net.Dial("tcp", srv.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var p peeker
	if !p.alive(c) {
		t.Fatal("an open connection is not alive")
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-closed
	// The answer is unread: data unasked also makes the connection unusable.
	if p.alive(c) {
		t.Fatal("a closed connection with data is alive")
	}
	io.Copy(io.Discard, c)
	if p.alive(c) {
		t.Fatal("a connection closed by the server is alive")
	}
}

// Once a byte of the answer has arrived, a failure is never retried: the server may have
// acted on the request.
func TestNoRetryAfterAnAnswerByte(t *testing.T) {
	t.Parallel()
	requests := new(atomic.Int32)
	srv := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for i := 0; ; i++ {
			if _, _, ok := readRequest(br); !ok {
				return
			}
			requests.Add(1)
			if i == 0 {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				continue
			}
			io.WriteString(c, "HTTP/1.1 200")
			return
		}
	})
	tr, dials := counted(t)
	if _, body, err := exchange(t, tr, srv.url()); err != nil || body != "ok" {
		t.Fatalf("%q %v", body, err)
	}
	if _, _, err := exchange(t, tr, srv.url()); err == nil {
		t.Fatal("a cut answer is no error")
	}
	if dials.Load() != 1 || requests.Load() != 2 {
		t.Fatalf("%d dials, %d requests: the cut answer was retried", dials.Load(), requests.Load())
	}
}

// The request's context ends a dial, a wait for the head and a wait for the body at once,
// with its cause, and closes the connection (the server sees it go).
func TestCancellation(t *testing.T) {
	t.Parallel()
	cause := errors.New("first-byte timeout")
	cases := []struct {
		name  string
		phase string // where the server stalls
	}{
		{"during the dial", "dial"},
		{"during the TLS handshake", "handshake"},
		{"waiting for the head", "head"},
		{"waiting for the body", "body"},
		{"waiting for a chunk", "chunk"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gone := make(chan bool, 1)
			srv := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
				if tc.phase == "handshake" { // a server that never answers the ClientHello
					gone <- waitClosed(c, br, 5*time.Second)
					return
				}
				if _, _, ok := readRequest(br); !ok {
					return
				}
				switch tc.phase {
				case "body":
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
				case "chunk":
					io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
				}
				gone <- waitClosed(c, br, 5*time.Second)
			})
			tr, _ := counted(t)
			if tc.phase == "dial" {
				// A dial that hangs (a black-holed address) until its context ends.
				tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
					<-ctx.Done()
					return nil, ctx.Err()
				}
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			time.AfterFunc(100*time.Millisecond, func() { cancel(cause) })
			start := time.Now()
			u := srv.url()
			if tc.phase == "handshake" {
				u = strings.Replace(u, "http:", "https:", 1)
			}
			resp, err := tr.RoundTrip(post(t, ctx, u, "{}"))
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				if tc.phase == "dial" || tc.phase == "head" || tc.phase == "handshake" {
					t.Fatal("an answer came")
				}
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("took %v", d)
			}
			if !errors.Is(err, cause) {
				t.Fatalf("error %v does not carry the cause", err)
			}
			if tc.phase != "dial" {
				select {
				case ok := <-gone:
					if !ok {
						t.Fatal("the connection stayed open")
					}
				case <-time.After(5 * time.Second):
					t.Fatal("the server never saw the connection end")
				}
			}
		})
	}
}

// TLS: the configured roots verify httptest's certificate, the connection negotiates
// http/1.1 and is reused; without those roots the handshake fails.
func TestTLS(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %v", r.Proto, r.TLS != nil)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	srv.StartTLS()
	defer srv.Close()
	tr, dials := counted(t)
	tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	for range 3 {
		resp, body, err := exchange(t, tr, srv.URL)
		if err != nil || body != "HTTP/1.1 true" {
			t.Fatalf("%q %v", body, err)
		}
		if resp.TLS == nil || resp.TLS.NegotiatedProtocol != "http/1.1" {
			t.Fatalf("TLS state %+v", resp.TLS)
		}
	}
	if dials.Load() != 1 {
		t.Fatalf("%d dials", dials.Load())
	}
	// A new connection resumes the session.
	tr.CloseIdleConnections()
	resp, _, err := exchange(t, tr, srv.URL)
	if err != nil || dials.Load() != 2 || !resp.TLS.DidResume {
		t.Fatalf("%v, %d dials, resumed %v", err, dials.Load(), resp != nil && resp.TLS.DidResume)
	}
	plain, _ := counted(t)
	if _, _, err := exchange(t, plain, srv.URL); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("an unknown certificate was accepted: %v", err)
	}
}

// Compression as net/http does it: Accept-Encoding: gzip is added when the request names
// none, a gzip answer is decompressed (no Content-Encoding, no length, Uncompressed); a
// request that names its encoding gets the answer as sent. Both transports, same answers.
func TestCompressionAsNetHTTP(t *testing.T) {
	t.Parallel()
	payload := strings.Repeat(`{"usage":{"prompt_tokens":12}}`, 50)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Asked", r.Header.Get("Accept-Encoding"))
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") || r.URL.Path == "/plain" {
			io.WriteString(w, payload)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, payload)
		zw.Close()
	}))
	defer srv.Close()
	lean, _ := counted(t)
	std := &http.Transport{}
	defer std.CloseIdleConnections()
	cases := []struct {
		name, path, accept string
	}{
		{"gzip answer", "/", ""},
		{"plain answer", "/plain", ""},
		{"the request names gzip itself", "/", "gzip"},
		{"the request names identity", "/", "identity"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			type seen struct {
				Asked, Encoding, Length string
				ContentLength           int64
				Uncompressed            bool
				Body                    string
			}
			var got [2]seen
			for i, rt := range []http.RoundTripper{std, lean} {
				req := post(t, context.Background(), srv.URL+tc.path, "{}")
				if tc.accept != "" {
					req.Header.Set("Accept-Encoding", tc.accept)
				}
				resp, err := rt.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				body := string(b)
				if len(body) > 20 {
					body = body[:20]
				}
				got[i] = seen{resp.Header.Get("X-Asked"), resp.Header.Get("Content-Encoding"), resp.Header.Get("Content-Length"),
					resp.ContentLength, resp.Uncompressed, body}
			}
			if got[0] != got[1] {
				t.Fatalf("net/http %+v\nh1       %+v", got[0], got[1])
			}
			if tc.name == "gzip answer" && !got[1].Uncompressed {
				t.Fatalf("the gzip case did not compress: %+v", got[1])
			}
		})
	}
}

// What the upstream receives is what net/http would have sent: the same request line,
// Host, headers (User-Agent and Accept-Encoding included), framing and body.
func TestRequestAsNetHTTP(t *testing.T) {
	t.Parallel()
	type received struct {
		Method, URI, Host, Proto string
		Header                   http.Header
		ContentLength            int64
		TransferEncoding         []string
		Close                    bool
		Body                     string
	}
	got := make(chan received, 1)
	srv := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, body, ok := readRequest(br)
			if !ok {
				return
			}
			got <- received{req.Method, req.RequestURI, req.Host, req.Proto, req.Header, req.ContentLength, req.TransferEncoding, req.Close, string(body)}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
		}
	})
	type build func() *http.Request
	mk := func(method, path string, body io.Reader, edit func(*http.Request)) build {
		return func() *http.Request {
			req, err := http.NewRequest(method, srv.url()+path, body)
			if err != nil {
				t.Fatal(err)
			}
			if edit != nil {
				edit(req)
			}
			return req
		}
	}
	cases := []struct {
		name string
		req  func() build
	}{
		{"bytes body, gateway headers", func() build {
			return mk("POST", "/v1/chat/completions?x=1&y=%20", bytes.NewReader([]byte(`{"model":"m"}`)), func(r *http.Request) {
				r.Header["Content-Type"] = []string{"application/json"}
				r.Header["User-Agent"] = []string{"modelgateway/1"}
				r.Header["Authorization"] = []string{"Bearer k"}
				r.Header.Add("X-Multi", "a")
				r.Header.Add("X-Multi", "b")
			})
		}},
		{"GET without body", func() build { return mk("GET", "/v1/models", nil, nil) }},
		{"POST without body", func() build { return mk("POST", "/", nil, nil) }},
		{"DELETE without body", func() build { return mk("DELETE", "/x", nil, nil) }},
		{"unknown length is chunked", func() build {
			return mk("POST", "/u", io.MultiReader(strings.NewReader("abc"), strings.NewReader("defg")), func(r *http.Request) { r.ContentLength = -1 })
		}},
		{"reader body with a length", func() build {
			return mk("PUT", "/p", io.MultiReader(strings.NewReader("abc")), func(r *http.Request) { r.ContentLength = 3 })
		}},
		{"large body", func() build { return mk("POST", "/l", bytes.NewReader(bytes.Repeat([]byte("z"), 100<<10)), nil) }},
		{"empty User-Agent is none", func() build {
			return mk("GET", "/", nil, func(r *http.Request) { r.Header["User-Agent"] = []string{""} })
		}},
		{"Host override, Close", func() build {
			return mk("GET", "/", nil, func(r *http.Request) { r.Host = "example.test"; r.Close = true })
		}},
		{"Accept-Encoding named", func() build {
			return mk("GET", "/", nil, func(r *http.Request) { r.Header.Set("Accept-Encoding", "br") })
		}},
	}
	std := &http.Transport{}
	defer std.CloseIdleConnections()
	lean, _ := counted(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var seen [2]received
			for i, rt := range []http.RoundTripper{std, lean} {
				resp, err := rt.RoundTrip(tc.req()())
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				seen[i] = <-got
			}
			if !reflect.DeepEqual(seen[0], seen[1]) {
				t.Fatalf("net/http sent %+v\nh1 sent       %+v", seen[0], seen[1])
			}
		})
	}
}

// A header value or name that would split the request is refused before anything is sent.
func TestInvalidHeadersAreRefused(t *testing.T) {
	t.Parallel()
	srv := scripted(t, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false)
	tr, dials := counted(t)
	cases := []struct {
		name string
		edit func(*http.Request)
		ok   bool
	}{
		{"a valid header", func(r *http.Request) { r.Header.Set("X-Ok", "fine\tvalue") }, true},
		{"CR LF in a value", func(r *http.Request) { r.Header.Set("X-Bad", "a\r\nInjected: 1") }, false},
		{"space in a name", func(r *http.Request) { r.Header["Bad Name"] = []string{"v"} }, false},
		{"CR LF in Host", func(r *http.Request) { r.Host = "a\r\nb" }, false},
		{"bad method", func(r *http.Request) { r.Method = "GE T" }, false},
	}
	for _, tc := range cases {
		req := post(t, context.Background(), srv.url(), "{}")
		tc.edit(req)
		before := dials.Load()
		resp, err := tr.RoundTrip(req)
		if (err == nil) != tc.ok {
			t.Fatalf("%s: error %v", tc.name, err)
		}
		if err == nil {
			resp.Body.Close()
		} else if dials.Load() != before {
			t.Fatalf("%s: dialled before refusing", tc.name)
		}
	}
}

// countingRT counts the requests it is given.
type countingRT struct{ n atomic.Int32 }

func (c *countingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return &http.Response{StatusCode: 299, Body: http.NoBody, Request: req}, nil
}

// What h1 does not serve goes to the fallback: a proxy, Expect, credentials in the URL.
func TestFallback(t *testing.T) {
	t.Parallel()
	srv := scripted(t, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false)
	fb := &countingRT{}
	proxied := ""
	tr := &Transport{Fallback: fb, Proxy: func(r *http.Request) (*url.URL, error) {
		if r.URL.Host == proxied {
			return url.Parse("http://proxy.test:3128")
		}
		return nil, nil
	}}
	defer tr.CloseIdleConnections()
	host := strings.TrimPrefix(srv.url(), "http://")
	cases := []struct {
		name     string
		url      string
		edit     func(*http.Request)
		fallback bool
	}{
		{"direct", srv.url(), nil, false},
		{"Expect: 100-continue", srv.url(), func(r *http.Request) { r.Header.Set("Expect", "100-continue") }, true},
		{"credentials in the URL", "http://u:p@" + host, nil, true},
		{"a body of unknown length declared as 0", srv.url(), func(r *http.Request) { r.ContentLength = 0 }, true},
		{"another scheme", "ftp://" + host, nil, true},
	}
	for _, tc := range cases {
		before := fb.n.Load()
		req := post(t, context.Background(), tc.url, "{}")
		if tc.edit != nil {
			tc.edit(req)
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		resp.Body.Close()
		if (fb.n.Load() > before) != tc.fallback || (resp.StatusCode == 299) != tc.fallback {
			t.Fatalf("%s: fallback %v, want %v", tc.name, fb.n.Load() > before, tc.fallback)
		}
	}
	// A proxied host: on a new Transport (the answer is remembered per host).
	proxied = host
	tr2 := &Transport{Fallback: fb, Proxy: tr.Proxy}
	before := fb.n.Load()
	resp, err := tr2.RoundTrip(post(t, context.Background(), srv.url(), "{}"))
	if err != nil || resp.StatusCode != 299 || fb.n.Load() != before+1 {
		t.Fatalf("the proxied request did not go to the fallback: %v", err)
	}
}

// Many requests at once share the pool without a race (run with -race) and each gets its
// own answer.
func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Query().Get("chunked") != "" {
			w.(http.Flusher).Flush()
		}
		w.Write(b)
	}))
	defer srv.Close()
	tr, dials := counted(t)
	const workers, each = 32, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				want := fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)
				q := ""
				if i%2 == 1 {
					q = "?chunked=1"
				}
				resp, err := tr.RoundTrip(post(t, context.Background(), srv.URL+q, want))
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(b) != want {
					errs <- fmt.Errorf("got %q %v, want %q", b, err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := dials.Load(); n > workers {
		t.Fatalf("%d dials for %d workers", n, workers)
	}
}

// Idle connections expire after IdleConnTimeout.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	srv := scripted(t, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false)
	tr, dials := counted(t)
	tr.IdleConnTimeout = 100 * time.Millisecond
	for range 2 {
		if _, _, err := exchange(t, tr, srv.url()); err != nil {
			t.Fatal(err)
		}
	}
	if dials.Load() != 1 {
		t.Fatalf("%d dials before the timeout", dials.Load())
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		tr.mu.Lock()
		n := tr.nidle
		tr.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle connection never expired")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, _, err := exchange(t, tr, srv.url()); err != nil || dials.Load() != 2 {
		t.Fatalf("%v, %d dials", err, dials.Load())
	}
}

// Bytes the server sends after a complete answer put the connection out of step: it is not
// reused (the positive case: the same answer without them is).
func TestBytesAfterTheAnswerAreNotReused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		extra  string
		reused bool
	}{{"", true}, {"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false}} {
		srv := scripted(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"+tc.extra, false)
		tr, dials := counted(t)
		for range 2 {
			if _, body, err := exchange(t, tr, srv.url()); err != nil || body != "ok" {
				t.Fatalf("%q %v", body, err)
			}
		}
		if (dials.Load() == 1) != tc.reused {
			t.Fatalf("extra %q: %d dials", tc.extra, dials.Load())
		}
	}
}

// Bytes the upstream sends after its answer's end, in a later packet, are found by the peek
// before reuse: the connection is not used again, and the next request gets its own answer.
func TestLateBytesAfterTheAnswerAreNotReused(t *testing.T) {
	t.Parallel()
	srv := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for n := 0; ; n++ {
			if _, _, ok := readRequest(br); !ok {
				return
			}
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			if n == 0 {
				time.Sleep(10 * time.Millisecond)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nforgd")
			}
		}
	})
	tr, dials := counted(t)
	if _, body, err := exchange(t, tr, srv.url()); err != nil || body != "ok" {
		t.Fatalf("%q %v", body, err)
	}
	time.Sleep(50 * time.Millisecond) // the late bytes are in
	if _, body, err := exchange(t, tr, srv.url()); err != nil || body != "ok" {
		t.Fatalf("the second request read %q %v", body, err)
	}
	if dials.Load() != 2 {
		t.Fatalf("%d dials, want 2: the connection with unasked bytes was reused", dials.Load())
	}
}

// A request written in full on a reused connection whose server closes it later than a
// closed idle connection would (an upstream that read it and died while generating) is not
// sent again: that could run and bill the generation twice. The same close at once is
// retried (TestStaleIdleConnectionIsRetried).
func TestAWrittenRequestIsNotSentAgainAfterALateClose(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			_, body, ok := readRequest(br)
			if !ok {
				return
			}
			if requests.Add(1) == 2 {
				time.Sleep(200 * time.Millisecond)
				return // closed, no answer
			}
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		}
	})
	tr, dials := counted(t)
	if _, _, err := exchange(t, tr, srv.url()); err != nil {
		t.Fatal(err)
	}
	if resp, err := tr.RoundTrip(post(t, context.Background(), srv.url(), `{"twice":false}`)); err == nil {
		resp.Body.Close()
		t.Fatal("no error from a connection closed without an answer")
	}
	if requests.Load() != 2 || dials.Load() != 1 {
		t.Fatalf("%d requests on %d dials: the written request was sent again", requests.Load(), dials.Load())
	}
}

// With the peek before reuse, a connection the server closed while idle is not used at
// all: even a request that could not be sent again succeeds (the same request fails without
// the peek, in TestStaleIdleConnectionIsRetried).
func TestPeekAvoidsAClosedIdleConnection(t *testing.T) {
	t.Parallel()
	srv, requests, closed := closingServer(t)
	tr, dials := counted(t)
	tr.staleCheckAfter = time.Nanosecond
	if _, _, err := exchange(t, tr, srv.url()); err != nil {
		t.Fatal(err)
	}
	<-closed
	req := post(t, context.Background(), srv.url(), `{"once":true}`)
	req.GetBody = nil
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("the closed idle connection was used: %v", err)
	}
	resp.Body.Close()
	if dials.Load() != 2 || requests.Load() != 2 {
		t.Fatalf("%d dials, %d requests", dials.Load(), requests.Load())
	}
}

// An idle pooled connection holds no read buffer (64 idle upstream connections held 4 KiB
// each); the next exchange on it takes one and reads its answer whole.
func TestAPooledConnectionHoldsNoReadBuffer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", r.Method, r.URL.Path)
	}))
	defer srv.Close()
	tr, dials := counted(t)
	for i := range 3 {
		resp, err := tr.RoundTrip(post(t, context.Background(), srv.URL+"/a", ""))
		if err != nil {
			t.Fatal(err)
		}
		var c *conn
		tr.mu.Lock()
		for _, list := range tr.idle {
			if len(list) > 0 {
				c = list[len(list)-1]
			}
		}
		tr.mu.Unlock()
		if c != nil {
			t.Fatalf("%d: a connection is idle while its answer is being read", i)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "POST /a" {
			t.Fatalf("%d: %q", i, b)
		}
		tr.mu.Lock()
		for _, list := range tr.idle {
			if len(list) > 0 {
				c = list[len(list)-1]
			}
		}
		tr.mu.Unlock()
		if c == nil {
			t.Fatalf("%d: the connection was not pooled", i)
		}
		if c.br != nil {
			t.Fatalf("%d: the pooled connection holds a read buffer of %d bytes", i, c.br.Size())
		}
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("3 requests dialled %d times", n)
	}
}

// With ResponseHeaders, an answer's Header holds those fields (in whatever case they came)
// and the framing ones, the others read, checked and dropped with their continuation lines;
// the body is framed as without it, and a malformed dropped field is still refused.
func TestResponseHeadersKeepsOnlyThose(t *testing.T) {
	t.Parallel()
	head := "HTTP/1.1 200 OK\r\nx-ratelimit-remaining-tokens: 10\r\n  folded onto a dropped field\r\n" +
		"content-type: application/json\r\nRetry-After: 3\r\n\tand folded\r\nCf-Ray: abc\r\nConnection: keep-alive\r\n" +
		"Transfer-Encoding: chunked\r\nX-One: 1\r\nX-Two: 2\r\nX-Three: 3\r\nX-Four: 4\r\nX-Five: 5\r\nX-Six: 6\r\nX-Seven: 7\r\nX-Eight: 8\r\n\r\n" +
		"5\r\nhello\r\n0\r\n\r\n"
	srv := scripted(t, head, false)
	for _, keep := range [][]string{nil, {"Content-Type", "retry-after"}} {
		tr, dials := counted(t)
		tr.ResponseHeaders = keep
		for range 2 {
			resp, body, err := exchange(t, tr, srv.url())
			if err != nil {
				t.Fatal(err)
			}
			if body != "hello" || resp.ContentLength != -1 {
				t.Fatalf("keep %q: body %q, length %d", keep, body, resp.ContentLength)
			}
			want := http.Header{"Content-Type": {"application/json"}, "Retry-After": {"3 and folded"}, "Connection": {"keep-alive"}}
			if keep == nil {
				want["X-Ratelimit-Remaining-Tokens"] = []string{"10 folded onto a dropped field"}
				want["Cf-Ray"] = []string{"abc"}
				for i, n := range []string{"One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight"} {
					want["X-"+n] = []string{strconv.Itoa(i + 1)}
				}
			}
			if !reflect.DeepEqual(resp.Header, want) {
				t.Fatalf("keep %q: header %v, want %v", keep, resp.Header, want)
			}
		}
		if dials.Load() != 1 {
			t.Fatalf("keep %q: %d dials for two answers on a kept connection", keep, dials.Load())
		}
	}
	bad := scripted(t, "HTTP/1.1 200 OK\r\nX-Dropped: a\x00b\r\nContent-Length: 0\r\n\r\n", false)
	tr, _ := counted(t)
	tr.ResponseHeaders = []string{"Content-Type"}
	if resp, _, err := exchange(t, tr, bad.url()); err == nil {
		t.Fatalf("a dropped field with a NUL in its value was taken: %v", resp.Header)
	}
}
