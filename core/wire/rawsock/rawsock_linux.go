// Package rawsock reads and writes a stream socket with raw system calls, through the socket's
// own poller (syscall.RawConn), so that a read or a write does not tell the Go scheduler it
// entered a system call.
//
// Why (issue 35): net.Conn's Read and Write enter the scheduler's system-call state around
// each call. When the process has been idle, the first such call wakes the runtime's monitor
// thread (sysmon) from its deep sleep, and a wake from a system call sets it polling every
// 20 µs for the next millisecond and more; a call it sees last longer than one of its ticks
// makes it hand the processor to another thread. A gateway whose core waits on its clients
// and database part of the time pays that at every wake: in the 2-core bench the monitor
// thread alone took 5.8 % of the gateway's CPU (perf, per thread), its sleeps 0.37 context
// switches per request, each ~25 µs of CPU in this virtual machine. A socket set
// non-blocking (as Go sets every one) never blocks in read or write: a raw call returns at
// once, with EAGAIN when it would wait, and then the poller waits, as net's own Read does.
//
// Deadlines, Close and the poller's errors behave as net.Conn's do: errors come as
// *net.OpError with the same Op, Net, Source, Addr and wrapped error (io.EOF bare), so
// errors.Is(err, net.ErrClosed) and os.ErrDeadlineExceeded and Timeout() read the same.
package rawsock

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// maxIO bounds one raw call's bytes: a call holds the thread's processor for its whole
// length, which a copy of a few hundred KiB keeps under a millisecond.
const maxIO = 256 << 10

// Conn is a net.Conn whose Read and Write are raw system calls; everything else (deadlines,
// Close, addresses) is the wrapped connection's.
type Conn struct {
	net.Conn
	rc syscall.RawConn

	// Of the read in progress (rmu); readFn is c.read, bound once.
	rmu    sync.Mutex
	rbuf   []byte
	rn     int
	rerr   syscall.Errno
	readFn func(fd uintptr) bool

	// Of the write in progress (wmu).
	wmu     sync.Mutex
	wbuf    []byte
	wn      int
	werr    syscall.Errno
	writeFn func(fd uintptr) bool
}

// Wrap returns c read and written with raw system calls where c is a TCP or Unix stream
// connection, and c itself otherwise.
func Wrap(c net.Conn) net.Conn {
	var sc syscall.Conn
	switch t := c.(type) {
	case *net.TCPConn:
		sc = t
	case *net.UnixConn:
		if t.LocalAddr().Network() != "unix" {
			return c // a packet socket keeps net's reads
		}
		sc = t
	default:
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	r := &Conn{Conn: c, rc: rc}
	r.readFn, r.writeFn = r.read, r.write
	return r
}

// SyscallConn hands the socket's raw connection on (front/h1 and core/provider/h1 wait on
// it without a read buffer).
func (c *Conn) SyscallConn() (syscall.RawConn, error) { return c.rc, nil }

// Read reads as net.Conn's Read does: at most len(p) bytes of what is there, waiting for
// some; io.EOF at the end.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(p) > maxIO {
		p = p[:maxIO]
	}
	c.rmu.Lock()
	c.rbuf, c.rn, c.rerr = p, 0, 0
	err := c.rc.Read(c.readFn)
	n, errno := c.rn, c.rerr
	c.rbuf = nil
	c.rmu.Unlock()
	if err != nil {
		return 0, c.opError("read", err)
	}
	if errno != 0 {
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (c *Conn) read(fd uintptr) bool {
	for {
		n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.rbuf[0])), uintptr(len(c.rbuf)))
		switch errno {
		case 0:
			c.rn = int(n)
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // the poller waits for readable
		default:
			c.rerr = errno
			return true
		}
	}
}

// Write writes all of p, waiting for room as it needs, as net.Conn's Write does.
func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	c.wbuf, c.wn, c.werr = p, 0, 0
	var err error
	if len(p) > 0 {
		err = c.rc.Write(c.writeFn)
	}
	n, errno := c.wn, c.werr
	c.wbuf = nil
	c.wmu.Unlock()
	if err != nil {
		return n, c.opError("write", err)
	}
	if errno != 0 {
		return n, c.opError("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

func (c *Conn) write(fd uintptr) bool {
	for c.wn < len(c.wbuf) {
		p := c.wbuf[c.wn:]
		if len(p) > maxIO {
			p = p[:maxIO]
		}
		n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch errno {
		case 0:
			c.wn += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false // the poller waits for room
		default:
			c.werr = errno
			return true
		}
	}
	return true
}

// opError shapes an error as net's Read and Write do: the poller's own errors (closed,
// deadline) come from RawConn inside an *net.OpError of its own, whose inner error is kept.
func (c *Conn) opError(op string, err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	laddr := c.LocalAddr()
	return &net.OpError{Op: op, Net: laddr.Network(), Source: laddr, Addr: c.RemoteAddr(), Err: err}
}
