// Package clock reads the monotonic clock alone, for the request path's durations and
// intervals that never leave the process (idle times, a second's cache): time.Now reads the
// wall clock and the monotonic clock, two vDSO calls (~55 ns on the bench machine, ~28 for
// one), and these readings use only the second.
package clock

import (
	_ "unsafe" // go:linkname
)

// nanotime is the runtime's monotonic clock, the one time.Now's monotonic reading and
// time.Since use. The runtime keeps it reachable by linkname on purpose: widely used
// packages read it so (runtime/time_nofake.go lists them).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Mono is the monotonic clock in nanoseconds since an arbitrary start (the process's):
// only differences between two readings mean anything. It does not move with the wall
// clock's steps.
func Mono() int64 { return nanotime() }
