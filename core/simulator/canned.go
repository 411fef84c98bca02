package simulator

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	"modelgateway/core/wire/rawsock"
)

// ServeCanned answers on ln from memory until ctx ends: the first request with a given method,
// path and body is answered by s, and every later one gets that answer's bytes again, over a
// minimal HTTP/1.1 server (keep-alive, Content-Length bodies only). It is the benchmark's
// upstream at saturation: net/http and the answer's JSON would cost more CPU than the proxy
// under test, and the point is to make the proxy the bottleneck. Streams are replayed in one
// write (a 0 ms upstream). Requests it cannot parse close their connection.
func ServeCanned(ctx context.Context, ln net.Listener, s *Simulator) error {
	c := &canned{sim: s, answers: map[string][]byte{}}
	context.AfterFunc(ctx, func() { ln.Close() })
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("canned upstream: %w", err)
		}
		// Raw reads and writes (core/wire/rawsock), as the gateway's own: the bench's
		// upstream shares a core with PostgreSQL, and its monitor thread's polling took
		// that core's time.
		go c.serve(rawsock.Wrap(conn))
	}
}

type canned struct {
	sim     *Simulator
	mu      sync.Mutex
	answers map[string][]byte
}

// maxCannedBody bounds a request body of the canned server: it serves small JSON requests.
const maxCannedBody = 1 << 20

func (c *canned) serve(conn net.Conn) {
	defer conn.Close()
	br := bufio.NewReaderSize(conn, 16<<10)
	var body []byte
	for {
		method, path, n, closeAfter, err := readHead(br)
		if err != nil {
			return
		}
		if n > maxCannedBody {
			return
		}
		if cap(body) < n {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(br, body); err != nil {
			return
		}
		answer := c.answer(method, path, body)
		if _, err := conn.Write(answer); err != nil || closeAfter {
			return
		}
	}
}

// answer returns the bytes of the answer to a request, computing it the first time.
func (c *canned) answer(method, path string, body []byte) []byte {
	key := method + " " + path + "\x00" + string(body)
	c.mu.Lock()
	a, ok := c.answers[key]
	c.mu.Unlock()
	if ok {
		return a
	}
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	c.sim.ServeHTTP(rec, req)
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", rec.Code, http.StatusText(rec.Code))
	for k, vs := range rec.Header() {
		if k == "Content-Length" || k == "Transfer-Encoding" {
			continue
		}
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", rec.Body.Len())
	b.Write(rec.Body.Bytes())
	a = b.Bytes()
	c.mu.Lock()
	c.answers[key] = a
	c.mu.Unlock()
	return a
}

var errBadRequest = errors.New("malformed request")

// readHead reads a request line and headers, returning what the canned server needs.
func readHead(br *bufio.Reader) (method, path string, contentLength int, closeAfter bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return "", "", 0, false, err
	}
	f := bytes.Fields(line)
	if len(f) != 3 {
		return "", "", 0, false, errBadRequest
	}
	method, path = string(f[0]), string(f[1])
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return "", "", 0, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			return method, path, contentLength, closeAfter, nil
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return "", "", 0, false, errBadRequest
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			if contentLength, err = strconv.Atoi(string(v)); err != nil || contentLength < 0 {
				return "", "", 0, false, errBadRequest
			}
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			return "", "", 0, false, errBadRequest // chunked request bodies: not served
		case bytes.EqualFold(k, []byte("Connection")):
			closeAfter = bytes.EqualFold(v, []byte("close"))
		}
	}
}
