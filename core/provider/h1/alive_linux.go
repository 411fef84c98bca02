package h1

import (
	"net"
	"syscall"
	"unsafe"
)

// peeker is a connection's means to peek, made at its first check and kept: the raw
// connection (SyscallConn) and the functions handed to its Read were two allocations per
// reuse, that is per upstream request.
type peeker struct {
	rc     syscall.RawConn
	fn     func(fd uintptr) bool
	waitFn func(fd uintptr) bool
	ok     bool
	asked  bool // waitFn's first call of a wait has peeked
	waited bool // and found nothing
	buf    [1]byte
}

// init makes the raw connection and the functions; false where raw is no socket.
func (p *peeker) init(raw net.Conn) bool {
	if p.fn == nil {
		sc, ok := raw.(syscall.Conn)
		if !ok {
			return false
		}
		rc, err := sc.SyscallConn()
		if err != nil {
			return false
		}
		p.rc, p.fn, p.waitFn = rc, p.peek, p.ready
	}
	return true
}

// alive peeks at an idle connection without blocking: a server that closed it (EOF), reset
// it, or sent something unasked makes it unusable. One system call, made before each reuse
// (staleCheckAfter).
func (p *peeker) alive(raw net.Conn) bool {
	if p.fn == nil {
		if _, ok := raw.(syscall.Conn); !ok {
			return true
		}
		if !p.init(raw) {
			return false
		}
	}
	p.ok = false
	err := p.rc.Read(p.fn)
	return err == nil && p.ok
}

func (p *peeker) peek(fd uintptr) bool {
	_, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&p.buf[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	p.ok = errno == syscall.EAGAIN
	return true // never wait for readiness
}

// waitable says whether wait can wait on raw without reading it.
func (p *peeker) waitable(raw net.Conn) bool { return p.init(raw) }

// wait returns once raw has something for a read (bytes, its end, an error) or its read
// deadline passed (the read that follows says which), and says whether it had to wait:
// nothing was there at first. Its system calls are those of the read it stands for when
// nothing is there (a peek instead of a read that finds nothing, then the poller), one more
// when something is.
func (p *peeker) wait() bool {
	p.asked, p.waited = false, false
	_ = p.rc.Read(p.waitFn)
	return p.waited
}

func (p *peeker) ready(fd uintptr) bool {
	if p.asked {
		return true // the poller saw it readable
	}
	p.asked = true
	_, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&p.buf[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	p.waited = errno == syscall.EAGAIN
	return !p.waited
}
