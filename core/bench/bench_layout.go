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
// the processes it has started) to the layout's PostgreSQL CPUs; backends forked later
// inherit the postmaster's. Nothing to do where it shares the load generator's CPUs.
func (b *bench) pinPostgres() error {
	if !b.pinned || b.layout.pg == "" || b.pg == nil {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("pin PostgreSQL: %w", err)
	}
	n := 0
	for _, e := range entries {
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		st, err := parseStat(data)
		if err != nil || st.comm != "postgres" || st.ppid != os.Getpid() {
			continue
		}
		// -a: every thread; the postmaster's children are pinned by the same call on each.
		out, err := exec.Command("taskset", "-a", "-cp", b.layout.pg, e.Name()).CombinedOutput()
		if err != nil {
			return fmt.Errorf("pin PostgreSQL: %v: %s", err, bytes.TrimSpace(out))
		}
		pid := e.Name()
		for _, c := range entries {
			cd, err := os.ReadFile("/proc/" + c.Name() + "/stat")
			if err != nil {
				continue
			}
			if cs, err := parseStat(cd); err == nil && strconv.Itoa(cs.ppid) == pid {
				_ = exec.Command("taskset", "-a", "-cp", b.layout.pg, c.Name()).Run()
			}
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("pin PostgreSQL: no postmaster among this process's children")
	}
	return nil
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
