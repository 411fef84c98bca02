package h1

import (
	"net"
	"syscall"
	"unsafe"
)

// peeker is a connection's means to peek, made at its first check and kept: the raw
// connection (SyscallConn) and the function handed to its Read were two allocations per
// reuse, that is per upstream request.
type peeker struct {
	rc  syscall.RawConn
	fn  func(fd uintptr) bool
	ok  bool
	buf [1]byte
}

// alive peeks at an idle connection without blocking: a server that closed it (EOF), reset
// it, or sent something unasked makes it unusable. One system call, made before each reuse
// (staleCheckAfter).
func (p *peeker) alive(raw net.Conn) bool {
	if p.fn == nil {
		sc, ok := raw.(syscall.Conn)
		if !ok {
			return true
		}
		rc, err := sc.SyscallConn()
		if err != nil {
			return false
		}
		p.rc, p.fn = rc, p.peek
	}
	p.ok = false
	err := p.rc.Read(p.fn)
	return err == nil && p.ok
}

func (p *peeker) peek(fd uintptr) bool {
	_, _, errno := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&p.buf[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	p.ok = errno == syscall.EAGAIN
	return true // never wait for readiness
}
