package h1

import (
	"testing"

	"modelgateway/core/wire/rawsock"
)

// TestUpstreamSocketsAreRaw: a plain connection to an upstream is read and written with raw
// system calls (core/wire/rawsock), an exchange runs on it, and the peeker reaches its
// socket.
func TestUpstreamSocketsAreRaw(t *testing.T) {
	srv := scripted(t, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", false)
	tr, _ := counted(t)
	resp, body, err := exchange(t, tr, srv.url())
	if err != nil || resp.StatusCode != 200 || body != "{}" {
		t.Fatalf("exchange: %v, %q", err, body)
	}
	var c *conn
	tr.mu.Lock()
	for _, list := range tr.idle {
		c = list[len(list)-1]
	}
	tr.mu.Unlock()
	if c == nil {
		t.Fatal("no pooled connection")
	}
	if _, ok := c.raw.(*rawsock.Conn); !ok {
		t.Fatalf("upstream connection is %T, not raw", c.raw)
	}
	if !c.peeker.init(c.raw) {
		t.Fatal("the raw connection hides its SyscallConn from the peeker")
	}
}
