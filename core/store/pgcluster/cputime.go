package pgcluster

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// CPUTime is the time on CPU of the PostgreSQL servers this process started: each postmaster
// (a child of this process) and the postmaster's children, from /proc/<pid>/schedstat
// (nanoseconds, unlike stat's 10 ms ticks). ok is false when there is none (DATABASE_URL
// named another server), or off Linux.
func CPUTime() (total time.Duration, ok bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	parent := map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command sits in parentheses and may hold spaces; the fields after it start
		// with the state and the parent's pid.
		end := strings.LastIndexByte(string(stat), ')')
		if end < 0 || !strings.Contains(string(stat[:end]), "(postgres") {
			continue
		}
		f := strings.Fields(string(stat[end+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		parent[pid] = ppid
	}
	self := os.Getpid()
	for pid, ppid := range parent {
		if ppid != self && parent[ppid] != self {
			continue
		}
		ok = true
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(data)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			total += time.Duration(ns)
		}
	}
	return total, ok
}
