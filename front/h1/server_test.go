package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// echo answers with what it saw of the request, so that a test sees the parse.
func echo(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "%s %s?%s %s host=%s cl=%d te=%v ua=%q body=%q", r.Method, r.URL.Path, r.URL.RawQuery, r.Proto,
		r.Host, r.ContentLength, r.TransferEncoding, r.Header.Get("User-Agent"), body)
}

type testServer struct {
	addr string
	srv  *Server
	done chan error
}

func start(t *testing.T, h http.Handler, configure ...func(*Server)) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	for _, f := range configure {
		f(s)
	}
	ts := &testServer{addr: ln.Addr().String(), srv: s, done: make(chan error, 1)}
	go func() { ts.done <- s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Close() })
	return ts
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	return c, bufio.NewReader(c)
}

// answer reads one response (the body read whole).
func answer(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, string(b)
}

// closed reports whether the server closed the connection (EOF within the wait).
func closed(c net.Conn, br *bufio.Reader, within time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(within))
	_, err := br.ReadByte()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	return err == io.EOF || errors.Is(err, net.ErrClosed) || err != nil && strings.Contains(err.Error(), "reset")
}

func TestFraming(t *testing.T) {
	cases := []struct {
		name, req  string
		method     string
		status     int
		body       string // "": not checked
		header     map[string]string
		closesConn bool
	}{
		{name: "content-length body", req: "POST /v1/x?a=1 HTTP/1.1\r\nHost: h\r\nUser-Agent: t\r\nContent-Length: 5\r\n\r\nhello",
			status: 200, body: `POST /v1/x?a=1 HTTP/1.1 host=h cl=5 te=[] ua="t" body="hello"`,
			header: map[string]string{"Content-Length": "61", "Content-Type": "text/plain"}},
		{name: "chunked body with trailer", req: "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nX-T: 1\r\n\r\n",
			status: 200, body: `POST /c? HTTP/1.1 host=h cl=-1 te=[chunked] ua="" body="abcde"`},
		{name: "lower-case header names are canonical", req: "GET / HTTP/1.1\r\nhost: h\r\nuser-agent: lower\r\n\r\n",
			status: 200, body: `GET /? HTTP/1.1 host=h cl=0 te=[] ua="lower" body=""`},
		{name: "escaped path", req: "GET /a%20b HTTP/1.1\r\nHost: h\r\n\r\n", status: 200, body: `GET /a b? HTTP/1.1 host=h cl=0 te=[] ua="" body=""`},
		{name: "HTTP/1.0 closes", req: "GET /old HTTP/1.0\r\n\r\n", status: 200,
			body: `GET /old? HTTP/1.0 host= cl=0 te=[] ua="" body=""`, closesConn: true},
		{name: "HTTP/1.0 keep-alive", req: "GET /old HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", status: 200,
			header: map[string]string{"Connection": "keep-alive"}},
		{name: "Connection: close", req: "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", status: 200, closesConn: true},
		{name: "HEAD has a length and no body", req: "HEAD /h HTTP/1.1\r\nHost: h\r\n\r\n", method: "HEAD", status: 200,
			body: "", header: map[string]string{"Content-Length": "49"}},
		// What the lean server does not take, net/http answers: the same status as net/http alone.
		{name: "no Host on HTTP/1.1", req: "GET / HTTP/1.1\r\n\r\n", status: 400, closesConn: true},
		{name: "header without colon", req: "GET / HTTP/1.1\r\nHost: h\r\nBroken\r\n\r\n", status: 400, closesConn: true},
		{name: "folded header", req: "GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n  2\r\n\r\n", status: 200},
		{name: "two Content-Lengths", req: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", status: 400, closesConn: true},
		{name: "bad Content-Length", req: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: x\r\n\r\n", status: 400, closesConn: true},
		{name: "unknown transfer-encoding", req: "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", status: 501, closesConn: true},
		{name: "Expect other than 100-continue", req: "POST / HTTP/1.1\r\nHost: h\r\nExpect: x\r\nContent-Length: 1\r\n\r\na", status: 417, closesConn: true},
		{name: "HTTP/2 prior knowledge (net/http runs the handler)", req: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", status: 200, closesConn: true},
		{name: "HTTP/0.9", req: "GET / HTTP/0.9\r\n\r\n", status: 505, closesConn: true},
		{name: "bad request line", req: "GARBAGE\r\n\r\n", status: 400, closesConn: true},
		{name: "absolute URI", req: "GET http://h/abs HTTP/1.1\r\nHost: h\r\n\r\n", status: 200, body: `GET /abs? HTTP/1.1 host=h cl=0 te=[] ua="" body=""`},
	}
	srv := start(t, http.HandlerFunc(echo))
	net := &http.Server{Handler: http.HandlerFunc(echo)}
	netLn, err := newLocalListener()
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = net.Serve(netLn) }()
	t.Cleanup(func() { _ = net.Close() })
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = "GET"
			}
			for _, target := range []string{srv.addr, netLn.Addr().String()} {
				c, br := dial(t, target)
				if _, err := io.WriteString(c, tc.req); err != nil {
					t.Fatal(err)
				}
				resp, body := answer(t, br, method)
				if resp.StatusCode != tc.status {
					t.Fatalf("%s: status %d, want %d (body %q)", target, resp.StatusCode, tc.status, body)
				}
				if target != srv.addr {
					continue // net/http alone: the status is what the lean server must match
				}
				if tc.body != "" && body != tc.body || tc.method == "HEAD" && body != "" {
					t.Errorf("body %q, want %q", body, tc.body)
				}
				for k, v := range tc.header {
					if got := resp.Header.Get(k); got != v {
						t.Errorf("%s: %q, want %q", k, got, v)
					}
				}
				if resp.Close != tc.closesConn {
					t.Errorf("Connection: close %v, want %v", resp.Close, tc.closesConn)
				}
				if resp.StatusCode == 200 && resp.Header.Get("Date") == "" {
					t.Errorf("no Date header")
				}
				if got := closed(c, br, 300*time.Millisecond); got != tc.closesConn {
					t.Errorf("connection closed %v, want %v", got, tc.closesConn)
				}
			}
		})
	}
}

