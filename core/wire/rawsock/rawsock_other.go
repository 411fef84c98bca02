//go:build !linux

package rawsock

import "net"

// Wrap returns c: raw reads and writes are made on Linux only.
func Wrap(c net.Conn) net.Conn { return c }
