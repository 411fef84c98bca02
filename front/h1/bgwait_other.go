//go:build !linux

package h1

import "net"

// waiter is the buffer-less wait of Linux (bgwait_linux.go); elsewhere the background read
// reads into the connection's buffer as before.
type waiter struct{}

func (*waiter) usable(net.Conn) bool { return false }

func (*waiter) wait() error { return nil }
