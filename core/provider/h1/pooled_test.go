package h1

import (
	"context"
	"io"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestAPooledConnectionKeepsNothingOfItsExchange: once an answer is read to its end, its
// connection waits in the pool for the next exchange, and must keep nothing of the last:
// the answer's header map points into the answer's allocation (the values kept in it) and
// the answer to its Request, whose context is the caller's request with all it holds (the
// bench's saturating scenarios left the requests of 64 pooled connections in the heap).
func TestAPooledConnectionKeepsNothingOfItsExchange(t *testing.T) {
	srv := scripted(t, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", false)
	tr, dials := counted(t)
	tr.ResponseHeaders = []string{"Content-Type"} // its values in the answer's allocation
	var collected atomic.Int32
	exchangeOnce := func() {
		type state struct{ _ [4096]byte }
		st := &state{}
		runtime.AddCleanup(st, func(*atomic.Int32) { collected.Add(1) }, &collected)
		ctx := context.WithValue(context.Background(), struct{}{}, st)
		resp, err := tr.RoundTrip(post(t, ctx, srv.url(), `{"a":1}`))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != "{}" || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("answer %q %v, Content-Type %q", b, err, resp.Header.Get("Content-Type"))
		}
	}
	exchangeOnce()
	tr.mu.Lock()
	pooled := tr.nidle
	tr.mu.Unlock()
	if pooled != 1 {
		t.Fatalf("%d connections pooled after the answer, want 1", pooled)
	}
	for deadline := time.Now().Add(5 * time.Second); collected.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the pooled connection keeps its last exchange's request (and its context) alive")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	exchangeOnce() // the pooled connection serves the next
	if n := dials.Load(); n != 1 {
		t.Fatalf("two exchanges dialled %d times", n)
	}
}
