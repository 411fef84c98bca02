package front

import (
	"io"
	"net"
	"testing"

	"modelgateway/core/wire/rawsock"
)

// TestAcceptedConnectionsAreRaw: a connection the wrapped listener accepts is read and
// written with raw system calls (core/wire/rawsock), hands its SyscallConn on (front/h1
// waits on it), and carries bytes both ways.
func TestAcceptedConnectionsAreRaw(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := WrapListener(inner)
	defer ln.Close()
	go func() {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err == nil {
			c.Write([]byte("ping"))
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*conn).Conn.(*rawsock.Conn); !ok {
		t.Fatalf("accepted connection wraps %T, not a raw socket", c.(*conn).Conn)
	}
	if _, err := c.(*conn).SyscallConn(); err != nil {
		t.Fatalf("SyscallConn: %v", err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q, %v", buf, err)
	}
	if _, err := c.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
}