func newLocalListener() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

func TestKeepAliveAndPipelining(t *testing.T) {
	srv := start(t, http.HandlerFunc(echo))
	c, br := dial(t, srv.addr)
	// Three requests in one write: each answered, in order, on the one connection.
	req := "POST /1 HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\na" +
		"GET /2 HTTP/1.1\r\nHost: h\r\n\r\n" +
		"POST /3 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nbc"
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`POST /1? HTTP/1.1 host=h cl=1 te=[] ua="" body="a"`, `GET /2? HTTP/1.1 host=h cl=0 te=[] ua="" body=""`,
		`POST /3? HTTP/1.1 host=h cl=2 te=[] ua="" body="bc"`} {
		if _, body := answer(t, br, "GET"); body != want {
			t.Fatalf("body %q, want %q", body, want)
		}
	}
	// And a later one on the same connection after a pause.
	time.Sleep(50 * time.Millisecond)
	if _, err := io.WriteString(c, "GET /4 HTTP/1.1\r\nHost: h\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if _, body := answer(t, br, "GET"); !strings.HasPrefix(body, "GET /4?") {
		t.Fatalf("body %q", body)
	}
}

func TestUnreadBodyIsDiscardedOrClosesTheConnection(t *testing.T) {
	srv := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	c, br := dial(t, srv.addr)
	// A small unread body is read away: the connection stays.
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: h\r\n\r\n")
	for range 2 {
		if resp, body := answer(t, br, "GET"); resp.StatusCode != 200 || body != "ok" || resp.Close {
			t.Fatalf("%d %q close=%v", resp.StatusCode, body, resp.Close)
		}
	}
	// One over 256 KiB is not: Connection: close.
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n", 1<<20)
	if resp, _ := answer(t, br, "GET"); !resp.Close {
		t.Fatalf("a 1 MiB unread body kept the connection")
	}
}

func TestExpectContinue(t *testing.T) {
	srv := start(t, http.HandlerFunc(echo))
	c, br := dial(t, srv.addr)
	io.WriteString(c, "POST /e HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("before the body: %q %v", line, err)
	}
	if blank, _ := br.ReadString('\n'); blank != "\r\n" {
		t.Fatalf("100 Continue not ended: %q", blank)
	}
	io.WriteString(c, "data")
	if _, body := answer(t, br, "POST"); !strings.Contains(body, `body="data"`) {
		t.Fatalf("body %q", body)
	}

	// A handler that answers without reading: no 100, and the connection closes (the
	// client may or may not send the body).
	srv2 := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusUnauthorized) }))
	c2, br2 := dial(t, srv2.addr)
	io.WriteString(c2, "POST /e HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
	resp, _ := answer(t, br2, "POST")
	if resp.StatusCode != 401 || !resp.Close {
		t.Fatalf("status %d close=%v, want 401 and close", resp.StatusCode, resp.Close)
	}
}

