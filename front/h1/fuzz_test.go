package h1

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// FuzzAgainstNetHTTP sends the same bytes to this server and to net/http's, both serving
// echo, and requires the same answers: status and body (which spells out the parse: method,
// path, query, version, host, length, transfer coding, a header and the body) of every
// response up to the first that cannot be read. The seeds run with go test.
func FuzzAgainstNetHTTP(f *testing.F) {
	for _, seed := range []string{
		"POST /v1/x?a=1 HTTP/1.1\r\nHost: h\r\nUser-Agent: t\r\nContent-Length: 5\r\n\r\nhello",
		"POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"GET / HTTP/1.1\r\nhost: h\r\nuser-agent: lower\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /a%20b?x=%zz HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /old HTTP/1.0\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\nConnection: keep-alive\r\n\r\nGET /not HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a<b\r\n\r\n",
		"GET /\x01 HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
		"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +3\r\n\r\nabc",
		"GET / HTTP/1.2\r\nHost: h\r\n\r\n",
		"\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\nX: a\x80b\r\n\r\n",
		"GET / HTTP/1.1\nHost: h\n\n",
		"GET  / HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nX-A : 1\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	lean, stdlib := fuzzServers(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		a, b := exchange(t, lean, in), exchange(t, stdlib, in)
		if a != b {
			t.Fatalf("input %q:\nfront/h1: %s\nnet/http: %s", in, a, b)
		}
	})
}

var (
	fuzzOnce           sync.Once
	fuzzLean, fuzzHTTP string
)

func fuzzServers(f *testing.F) (string, string) {
	fuzzOnce.Do(func() {
		ln1, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			f.Fatal(err)
		}
		ln2, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			f.Fatal(err)
		}
		go func() { _ = (&Server{Handler: http.HandlerFunc(echo), ReadHeaderTimeout: 2 * time.Second}).Serve(ln1) }()
		go func() {
			_ = (&http.Server{Handler: http.HandlerFunc(echo), ReadHeaderTimeout: 2 * time.Second}).Serve(ln2)
		}()
		fuzzLean, fuzzHTTP = ln1.Addr().String(), ln2.Addr().String()
	})
	return fuzzLean, fuzzHTTP
}

// exchange writes in, half-closes, and describes the answers read.
func exchange(t *testing.T, addr string, in []byte) string {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Closed with a reset: a fuzz run's connections leave no TIME_WAIT on the client side
	// to run the ephemeral ports out.
	_ = c.(*net.TCPConn).SetLinger(0)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.Write(in)
	_ = c.(*net.TCPConn).CloseWrite()
	all, _ := io.ReadAll(c)
	br := bufio.NewReader(bytes.NewReader(all))
	var out bytes.Buffer
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return out.String()
		}
		body, err := io.ReadAll(resp.Body)
		fmt.Fprintf(&out, "[%d %q close=%v err=%v] ", resp.StatusCode, body, resp.Close, err != nil)
		if err != nil {
			return out.String()
		}
	}
}
