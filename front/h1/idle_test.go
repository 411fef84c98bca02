package h1

import (
	"io"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestAnIdleConnectionKeepsNothingOfItsLastRequest: header values a handler sets may live in
// a request's own allocation (front/relay puts X-Request-Id's in the request's state); a
// keep-alive connection waiting for its next request must not keep that allocation alive
// through its reused header maps, with all it points to (the bench's saturating scenarios
// left the states of 64 idle connections' last requests in the live heap).
func TestAnIdleConnectionKeepsNothingOfItsLastRequest(t *testing.T) {
	type state struct {
		value [1]string
		_     [4096]byte
	}
	var collected atomic.Int32
	srv := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/plain" {
			_, _ = io.WriteString(w, "plain")
			return
		}
		st := &state{value: [1]string{"in-the-state"}}
		runtime.AddCleanup(st, func(*atomic.Int32) { collected.Add(1) }, &collected)
		r.Header["X-State"] = st.value[:1:1]
		w.Header()["X-State"] = st.value[:1:1]
		_, _ = io.WriteString(w, "set")
	}))
	c, br := dial(t, srv.addr)
	defer c.Close()
	io.WriteString(c, "GET /set HTTP/1.1\r\nHost: h\r\n\r\n")
	resp, body := answer(t, br, "GET")
	if body != "set" || resp.Header.Get("X-State") != "in-the-state" {
		t.Fatalf("answer %q, X-State %q: the handler's header did not reach the client", body, resp.Header.Get("X-State"))
	}
	// The connection is idle, kept alive: the state its request made must be collectable.
	for deadline := time.Now().Add(5 * time.Second); collected.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the idle connection keeps its last request's state alive")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	// And it still serves the next request, without the last one's headers.
	io.WriteString(c, "GET /plain HTTP/1.1\r\nHost: h\r\n\r\n")
	if resp, body := answer(t, br, "GET"); body != "plain" || resp.Header.Get("X-State") != "" {
		t.Fatalf("next answer %q, X-State %q", body, resp.Header.Get("X-State"))
	}
}