func TestLargeAnswerIsChunkedAndFlushReachesTheClient(t *testing.T) {
	release := make(chan struct{})
	big := strings.Repeat("x", 10000)
	srv := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			_, _ = io.WriteString(w, big)
		case "/flush":
			_, _ = io.WriteString(w, "first")
			if err := http.NewResponseController(w).Flush(); err != nil {
				panic(err)
			}
			<-release
			_, _ = io.WriteString(w, "second")
		case "/length":
			w.Header().Set("Content-Length", "10000")
			_, _ = io.WriteString(w, big)
		}
	}))
	c, br := dial(t, srv.addr)
	io.WriteString(c, "GET /big HTTP/1.1\r\nHost: h\r\n\r\n")
	resp, body := answer(t, br, "GET")
	if body != big || len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("big answer: %d bytes, te %v", len(body), resp.TransferEncoding)
	}
	io.WriteString(c, "GET /length HTTP/1.1\r\nHost: h\r\n\r\n")
	resp, body = answer(t, br, "GET")
	if body != big || resp.ContentLength != 10000 || resp.TransferEncoding != nil {
		t.Fatalf("declared length: %d bytes, cl %d te %v", len(body), resp.ContentLength, resp.TransferEncoding)
	}
	io.WriteString(c, "GET /flush HTTP/1.1\r\nHost: h\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "first" {
		t.Fatalf("flushed part: %q %v (the handler is still blocked)", first, err)
	}
	close(release)
	if rest, _ := io.ReadAll(resp.Body); string(rest) != "second" {
		t.Fatalf("rest %q", rest)
	}
}

func TestHijack(t *testing.T) {
	srv := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Upgrade", "echo")
		w.Header().Set("Connection", "Upgrade")
		w.WriteHeader(http.StatusSwitchingProtocols)
		nc, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		go func() {
			defer nc.Close()
			line, _ := brw.ReadString('\n')
			brw.WriteString("echo " + line)
			brw.Flush()
		}()
	}))
	c, br := dial(t, srv.addr)
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Upgrade") != "echo" {
		t.Fatalf("upgrade answer: %v %v", resp, err)
	}
	io.WriteString(c, "hello\n")
	if line, err := br.ReadString('\n'); line != "echo hello\n" {
		t.Fatalf("after the hijack: %q %v", line, err)
	}
}

func TestClientGoneCancelsTheRequest(t *testing.T) {
	type seen struct {
		err   error
		cause error
	}
	got := make(chan seen, 1)
	srv := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
			got <- seen{r.Context().Err(), context.Cause(r.Context())}
		case <-time.After(300 * time.Millisecond):
			got <- seen{}
			_, _ = io.WriteString(w, "stayed")
		}
	}))
	for _, req := range []string{"GET / HTTP/1.1\r\nHost: h\r\n\r\n", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"} {
		// A client that stays: the context lives until the answer.
		c, br := dial(t, srv.addr)
		io.WriteString(c, req)
		if s := <-got; s.err != nil {
			t.Fatalf("cancelled while the client waited: %v", s.err)
		}
		if _, body := answer(t, br, "GET"); body != "stayed" {
			t.Fatalf("body %q", body)
		}
		// A client that leaves: the context ends at once.
		c2, _ := dial(t, srv.addr)
		io.WriteString(c2, req)
		time.Sleep(50 * time.Millisecond)
		c2.Close()
		if s := <-got; !errors.Is(s.err, context.Canceled) || !errors.Is(s.cause, errClientGone) {
			t.Fatalf("client gone: err %v cause %v", s.err, s.cause)
		}
	}
}

func TestContextEndsWhenTheHandlerReturns(t *testing.T) {
	ctxs := make(chan context.Context, 1)
	srv := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Err() != nil {
			panic("born cancelled")
		}
		ctxs <- r.Context()
	}))
	c, br := dial(t, srv.addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	answer(t, br, "GET")
	if ctx := <-ctxs; ctx.Err() == nil {
		t.Fatal("the request's context outlived its handler")
	}
}

