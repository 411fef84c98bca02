package h1

import (
	"bufio"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// An answer of a few KiB that arrives at once (a fast upstream's whole stream) is read by
// the exchange's first read: the body then reports all of it buffered (Buffered), so the
// stream's reader neither flushes its client nor reads the connection again before its end.
// A paced answer's bytes are reported as they arrive, nothing more, and once the first
// read's bytes are consumed the exchange holds a small buffer, as a waiting stream always
// did: the larger first read costs no memory per waiting stream.
func TestFirstReadAndBuffered(t *testing.T) {
	t.Parallel()
	whole := strings.Repeat("x", 6000) // more than the small buffer, less than the first read
	next := make(chan struct{})
	var once sync.Once
	send := func() { once.Do(func() { close(next) }) }
	srv := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, _, ok := readRequest(br); !ok {
			return
		}
		head := "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(whole)+5) + "\r\n\r\n"
		if _, err := io.WriteString(c, head+whole); err != nil { // one write: one arrival
			return
		}
		<-next
		_, _ = io.WriteString(c, "paced")
	})
	t.Cleanup(send) // after the server's, so run before it: its cleanup waits for serve
	tr, _ := counted(t)
	resp, err := tr.RoundTrip(post(t, context.Background(), srv.url(), ""))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b := resp.Body.(*body)
	// The head's read took the whole arrival (loopback delivers one write as one segment).
	if got := b.Buffered(); got != len(whole) {
		t.Fatalf("buffered %d after one arrival of %d", got, len(whole))
	}
	if size := b.c.br.Size(); size != firstReadSize {
		t.Fatalf("the exchange read its head into %d bytes, want the first read's %d", size, firstReadSize)
	}
	p := make([]byte, 4096)
	n, err := io.ReadFull(b, p)
	if err != nil || n != len(p) {
		t.Fatal(n, err)
	}
	if got := b.Buffered(); got != len(whole)-len(p) {
		t.Fatalf("buffered %d after reading %d of %d", got, len(p), len(whole))
	}
	rest, err := io.ReadAll(io.LimitReader(b, int64(len(whole)-len(p))))
	if err != nil || len(rest) != len(whole)-len(p) {
		t.Fatal(len(rest), err)
	}
	// Drained: nothing buffered while the upstream has sent nothing more, and a small buffer.
	if got := b.Buffered(); got != 0 {
		t.Fatalf("buffered %d with every arrived byte read", got)
	}
	if size := b.c.br.Size(); size != readSize {
		t.Fatalf("a drained exchange holds %d bytes of buffer, want %d", size, readSize)
	}
	send()
	last, err := io.ReadAll(b)
	if err != nil || string(last) != "paced" {
		t.Fatalf("%q %v", last, err)
	}
	if got := b.Buffered(); got != 0 {
		t.Fatalf("buffered %d after the end", got)
	}
}

// A chunked stream's event arrives as its chunk with the chunk's line end: once the event is
// read, the stream waits for the next one holding the small buffer, as a Content-Length one
// does, not the first read's (64 waiting streams held 8 KiB each instead of 4).
func TestAWaitingChunkedStreamHoldsTheSmallBuffer(t *testing.T) {
	t.Parallel()
	event := "data: {\"x\":1}\n\n"
	chunk := strconv.FormatInt(int64(len(event)), 16) + "\r\n" + event + "\r\n"
	next := make(chan struct{})
	var once sync.Once
	send := func() { once.Do(func() { close(next) }) }
	srv := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, _, ok := readRequest(br); !ok {
			return
		}
		head := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		if _, err := io.WriteString(c, head+chunk); err != nil { // one write: one arrival
			return
		}
		<-next
		_, _ = io.WriteString(c, chunk+"0\r\n\r\n")
	})
	t.Cleanup(send)
	tr, _ := counted(t)
	resp, err := tr.RoundTrip(post(t, context.Background(), srv.url(), ""))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b := resp.Body.(*body)
	if size := b.c.br.Size(); size != firstReadSize {
		t.Fatalf("the exchange read its head into %d bytes, want the first read's %d", size, firstReadSize)
	}
	p := make([]byte, 4096)
	n, err := b.Read(p)
	if err != nil || string(p[:n]) != event {
		t.Fatalf("first read %q %v, want the first event", p[:n], err)
	}
	// Waiting for the next chunk: nothing buffered, and a small buffer.
	if got := b.c.br.Buffered(); got != 0 {
		t.Fatalf("%d bytes left buffered after the first event", got)
	}
	if size := b.c.br.Size(); size != readSize {
		t.Fatalf("a stream waiting for its next chunk holds %d bytes of buffer, want %d", size, readSize)
	}
	send()
	rest, err := io.ReadAll(b)
	if err != nil || string(rest) != event {
		t.Fatalf("%q %v, want the second event and the end", rest, err)
	}
}
