package h1

import (
	"net"
	"syscall"
	"unsafe"
)

// alive peeks at an idle connection without blocking: a server that closed it (EOF), reset
// it, or sent something unasked makes it unusable. One system call, made before each reuse
// (staleCheckAfter).
func alive(raw net.Conn) bool {
	sc, ok := raw.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ok = false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, errno := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
			syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		ok = errno == syscall.EAGAIN
		return true // never wait for readiness
	})
	return err == nil && ok
}
