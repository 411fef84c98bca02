package front

import (
	"bytes"
	"errors"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/jsontext"
	"modelgateway/core/wire/rawsock"
	"modelgateway/core/wire/requestid"
)

// WrapListener makes the answers net/http writes by itself, before any handler runs, speak
// the spec: a request whose headers exceed the server's MaxHeaderBytes gets the error envelope
// (spec 2.4) instead of Go's plain-text 431. net/http writes that answer straight to the
// connection in one write, byte for byte the constant below, so the connection swaps it.
func WrapListener(ln net.Listener) net.Listener { return listener{ln} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: rawsock.Wrap(c)}, nil
}

type conn struct{ net.Conn }

// SyscallConn hands the socket's raw connection on: front/h1 waits on it for a client's next
// bytes without holding a read buffer (a wrapper that hid it cost every stream 4 KiB).
func (c *conn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}

// goHeaderTooLarge is what net/http writes for headers over MaxHeaderBytes (net/http
// server.go, errTooLarge) after "HTTP/1.x "; a test pins it against the running Go version.
const goHeaderTooLarge = "431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n431 Request Header Fields Too Large"

func (c *conn) Write(b []byte) (int, error) {
	// The length comparison first: any other write costs one integer comparison.
	if len(b) == len("HTTP/1.1 ")+len(goHeaderTooLarge) && string(b[9:]) == goHeaderTooLarge && string(b[:7]) == "HTTP/1." {
		if _, err := c.Conn.Write(headerTooLarge()); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// headerTooLarge is the envelope answer; the request's own id was never read, so the gateway
// makes one.
func headerTooLarge() []byte {
	id := requestid.New()
	body, _ := jsontext.Marshal(apierror.Envelope{Error: apierror.Body{
		Message: "the request headers are larger than the server accepts", Type: apierror.Type,
		Code: apierror.InvalidRequest, RequestID: id,
	}})
	body = append(body, '\n')
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: application/json\r\nX-Request-Id: ")
	b.WriteString(id)
	b.WriteString("\r\nConnection: close\r\nContent-Length: ")
	b.WriteString(strconv.Itoa(len(body)))
	b.WriteString("\r\n\r\n")
	b.Write(body)
	return b.Bytes()
}

// LimitsFromEnv reads Limits from the environment of contract.md; unset or invalid values
// keep the defaults.
func LimitsFromEnv(getenv func(string) string) Limits {
	if getenv == nil {
		getenv = os.Getenv
	}
	num := func(name string) int64 {
		v, _ := strconv.ParseInt(getenv(name), 10, 64)
		return v
	}
	dur := func(name string) time.Duration {
		d, _ := time.ParseDuration(getenv(name))
		return d
	}
	return Limits{
		BodyBudget: num("GATEWAY_BODY_BUDGET"), KeyBodyBudget: num("GATEWAY_KEY_BODY_BUDGET"),
		ProfileBodyBudget: num("GATEWAY_PROFILE_BODY_BUDGET"), BodyIdle: dur("GATEWAY_BODY_IDLE_TIMEOUT"),
		BodyMinRate: num("GATEWAY_BODY_MIN_RATE"),
	}
}