func TestTimeouts(t *testing.T) {
	srv := start(t, http.HandlerFunc(echo), func(s *Server) {
		s.ReadHeaderTimeout, s.IdleTimeout = 200*time.Millisecond, 300*time.Millisecond
	})
	// Headers that stall: closed after ReadHeaderTimeout, not before.
	c, br := dial(t, srv.addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: h\r\n")
	if closed(c, br, 100*time.Millisecond) {
		t.Fatal("closed before the header timeout")
	}
	if !closed(c, br, time.Second) {
		t.Fatal("a stalled head was not cut off")
	}
	// An idle keep-alive connection: closed after IdleTimeout, not before.
	c, br = dial(t, srv.addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	answer(t, br, "GET")
	if closed(c, br, 150*time.Millisecond) {
		t.Fatal("closed before the idle timeout")
	}
	if !closed(c, br, time.Second) {
		t.Fatal("an idle connection was kept")
	}
	// A body read under a deadline set through http.ResponseController times out.
	errs := make(chan error, 1)
	srv2 := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		_, err := io.ReadAll(r.Body)
		errs <- err
	}))
	c, _ = dial(t, srv2.addr)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
	select {
	case err := <-errs:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("body read: %v, want a timeout", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the read deadline did not apply")
	}
}

func TestHeaderLimit(t *testing.T) {
	srv := start(t, http.HandlerFunc(echo), func(s *Server) { s.MaxHeaderBytes = 1000 })
	c, br := dial(t, srv.addr)
	// Within the limit (and net/http's 4096 bytes of slack): served.
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: h\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 3000))
	if resp, _ := answer(t, br, "GET"); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: h\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 6000))
	if resp, _ := answer(t, br, "GET"); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d, want 431", resp.StatusCode)
	}
}

func TestShutdown(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	srv := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
		_, _ = io.WriteString(w, "done")
	}))
	idle, idleBr := dial(t, srv.addr)
	io.WriteString(idle, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	answer(t, idleBr, "GET")
	busy, busyBr := dial(t, srv.addr)
	io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: h\r\n\r\n")
	<-entered

	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- srv.srv.Shutdown(ctx)
	}()
	// The idle connection is closed; Shutdown waits for the busy one.
	if !closed(idle, idleBr, 2*time.Second) {
		t.Fatal("the idle connection was not closed")
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while a request ran", err)
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := net.DialTimeout("tcp", srv.addr, time.Second); err == nil {
		t.Error("the listener still accepts")
	}
	close(release)
	resp, body := answer(t, busyBr, "GET")
	if body != "done" || !resp.Close {
		t.Fatalf("the drained answer: %q close=%v, want done and Connection: close", body, resp.Close)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-srv.done; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve returned %v", err)
	}
}

func TestShutdownStopsAtItsContext(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	srv := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	}))
	c, _ := dial(t, srv.addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := srv.srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want the context's deadline", err)
	}
}

func TestPanicClosesTheConnection(t *testing.T) {
	srv := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) }))
	c, br := dial(t, srv.addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: h\r\n\r\n")
	if !closed(c, br, 2*time.Second) {
		t.Fatal("a panicking handler's connection stayed open")
	}
}

func TestShutdownReachesHandedOverConnections(t *testing.T) {
	srv := start(t, http.HandlerFunc(echo))
	// A folded header is net/http's to serve: the connection goes over, and stays open.
	c, br := dial(t, srv.addr)
	io.WriteString(c, "GET /folded HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n  2\r\n\r\n")
	if resp, body := answer(t, br, "GET"); resp.StatusCode != 200 || !strings.HasPrefix(body, "GET /folded?") || resp.Close {
		t.Fatalf("handed over: %d %q close=%v", resp.StatusCode, body, resp.Close)
	}
	io.WriteString(c, "GET /again HTTP/1.1\r\nHost: h\r\n\r\n")
	if _, body := answer(t, br, "GET"); !strings.HasPrefix(body, "GET /again?") {
		t.Fatalf("second request on the handed-over connection: %q", body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if !closed(c, br, 2*time.Second) {
		t.Fatal("Shutdown left the handed-over idle connection open")
	}
}

func TestHandlerConnectionCloseEndsTheConnection(t *testing.T) {
	srv := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		_, _ = io.WriteString(w, "ok")
	}))
	c, br := dial(t, srv.addr)
	io.WriteString(c, "GET /stay HTTP/1.1\r\nHost: h\r\n\r\n")
	if resp, _ := answer(t, br, "GET"); resp.Close || closed(c, br, 100*time.Millisecond) {
		t.Fatal("an ordinary answer closed the connection")
	}
	io.WriteString(c, "GET /close HTTP/1.1\r\nHost: h\r\n\r\n")
	if resp, _ := answer(t, br, "GET"); !resp.Close || !closed(c, br, time.Second) {
		t.Fatal("the handler's Connection: close kept the connection")
	}
}

