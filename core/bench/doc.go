// Package bench is `gateway bench` and `gateway bare-proxy`: the gateway against a bare
// reverse proxy, both in front of the same upstream simulator, under the same load.
//
// It is a package of its own inside core because it must link into the gateway binary (it
// re-executes that binary as serve, simulator and bare-proxy, and its profiling hook runs in
// every process it starts), and because it starts PostgreSQL (core/store/pgcluster) and reads
// the database's counters, which no front may do.
package bench

// Memory returns a process's VmHWM (peak resident set) and VmRSS in kB, as the bench reads
// them; the root package's memory test measures the gateway with the same reading.
func Memory(pid int) (hwm, rss int64, err error) { return memory(pid) }
