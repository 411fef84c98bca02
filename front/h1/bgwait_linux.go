package h1

import (
	"net"
	"syscall"
	"unsafe"
)

// waiter waits for a connection to become readable without reading it: the background read
// waits through a stream's whole life (and a keep-alive connection's idle time), and with a
// buffer to read into it held the connection's 4 KiB read buffer all that time. The raw
// connection and the function handed to its Read are made once per connection.
type waiter struct {
	tried bool // init ran
	rc    syscall.RawConn
	fn    func(fd uintptr) bool
	asked bool // fn's first call of a wait has peeked
	buf   [1]byte
}

// usable says whether the connection can be waited on without a buffer: a plain socket (or
// a wrapper that hands its SyscallConn on). A TLS connection may hold decrypted bytes the
// socket no longer shows: it is read as before.
func (w *waiter) usable(nc net.Conn) bool {
	if !w.tried {
		w.tried = true
		if sc, ok := nc.(syscall.Conn); ok {
			if rc, err := sc.SyscallConn(); err == nil {
				w.rc, w.fn = rc, w.ready
			}
		}
	}
	return w.fn != nil
}

// wait returns once the connection has something for a read (bytes, its end, an error), or
// with the read deadline's error. Its system calls are those of the read it replaces: a
// peek that finds nothing, then, once the poller says readable, nothing until the read.
func (w *waiter) wait() error {
	w.asked = false
	return w.rc.Read(w.fn)
}

func (w *waiter) ready(fd uintptr) bool {
	if w.asked {
		return true // the poller saw it readable: the read that follows finds out what
	}
	w.asked = true
	_, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&w.buf[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	return errno != syscall.EAGAIN
}
