package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sync/atomic"
	"testing"
	"time"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
	"modelgateway/core/wire/sse"
)

// stopDecoder makes every data line a text event; the event named "stop" is terminal.
type stopDecoder struct{}

func (stopDecoder) Decode(ev sse.Event) ([]*corev1.GenerateEvent, bool, error) {
	return []*corev1.GenerateEvent{TextEvent(string(ev.Data))}, ev.Name == "stop", nil
}
func (stopDecoder) End() ([]*corev1.GenerateEvent, error) { return nil, &Error{Message: "cut"} }
func (stopDecoder) Usage() metering.Usage                 { return metering.Usage{Reliable: true} }

// sseServer streams two events, the terminal one last, then runs tail before the handler
// returns (which ends the chunked body). It counts the connections it accepted.
func sseServer(t *testing.T, tail func(r *http.Request)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	conns := new(atomic.Int32)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{"event: text\ndata: hello\n\n", "event: stop\ndata: bye\n\n"} {
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
		if tail != nil {
			tail(r)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, conns
}

// openStream posts to url and reads the answer with stopDecoder.
func openStream(t *testing.T, ctx context.Context, url string) *SSEStream {
	t.Helper()
	req, err := NewRequest(ctx, url, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := Do(req, Timeouts{})
	if err != nil {
		t.Fatal(err)
	}
	return NewSSEStream(resp.Body, &corev1.Start{}, stopDecoder{})
}

// readStream reads a stream to its end and closes it; idle reports whether the connection
// went back to the pool, once Close has let it.
func readStream(t *testing.T, ctx context.Context, url string) (idle <-chan error) {
	t.Helper()
	put := make(chan error, 1)
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{PutIdleConn: func(err error) { put <- err }})
	s := openStream(t, ctx, url)
	var texts []string
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if tx := ev.GetText(); tx != nil {
			texts = append(texts, tx.GetText())
		}
	}
	if fmt.Sprint(texts) != "[hello bye]" {
		t.Fatalf("texts %v", texts)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return put
}

func waitIdle(t *testing.T, idle <-chan error) {
	t.Helper()
	select {
	case err := <-idle:
		if err != nil {
			t.Fatalf("the connection was not kept: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the connection never went back to the pool")
	}
}

// A finished stream's connection serves the next request: closing a body before its end
// would make net/http drop it, and every streamed answer would pay for a new connection.
func TestFinishedStreamKeepsItsConnection(t *testing.T) {
	t.Parallel()
	srv, conns := sseServer(t, nil)
	for range 5 {
		waitIdle(t, readStream(t, context.Background(), srv.URL))
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("5 streams used %d connections, want 1", n)
	}
}

// The client's request ends as soon as its answer is delivered, usually before the
// upstream's body has ended: that must not cut the drain.
func TestReleaseOutlivesTheClient(t *testing.T) {
	t.Parallel()
	srv, conns := sseServer(t, func(*http.Request) { time.Sleep(50 * time.Millisecond) })
	for range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		idle := readStream(t, ctx, srv.URL)
		cancel()
		waitIdle(t, idle)
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("2 streams used %d connections, want 1", n)
	}
}

// An upstream that keeps its body open after the terminal event costs its connection, not
// the request's time: Close returns at once and the drain gives up after drainTimeout.
func TestReleaseGivesUpOnAnOpenBody(t *testing.T) {
	t.Parallel()
	gone := make(chan time.Duration, 1)
	srv, _ := sseServer(t, func(r *http.Request) {
		start := time.Now()
		select {
		case <-r.Context().Done():
			gone <- time.Since(start)
		case <-time.After(10 * time.Second):
			gone <- -1
		}
	})
	start := time.Now()
	readStream(t, context.Background(), srv.URL)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("reading and closing took %v: Close waited for the body's end", d)
	}
	if d := <-gone; d < 0 || d > drainTimeout+2*time.Second {
		t.Fatalf("the upstream request was not ended by the drain bound (%v)", d)
	}
}

// A stream closed before its terminal event (the client went away) ends the upstream
// request at once.
func TestUnfinishedStreamClosesAtOnce(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "event: text\ndata: hello\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	}))
	defer srv.Close()
	s := openStream(t, context.Background(), srv.URL)
	for range 2 { // Start, then the text
		if _, err := s.Next(); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request outlived the closed stream")
	}
}

// A body whose end arrives with its terminal event (here a Content-Length answer, the last
// bytes and the end in one read) has nothing left to drain: Release closes it at once, the
// upstream request ends before Close returns and the connection serves the next stream.
func TestReleaseAtTheBodysEndIsSynchronous(t *testing.T) {
	t.Parallel()
	const answer = "event: text\ndata: hello\n\nevent: stop\ndata: bye\n\n"
	conns := new(atomic.Int32)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Length", fmt.Sprint(len(answer)))
		io.WriteString(w, answer)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	for range 3 {
		s := openStream(t, context.Background(), srv.URL)
		for {
			if _, err := s.Next(); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
		b := s.body.(*timedBody)
		if !b.eof {
			t.Fatal("the body's end was not seen with its terminal event")
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if b.call.Err() == nil {
			t.Fatal("the upstream request outlived Release of a body read to its end")
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("3 streams used %d connections, want 1", n)
	}
}
