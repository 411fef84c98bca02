package main

import (
	"os"
	"runtime"
	"strings"

	"modelgateway/core/bench"
)

// sampleNoHeapProfile turns the heap profile's sampling off for serve: nothing reads a
// serving gateway's heap profile (it serves no pprof), yet every sampled allocation's stack
// got a bucket, and the runtime's table of them (1.4 MB, a page touched per bucket) and the
// buckets stayed resident for the process's life, 1.4 MB of the peak at 64 streams. The bench
// asks for heap and allocation profiles through its own variables (bench.ProfilesHeap), and
// GODEBUG=memprofilerate=N is an explicit choice: both keep the rate.
func sampleNoHeapProfile() {
	runtime.MemProfileRate = heapProfileRate(runtime.MemProfileRate, bench.ProfilesHeap(), os.Getenv("GODEBUG"))
}

// heapProfileRate is serve's heap profile rate, given the current one.
func heapProfileRate(rate int, benchProfiles bool, godebug string) int {
	if benchProfiles || strings.Contains(godebug, "memprofilerate=") {
		return rate
	}
	return 0
}
