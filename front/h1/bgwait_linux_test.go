package h1

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

// A request whose body is read (here: none) waits for the client's next bytes without a read
// buffer: a stream holds none for its life, nor does the connection between requests. The
// next request on the connection is read whole, and a client that leaves mid-stream still
// cancels its request.
func TestAWaitingStreamHoldsNoReadBuffer(t *testing.T) {
	type seen struct{ before, during bool }
	saw := make(chan seen, 3)
	gone := make(chan error, 1)
	srv := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := w.(*response).c
		if r.URL.Path == "/leave" {
			_ = http.NewResponseController(w).Flush()
			<-r.Context().Done()
			gone <- context.Cause(r.Context())
			return
		}
		if b, _ := io.ReadAll(r.Body); r.Method == http.MethodPost && string(b) != "abc" {
			panic("body " + string(b))
		}
		before := c.br != nil
		_, _ = io.WriteString(w, "first")
		_ = http.NewResponseController(w).Flush()
		saw <- seen{before: before, during: c.br != nil}
		_, _ = io.WriteString(w, "second")
	}))
	c, br := dial(t, srv.addr)
	for i := range 2 {
		io.WriteString(c, "GET /s HTTP/1.1\r\nHost: h\r\n\r\n")
		if _, body := answer(t, br, "GET"); body != "firstsecond" {
			t.Fatalf("answer %d: %q", i, body)
		}
		if s := <-saw; s.before || s.during {
			t.Fatalf("answer %d: a read buffer held while the request ran: %v, while it streamed: %v", i, s.before, s.during)
		}
	}
	// A POST whose body is read: the same, once the body is read.
	io.WriteString(c, "POST /s HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc")
	if _, body := answer(t, br, "POST"); body != "firstsecond" {
		t.Fatalf("POST: %q", body)
	}
	if s := <-saw; s.during {
		t.Fatal("a read buffer held while a POST's answer streamed")
	}
	io.WriteString(c, "GET /leave HTTP/1.1\r\nHost: h\r\n\r\n")
	time.Sleep(50 * time.Millisecond)
	c.Close()
	select {
	case err := <-gone:
		if !errors.Is(err, errClientGone) {
			t.Fatalf("the request's cause %v, want errClientGone", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a client that left did not cancel its request")
	}
}
