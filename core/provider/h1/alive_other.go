//go:build !linux

package h1

import "net"

// peeker has no non-blocking peek here: a connection the server closed while idle is found
// by the exchange, which is then retried on a fresh connection.
type peeker struct{}

func (*peeker) alive(net.Conn) bool { return true }

func (*peeker) waitable(net.Conn) bool { return false }

func (*peeker) wait() bool { return false }
