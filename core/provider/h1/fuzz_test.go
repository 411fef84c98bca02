package h1

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"reflect"
	"testing"
	"time"
)

// scriptConn is a net.Conn that reads a fixed answer and discards what is written.
type scriptConn struct {
	r *bytes.Reader
}

func (c *scriptConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *scriptConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *scriptConn) Close() error                     { return nil }
func (c *scriptConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *scriptConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *scriptConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzReadResponse feeds arbitrary bytes as an upstream's answer through the whole
// exchange (head, framing, body, gzip): never a panic, never more body than was sent, and a
// connection pooled only after a body read to its end.
func FuzzReadResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x\r\nhello\r\n0\r\nT: 1\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nclose-delimited",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 200 OK\nX: a\n  folded\nContent-Length: 0\n\n",
		"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\n\x1f\x8b\x08",
		"HTTP/1.1 999 Whatever\r\nContent-Length: 1, 1\r\n\r\nx",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, answer []byte) {
		tr := &Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
			return &scriptConn{r: bytes.NewReader(answer)}, nil
		}}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest(http.MethodPost, "http://upstream.test/v1", bytes.NewReader([]byte(`{}`)))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return
		}
		if resp.StatusCode < 200 || resp.StatusCode > 999 || resp.Header == nil {
			t.Fatalf("status %d", resp.StatusCode)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if !resp.Uncompressed && len(body) > len(answer) {
			t.Fatalf("%d body bytes from a %d-byte answer", len(body), len(answer))
		}
		tr.mu.Lock()
		pooled := tr.nidle
		tr.mu.Unlock()
		// A gzip body's decoding error is the decoder's: its framing was read to the end.
		if pooled > 0 && ((err != nil && !resp.Uncompressed) || resp.Close) {
			t.Fatalf("a connection was pooled after %v (Close %v)", err, resp.Close)
		}
		// Keeping a few fields (ResponseHeaders) takes the same answers, with those fields.
		kept := &Transport{ResponseHeaders: []string{"Content-Type", "X"}, DialContext: func(context.Context, string, string) (net.Conn, error) {
			return &scriptConn{r: bytes.NewReader(answer)}, nil
		}}
		defer kept.CloseIdleConnections()
		req, _ = http.NewRequest(http.MethodPost, "http://upstream.test/v1", bytes.NewReader([]byte(`{}`)))
		resp2, err := kept.RoundTrip(req)
		if err != nil {
			t.Fatalf("keeping a few fields: %v", err)
		}
		resp2.Body.Close()
		want := http.Header{}
		for k, v := range resp.Header {
			if kept.kept()[k] {
				want[k] = v
			}
		}
		if resp2.StatusCode != resp.StatusCode || !reflect.DeepEqual(resp2.Header, want) {
			t.Fatalf("keeping a few fields: %d %v, want %d %v", resp2.StatusCode, resp2.Header, resp.StatusCode, want)
		}
	})
}