// A stream waiting between flushes holds no write buffer, and neither does an idle
// keep-alive connection: 64 streams each held 4 KiB for nothing. The buffer comes back for the
// next write and the next answer.
func TestAWaitingStreamHoldsNoWriteBuffer(t *testing.T) {
	type seen struct{ written, flushed bool }
	saw := make(chan seen, 2)
	srv := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := w.(*response).c
		_, _ = io.WriteString(w, "first")
		_ = http.NewResponseController(w).Flush() // the head and "first" go out
		_, _ = io.WriteString(w, "second")
		written := c.bw != nil // "second" is in the buffer
		if err := http.NewResponseController(w).Flush(); err != nil {
			panic(err)
		}
		saw <- seen{written: written, flushed: c.bw != nil}
		_, _ = io.WriteString(w, "third")
	}))
	c, br := dial(t, srv.addr)
	for i := range 2 {
		io.WriteString(c, "GET /s HTTP/1.1\r\nHost: h\r\n\r\n")
		if _, body := answer(t, br, "GET"); body != "firstsecondthird" {
			t.Fatalf("answer %d: %q", i, body)
		}
		if s := <-saw; !s.written || s.flushed {
			t.Fatalf("answer %d: write buffer held after a write: %v, after the flush: %v; want true, false", i, s.written, s.flushed)
		}
	}
}

// countingListener counts the writes on its connections.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// A write larger than the write buffer's room goes out with what the buffer holds at the
// flush, in one system call: a stream's arrival of events (written as one, after the head or
// an earlier piece), a whole answer after its head. bufio alone sent a full buffer first,
// then the rest (two or three writes). Past 64 KiB it still sends as bufio does.
func TestALargeWriteGoesOutInOneSystemCall(t *testing.T) {
	var writes atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	arrival := strings.Repeat("data: {\"x\":1}\n\n", 400) // 6,400 bytes
	huge := strings.Repeat("y", 100<<10)
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		switch r.URL.Path {
		case "/stream":
			_, _ = io.WriteString(w, "data: first\n\n")
			_ = rc.Flush() // the head and the first event
			_, _ = io.WriteString(w, "data: second\n\n")
			_, _ = io.WriteString(w, arrival) // 6,400 bytes after 21 held: past the 4 KiB buffer
			_ = rc.Flush()
		case "/whole":
			w.Header().Set("Content-Length", strconv.Itoa(len(arrival)))
			_, _ = io.WriteString(w, arrival)
		case "/huge":
			_, _ = io.WriteString(w, huge)
		}
	})}
	go func() { _ = s.Serve(countingListener{ln, &writes}) }()
	t.Cleanup(func() { _ = s.Close() })
	c, br := dial(t, ln.Addr().String())
	for _, x := range []struct {
		path      string
		body      string
		maxWrites int64
	}{
		{"/stream", "data: first\n\ndata: second\n\n" + arrival, 3}, // the first flush, the arrival's, the end
		{"/whole", arrival, 1},
		{"/huge", huge, 100}, // past 64 KiB: as bufio sends it, but sent whole
	} {
		writes.Store(0)
		io.WriteString(c, "GET "+x.path+" HTTP/1.1\r\nHost: h\r\n\r\n")
		if _, body := answer(t, br, "GET"); body != x.body {
			t.Fatalf("%s: a body of %d bytes, want %d", x.path, len(body), len(x.body))
		}
		if n := writes.Load(); n > x.maxWrites {
			t.Fatalf("%s: %d writes, want at most %d", x.path, n, x.maxWrites)
		}
	}
}
