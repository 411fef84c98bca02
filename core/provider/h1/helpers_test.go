package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// counted is a Transport whose dials are counted.
func counted(t testing.TB) (*Transport, *atomic.Int32) {
	dials := new(atomic.Int32)
	tr := &Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return defaultDialer.DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return tr, dials
}

// rawServer accepts connections on a real socket and gives each to serve.
type rawServer struct {
	ln      net.Listener
	accepts atomic.Int32
	wg      sync.WaitGroup
}

func newRawServer(t testing.TB, serve func(c net.Conn, br *bufio.Reader)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepts.Add(1)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				serve(c, bufio.NewReader(c))
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *rawServer) url() string { return "http://" + s.ln.Addr().String() }

// readRequest reads one request and its body; false when the client has gone.
func readRequest(br *bufio.Reader) (*http.Request, []byte, bool) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, nil, false
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, nil, false
	}
	return req, body, true
}

// scripted answers every request on a connection with answer, and closes the connection
// after it when closeAfter.
func scripted(t testing.TB, answer string, closeAfter bool) *rawServer {
	return newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, _, ok := readRequest(br); !ok {
				return
			}
			if _, err := io.WriteString(c, answer); err != nil || closeAfter {
				return
			}
		}
	})
}

func post(t testing.TB, ctx context.Context, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// exchange sends a POST and reads the whole answer.
func exchange(t testing.TB, rt http.RoundTripper, url string) (*http.Response, string, error) {
	t.Helper()
	resp, err := rt.RoundTrip(post(t, context.Background(), url, `{"a":1}`))
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// cannedUpstream answers every request with the same JSON answer, as core/simulator's
// canned upstream does: the cheapest server, so that a benchmark measures the client.
func cannedUpstream(tb testing.TB, answer []byte) string {
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Sat, 28 Nov 2026 00:00:00 GMT\r\nContent-Length: " +
		strconv.Itoa(len(answer)) + "\r\n\r\n" + string(answer))
	s := newRawServer(tb, func(c net.Conn, br *bufio.Reader) {
		for {
			n := -1
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					return
				}
				if len(line) <= 2 {
					break
				}
				if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
					n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
				}
			}
			if n > 0 {
				if _, err := br.Discard(n); err != nil {
					return
				}
			}
			if _, err := c.Write(resp); err != nil {
				return
			}
		}
	})
	return s.url()
}

// waitClosed reports whether the peer of c closes it within d.
func waitClosed(c net.Conn, br *bufio.Reader, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, br)
	var ne net.Error
	return !errors.As(err, &ne) || !ne.Timeout() // EOF or a reset: closed by the peer
}
