package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
)

// layout is where the bench's processes run. "two" (the default, and what a 2-CPU machine
// allows): both proxies on CPU 0, everything else - this process's load generator, the
// simulators, PostgreSQL - on CPU 1. "many" (4 CPUs or more): the proxies still on CPU 0,
// PostgreSQL, the upstream simulators and the load generator each on a set of its own, so
// that PostgreSQL's cost stops landing on the load generator and no helper waits behind
// another for a CPU (issue 35 measured the gateway so on 16 cores).
type layout struct {
	name                  string
	proxy, load, upstream string // taskset CPU lists
	pg                    string // "" = PostgreSQL inherits the load generator's CPUs
	loadCPUs              int    // GOMAXPROCS of the load generator
	// busy sums /proc/stat's CPUs: [0] the proxy's, [1] all the others.
	busy [2][]int
}

func newLayout(name string, ncpu int) (layout, error) {
	switch name {
	case "", "two":
		return layout{name: "two", proxy: "0", load: "1", upstream: "1", loadCPUs: 1, busy: [2][]int{{0}, {1}}}, nil
	case "many":
		if ncpu < 4 {
			return layout{}, fmt.Errorf("bench: -layout many needs 4 CPUs or more, this machine has %d (-layout two)", ncpu)
		}
		// CPU 0 for the proxy; of the rest, a quarter each (at least one) for PostgreSQL and
		// the upstreams, the remainder for the load generator, which works hardest.
		rest := ncpu - 1
		pg := max(1, rest/4)
		up := max(1, rest/4)
		l := layout{name: "many", proxy: "0",
			pg:       cpuRange(1, pg),
			upstream: cpuRange(1+pg, up),
			load:     cpuRange(1+pg+up, rest-pg-up),
			loadCPUs: rest - pg - up,
			busy:     [2][]int{{0}, nil}}
		for c := 1; c < ncpu; c++ {
			l.busy[1] = append(l.busy[1], c)
		}
		return l, nil
	}
	return layout{}, fmt.Errorf("bench: -layout %q: want two or many", name)
}

// cpuRange is taskset's list of n CPUs from first.
func cpuRange(first, n int) string {
	if n == 1 {
		return strconv.Itoa(first)
	}
	return fmt.Sprintf("%d-%d", first, first+n-1)
}

// rest names the CPUs of busy[1] in the report.
func (l layout) rest() string {
	if l.name == "two" {
		return "CPU 1"
	}
	return "CPUs " + cpuRange(1, len(l.busy[1]))
}

func (l layout) describe() string {
	if l.name == "two" {
		return "layout two: proxies on CPU 0, load generator + simulators + PostgreSQL on CPU 1"
	}
	pg := "PostgreSQL on " + l.pg
	return fmt.Sprintf("layout many: proxies on CPU 0, %s, upstream simulators on %s, load generator on %s", pg, l.upstream, l.load)
}

// pinPostgres moves the throwaway PostgreSQL (its postmaster, a child of this process, and
// the processes it has started) to the layout's PostgreSQL CPUs, and with -pg-realtime gives
// them the real-time policy SCHED_RR; backends forked later inherit both from the postmaster.
// No move where it shares the load generator's CPUs.
func (b *bench) pinPostgres() error {
	pin := b.pinned && b.layout.pg != ""
	if b.pg == nil || (!pin && !b.cfg.pgRealtime) {
		return nil
	}
	masters, children, err := postgresProcesses()
	if err != nil {
		return fmt.Errorf("pin PostgreSQL: %w", err)
	}
	// A postmaster's failure is the bench's; a child's is not (it may have ended meanwhile).
	for i, pid := range append(masters, children...) {
		master := i < len(masters)
		if pin {
			// -a: every thread.
			out, err := exec.Command("taskset", "-a", "-cp", b.layout.pg, strconv.Itoa(pid)).CombinedOutput()
			if err != nil && master {
				return fmt.Errorf("pin PostgreSQL: %v: %s", err, bytes.TrimSpace(out))
			}
		}
		if b.cfg.pgRealtime {
			// The lowest real-time priority: ahead of every normal process, which is all it
			// takes (a nice value does not: a woken backend still waited for CPU 1 as long).
			out, err := exec.Command("chrt", "-r", "-p", "1", strconv.Itoa(pid)).CombinedOutput()
			if err != nil && master {
				return fmt.Errorf("-pg-realtime: %v: %s (needs chrt and CAP_SYS_NICE)", err, bytes.TrimSpace(out))
			}
		}
	}
	return nil
}

// postgresProcesses is the pids of the postmasters this process started and of their
// children.
func postgresProcesses() (masters, children []int, err error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, nil, err
	}
	parents := map[int]int{} // pid -> ppid of every postgres process
	for _, e := range entries {
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		st, err := parseStat(data)
		pid, perr := strconv.Atoi(e.Name())
		if err != nil || perr != nil || st.comm != "postgres" {
			continue
		}
		parents[pid] = st.ppid
	}
	for pid, ppid := range parents {
		switch {
		case ppid == os.Getpid():
			masters = append(masters, pid)
		case parents[ppid] == os.Getpid():
			children = append(children, pid)
		}
	}
	if len(masters) == 0 {
		return nil, nil, fmt.Errorf("no postmaster among this process's children")
	}
	return masters, children, nil
}

// pinSelf moves every thread of this process to the load generator's CPUs (children inherit
// them until their own taskset); without taskset or a second CPU the bench runs unpinned.
func (b *bench) pinSelf() bool {
	if runtime.NumCPU() < 2 {
		fmt.Fprintln(os.Stderr, "bench: fewer than 2 CPUs, not pinning")
		return false
	}
	out, err := exec.Command("taskset", "-a", "-cp", b.layout.load, strconv.Itoa(os.Getpid())).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: cannot pin (%v: %s), running unpinned\n", err, bytes.TrimSpace(out))
		return false
	}
	// Fix GOMAXPROCS to the CPUs left, so that the runtime does not run more Ps than it has.
	runtime.GOMAXPROCS(b.layout.loadCPUs)
	return true
}
