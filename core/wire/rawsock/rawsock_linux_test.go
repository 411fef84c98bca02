package rawsock

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// pair is a connected TCP pair: the client end dialed, the server end accepted.
func pair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func wrapped(t *testing.T, c net.Conn) *Conn {
	t.Helper()
	r, ok := Wrap(c).(*Conn)
	if !ok {
		t.Fatalf("Wrap(%T) did not wrap", c)
	}
	return r
}

// TestBytesArriveWhole: both directions at once, more than a raw call's bound and the
// socket buffers hold, so writes wait for room and reads for bytes; every byte arrives in
// order.
func TestBytesArriveWhole(t *testing.T) {
	client, server := pair(t)
	a, b := wrapped(t, client), wrapped(t, server)
	out := make([]byte, 8<<20+123)
	for i := range out {
		out[i] = byte(i * 7 / 3)
	}
	var wg sync.WaitGroup
	for _, dir := range [][2]*Conn{{a, b}, {b, a}} {
		w, r := dir[0], dir[1]
		wg.Add(2)
		go func() {
			defer wg.Done()
			n, err := w.Write(out)
			if n != len(out) || err != nil {
				t.Errorf("write: %d of %d, %v", n, len(out), err)
			}
		}()
		go func() {
			defer wg.Done()
			got, err := io.ReadAll(io.LimitReader(r, int64(len(out))))
			if err != nil || !bytes.Equal(got, out) {
				t.Errorf("read %d bytes (%v), equal %v", len(got), err, bytes.Equal(got, out))
			}
		}()
	}
	wg.Wait()
	if n, err := a.Read(nil); n != 0 || err != nil {
		t.Fatalf("empty read: %d, %v", n, err)
	}
}

// TestErrorsReadAsNets: each way a read or write fails gives what net.Conn gives for the
// same failure: io.EOF bare at the end, and otherwise an *net.OpError with the same text,
// Timeout and wrapped error.
func TestErrorsReadAsNets(t *testing.T) {
	type outcome struct {
		n   int
		err error
	}
	cases := []struct {
		name string
		do   func(t *testing.T, own, peer net.Conn) outcome
		is   error
	}{
		{"end", func(t *testing.T, own, peer net.Conn) outcome {
			peer.Close()
			n, err := own.Read(make([]byte, 10))
			return outcome{n, err}
		}, io.EOF},
		{"deadline", func(t *testing.T, own, peer net.Conn) outcome {
			own.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			n, err := own.Read(make([]byte, 10))
			return outcome{n, err}
		}, os.ErrDeadlineExceeded},
		{"closed read", func(t *testing.T, own, peer net.Conn) outcome {
			own.Close()
			n, err := own.Read(make([]byte, 10))
			return outcome{n, err}
		}, net.ErrClosed},
		{"closed write", func(t *testing.T, own, peer net.Conn) outcome {
			own.Close()
			n, err := own.Write([]byte("x"))
			return outcome{n, err}
		}, net.ErrClosed},
		{"reset", func(t *testing.T, own, peer net.Conn) outcome {
			peer.(interface{ SetLinger(int) error }).SetLinger(0)
			peer.Close()
			time.Sleep(20 * time.Millisecond)
			n, err := own.Read(make([]byte, 10))
			return outcome{n, err}
		}, syscall.ECONNRESET},
		{"write after reset", func(t *testing.T, own, peer net.Conn) outcome {
			// A write to a reset socket gives EPIPE (or ECONNRESET first) and no SIGPIPE
			// that would end the process.
			peer.(interface{ SetLinger(int) error }).SetLinger(0)
			peer.Close()
			time.Sleep(20 * time.Millisecond)
			for range 10 {
				if _, err := own.Write([]byte("x")); err != nil {
					if errors.Is(err, syscall.ECONNRESET) {
						_, err = own.Write([]byte("x")) // the next one: EPIPE, as for net
					}
					return outcome{0, err}
				}
			}
			return outcome{}
		}, syscall.EPIPE},
		{"write deadline", func(t *testing.T, own, peer net.Conn) outcome {
			own.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			n, err := own.Write(make([]byte, 64<<20)) // nobody reads: the buffers fill
			return outcome{n, err}
		}, os.ErrDeadlineExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c1, s1 := pair(t)
			want := tc.do(t, c1, s1)
			c2, s2 := pair(t)
			own := wrapped(t, c2)
			if _, ok := s2.(*net.TCPConn); !ok {
				t.Fatalf("peer %T", s2)
			}
			got := tc.do(t, own, s2)
			if !errors.Is(want.err, tc.is) || !errors.Is(got.err, tc.is) {
				t.Fatalf("net: %v; raw: %v; both should be %v", want.err, got.err, tc.is)
			}
			if tc.is == io.EOF && got.err != io.EOF {
				t.Fatalf("end: %#v, want io.EOF itself", got.err)
			}
			if got.n < 0 || (tc.name != "write deadline" && got.n != 0) {
				t.Fatalf("bytes: %d", got.n) // only a write cut by its deadline wrote some
			}
			if tc.is == io.EOF {
				return
			}
			var wo, go_ *net.OpError
			if !errors.As(want.err, &wo) || !errors.As(got.err, &go_) {
				t.Fatalf("net %T, raw %T: want *net.OpError", want.err, got.err)
			}
			if wo.Op != go_.Op || wo.Net != go_.Net || wo.Timeout() != go_.Timeout() {
				t.Fatalf("net %+v, raw %+v", wo, go_)
			}
			// The texts differ only by the connections' ports.
			strip := func(e *net.OpError, c net.Conn) string {
				s := e.Error()
				s = string(bytes.ReplaceAll([]byte(s), []byte(c.LocalAddr().String()), []byte("L")))
				return string(bytes.ReplaceAll([]byte(s), []byte(c.RemoteAddr().String()), []byte("R")))
			}
			if a, b := strip(wo, c1), strip(go_, c2); a != b {
				t.Fatalf("texts: net %q, raw %q", a, b)
			}
		})
	}
}

// TestWrapTakesStreamSocketsOnly: TCP and Unix stream connections are wrapped; anything
// else (a pipe, a TLS-like wrapper, a datagram socket) comes back itself.
func TestWrapTakesStreamSocketsOnly(t *testing.T) {
	client, _ := pair(t)
	wrapped(t, client)

	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	uc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	u := wrapped(t, uc)
	if got, err := io.ReadAll(u); string(got) != "hi" || err != nil {
		t.Fatalf("unix read %q, %v", got, err)
	}

	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	if Wrap(p1) != p1 {
		t.Fatal("a pipe was wrapped")
	}
	type other struct{ net.Conn }
	o := other{client}
	if Wrap(o) != net.Conn(o) {
		t.Fatal("a wrapper was wrapped")
	}
	dg, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(t.TempDir(), "d"), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer dg.Close()
	if Wrap(dg) != net.Conn(dg) {
		t.Fatal("a datagram socket was wrapped")
	}
}

// TestReadAndWriteRunTogether: a read waiting on one goroutine does not hold up a write on
// another (their states are apart), as with net.Conn.
func TestReadAndWriteRunTogether(t *testing.T) {
	client, server := pair(t)
	a, b := wrapped(t, client), wrapped(t, server)
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 4)
		_, err := io.ReadFull(a, buf)
		done <- err
	}()
	time.Sleep(10 * time.Millisecond) // the read waits on the poller
	if _, err := a.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(b, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("peer read %q, %v", buf, err)
	}
	if _, err := b.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
