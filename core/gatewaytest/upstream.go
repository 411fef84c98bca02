package gatewaytest

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"modelgateway/core/simulator"
)

// Call is one request a stub upstream received.
type Call struct {
	Path   string
	Header http.Header
	Body   []byte
}

// Upstream is the upstream simulator (the three provider wire protocols and realtime) behind
// a recorder of every request it received, closed when the test ends.
type Upstream struct {
	URL string

	mu    sync.Mutex
	calls []Call
	next  http.Handler
}

// StartUpstream serves the simulator with options o.
func StartUpstream(t testing.TB, o simulator.Options) *Upstream {
	t.Helper()
	u := &Upstream{next: simulator.New(o)}
	srv := httptest.NewServer(u)
	u.URL = srv.URL
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return u
}

func (u *Upstream) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	u.mu.Lock()
	u.calls = append(u.calls, Call{Path: req.URL.RequestURI(), Header: req.Header.Clone(), Body: body})
	u.mu.Unlock()
	req.Body = io.NopCloser(bytes.NewReader(body))
	u.next.ServeHTTP(w, req)
}

// Calls are the requests received so far.
func (u *Upstream) Calls() []Call {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Call(nil), u.calls...)
}

// Last is the latest request; none fails the test.
func (u *Upstream) Last(t testing.TB) Call {
	t.Helper()
	c := u.Calls()
	if len(c) == 0 {
		t.Fatal("the upstream received no request")
	}
	return c[len(c)-1]
}

// FreePort is a TCP port free a moment ago on 127.0.0.1 (another process may take it before
// the caller binds it).
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// SyncBuffer is a bytes.Buffer safe for a process's output and a test reading it at once.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
