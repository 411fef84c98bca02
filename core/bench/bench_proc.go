package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // served only with benchPprofEnv
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// child is a process started by the bench; it dies with the bench (Pdeathsig) even when the
// bench is killed outright.
type child struct {
	name, addr, log string
	cpu             string   // as started, for restart
	env, args       []string // as started, for restart
	cmd             *exec.Cmd
	exited          chan struct{}
	err             error
}

// start runs the bench's own binary with args, pinned to cpu when pinning works.
func (b *bench) start(name, cpu string, env []string, args ...string) (*child, error) {
	logPath := filepath.Join(b.dir, name+".log")
	// Appended to: a restarted child's output follows its predecessor's.
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	defer f.Close()
	argv := append([]string{b.exe}, args...)
	if b.pinned {
		argv = append([]string{"taskset", "-c", cpu}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// Pdeathsig is tied to the forking thread: keep it fixed while the child starts.
	runtime.LockOSThread()
	err = cmd.Start()
	runtime.UnlockOSThread()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, log: logPath, cpu: cpu, env: env, args: args, cmd: cmd, exited: make(chan struct{})}
	for i, a := range args {
		if a == "-addr" && i+1 < len(args) {
			c.addr = args[i+1]
		}
	}
	go func() { c.err = cmd.Wait(); close(c.exited) }()
	b.children = append(b.children, c)
	return c, nil
}

// waitListening waits until the child accepts TCP connections on addr.
func waitListening(ctx context.Context, c *child, addr string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-c.exited:
			return fmt.Errorf("%s exited at start-up: %v", c.name, c.err)
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening on %s within 10s", c.name, addr)
		}
	}
}

// stop ends the child: SIGTERM, and SIGKILL if it has not exited 5 s later.
func (c *child) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

// restart stops c and starts it again as it was started, in c's place among the children;
// extraEnv is added to its environment. The caller waits for it to serve.
func (b *bench) restart(c *child, extraEnv ...string) (*child, error) {
	c.stop()
	env := c.env
	if len(extraEnv) > 0 {
		if env == nil { // nil inherited this process's environment
			env = os.Environ()
		}
		env = append(slices.Clip(env), extraEnv...)
	}
	n, err := b.start(c.name, c.cpu, env, c.args...)
	if err != nil {
		return nil, err
	}
	// start appended n; it takes c's place so that close keeps the order of the stops.
	b.children = b.children[:len(b.children)-1]
	b.children[slices.Index(b.children, c)] = n
	return n, nil
}

// close stops the children (gateway first, so that it drains while its upstream is up), then
// PostgreSQL, then removes the temporary directory.
func (b *bench) close() {
	for _, c := range slices.Backward(b.children) {
		c.stop()
	}
	if b.pg != nil {
		b.pg.Stop()
	}
	os.RemoveAll(b.dir)
}

// dumpLogs shows the end of every child's output after a failure.
func (b *bench) dumpLogs() {
	for _, c := range b.children {
		data, err := os.ReadFile(c.log)
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(os.Stderr, "--- last lines of %s output ---\n%s\n", c.name, strings.Join(lines[max(0, len(lines)-20):], "\n"))
	}
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer ln.Close()
	return ln.Addr().String()
}

// /proc readers.

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times.
func clockTicks() float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if hz, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err == nil && hz > 0 {
			return hz
		}
	}
	return 100
}

// cpuTime is utime+stime of a process (all its threads).
func cpuTime(pid int, hz float64) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu time: %w", err)
	}
	ticks, err := parseStatTicks(data)
	if err != nil {
		return 0, fmt.Errorf("cpu time of %d: %w", pid, err)
	}
	return time.Duration(float64(ticks) / hz * float64(time.Second)), nil
}

// parseStatTicks sums fields 14 (utime) and 15 (stime) of /proc/<pid>/stat.
func parseStatTicks(stat []byte) (int64, error) {
	st, err := parseStat(stat)
	return st.utime + st.stime, err
}

// procStat is the part of /proc/<pid>/stat the bench reads.
type procStat struct {
	comm                         string
	ppid                         int
	utime, stime, cutime, cstime int64
}

// parseStat reads /proc/<pid>/stat. The command name (field 2) may contain spaces and
// parentheses, so the other fields are counted after its last ')'.
func parseStat(stat []byte) (procStat, error) {
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return procStat{}, errors.New("malformed stat")
	}
	f := strings.Fields(string(stat[end+1:])) // f[0] is field 3 (state)
	if len(f) < 15 {
		return procStat{}, errors.New("short stat")
	}
	var n [5]int64
	for i, field := range []int{4, 14, 15, 16, 17} {
		v, err := strconv.ParseInt(f[field-3], 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("stat field %d: %w", field, err)
		}
		n[i] = v
	}
	return procStat{comm: string(stat[open+1 : end]), ppid: int(n[0]), utime: n[1], stime: n[2], cutime: n[3], cstime: n[4]}, nil
}

// postgresCPU is the CPU time of the throwaway PostgreSQL: its postmaster (a child of this
// process), the reaped backends counted in the postmaster's cutime/cstime, and the live ones.
// wait is how long its live processes were runnable but waited for a CPU (schedstat's run
// delay; 0 where the kernel does not keep it): on a shared CPU a commit takes its CPU time
// plus that wait.
func postgresCPU(hz float64) (cpu, wait time.Duration, err error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0, fmt.Errorf("postgres cpu: %w", err)
	}
	stats := map[int]procStat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		if st, err := parseStat(data); err == nil {
			stats[pid] = st
		}
	}
	var ticks int64
	for pid, st := range stats {
		if st.comm != "postgres" || st.ppid != os.Getpid() {
			continue
		}
		ticks += st.utime + st.stime + st.cutime + st.cstime
		wait += runDelay(pid)
		for c, cs := range stats {
			if cs.ppid == pid {
				ticks += cs.utime + cs.stime
				wait += runDelay(c)
			}
		}
	}
	return time.Duration(float64(ticks) / hz * float64(time.Second)), wait, nil
}

// runDelay is the time a process has spent runnable but not running: the second field of
// /proc/<pid>/schedstat, in nanoseconds; 0 when unreadable.
func runDelay(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		return 0
	}
	return parseRunDelay(data)
}

// parseRunDelay reads schedstat's "time on CPU, time runnable waiting, time slices" (ns).
func parseRunDelay(data []byte) time.Duration {
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0
	}
	ns, _ := strconv.ParseInt(f[1], 10, 64)
	return time.Duration(ns)
}

// memory returns VmHWM (peak resident set) and VmRSS in kB.
func memory(pid int) (hwm, rss int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("memory: %w", err)
	}
	return statusKB(data, "VmHWM"), statusKB(data, "VmRSS"), nil
}

// peakReset is a reset of a process's VmHWM: whether the kernel did it, the VmRSS in kB it
// started again from, and the VmHWM in kB it cleared (the peak of the run until then).
type peakReset struct {
	done  bool
	base  int64
	prior int64
}

// resetPeak sets a process's VmHWM back to its VmRSS (Linux 4.0 and later), so that the next
// reading is the peak of what follows rather than of the process's whole life.
func resetPeak(pid int) peakReset {
	prior, _, err := memory(pid)
	if err != nil {
		return peakReset{}
	}
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		return peakReset{}
	}
	_, rss, err := memory(pid)
	if err != nil {
		return peakReset{}
	}
	return peakReset{done: true, base: rss, prior: prior}
}

// procIO counts a process's read-like and write-like system calls (/proc/<pid>/io) and its
// threads' context switches (/proc/<pid>/task/*/status); zero when the files cannot be read,
// which only costs the syscall line of the report. The switches show what an idle core costs
// a proxy: each is tens of µs of CPU in a virtual machine, and a proxy that waits (on its
// clients, its database) pays one at every wake (issue 35, core/wire/rawsock).
type procIO struct{ syscr, syscw, switches int64 }

func (a procIO) minus(b procIO) procIO {
	return procIO{syscr: a.syscr - b.syscr, syscw: a.syscw - b.syscw, switches: a.switches - b.switches}
}

func (a procIO) plus(b procIO) procIO {
	return procIO{syscr: a.syscr + b.syscr, syscw: a.syscw + b.syscw, switches: a.switches + b.switches}
}

func readProcIO(pid int) procIO {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return procIO{}
	}
	io := procIO{syscr: max(statusKB(data, "syscr"), 0), syscw: max(statusKB(data, "syscw"), 0)}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
		if err != nil {
			continue // the thread ended
		}
		io.switches += max(statusKB(status, "voluntary_ctxt_switches"), 0) + max(statusKB(status, "nonvoluntary_ctxt_switches"), 0)
	}
	return io
}

// cpuBusy is the non-idle time of the layout's two groups of CPUs (the proxy's, the others)
// from /proc/stat.
func cpuBusy(hz float64, groups [2][]int) ([2]time.Duration, error) {
	var busy [2]time.Duration
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return busy, fmt.Errorf("cpu busy: %w", err)
	}
	for i, cpus := range groups {
		for _, c := range cpus {
			ticks, err := parseCPUBusy(data, "cpu"+strconv.Itoa(c))
			if err != nil {
				return busy, err
			}
			busy[i] += time.Duration(float64(ticks) / hz * float64(time.Second))
		}
	}
	return busy, nil
}

// parseCPUBusy sums the times of one "cpuN user nice system idle iowait irq softirq steal ..."
// line of /proc/stat except idle and iowait (and guest times, already inside user and nice).
func parseCPUBusy(stat []byte, cpu string) (int64, error) {
	for line := range strings.Lines(string(stat)) {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != cpu {
			continue
		}
		var busy int64
		for i, v := range f[1:9] {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/stat %s: %w", cpu, err)
			}
			if i != 3 && i != 4 { // idle, iowait
				busy += n
			}
		}
		return busy, nil
	}
	return 0, fmt.Errorf("/proc/stat has no %s line", cpu)
}

// statusKB reads a "Name:   123 kB" line of /proc/<pid>/status, or "name: 123" of
// /proc/<pid>/io (-1 when absent).
func statusKB(status []byte, name string) int64 {
	for line := range strings.Lines(string(status)) {
		rest, ok := strings.CutPrefix(line, name+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return -1
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return -1
		}
		return n
	}
	return -1
}

// benchProfileEnv, set by `bench -cpuprofile-dir` in the environment of the proxies it starts,
// makes SIGUSR1 toggle a CPU profile (gateway-1.pprof, bare-1.pprof, ...): the bench profiles
// exactly its measured rounds without any code in the gateway proper. Each toggle also writes
// the allocation profile (gateway-1.allocs-base.pprof at the start, gateway-1.allocs.pprof at
// the end: `go tool pprof -sample_index=alloc_objects -diff_base` gives the rounds' own) and
// the rounds' heap allocations as counted by the runtime (gateway-1.mallocs, one number),
// which the bench divides by the requests: allocations per request do not depend on the load
// of the machine, CPU times do.
const benchProfileEnv = "GATEWAY_BENCH_CPUPROFILE_DIR"

// benchProfileFirstEnv numbers the first profile of a restarted proxy, which continues its
// predecessor's series (1 when unset).
const benchProfileFirstEnv = "GATEWAY_BENCH_CPUPROFILE_FIRST"

// benchPprofEnv, when set to an address in the environment of `gateway serve`, serves
// net/http/pprof there with block and mutex profiling on: the bench's diagnosis of stalls
// (go tool pprof http://ADDR/debug/pprof/block, .../mutex, .../trace?seconds=5).
const benchPprofEnv = "GATEWAY_BENCH_PPROF_ADDR"

func init() {
	if addr := os.Getenv(benchPprofEnv); addr != "" && len(os.Args) > 1 && os.Args[1] == "serve" {
		runtime.SetBlockProfileRate(int(10 * time.Microsecond))
		runtime.SetMutexProfileFraction(10)
		go func() { fmt.Fprintln(os.Stderr, "bench pprof:", http.ListenAndServe(addr, nil)) }()
	}
	dir := os.Getenv(benchProfileEnv)
	if dir == "" {
		return
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	go func() {
		name := "gateway"
		if len(os.Args) > 1 && os.Args[1] == "bare-proxy" {
			name = "bare"
		}
		var f *os.File
		var mallocs uint64
		n, _ := strconv.Atoi(os.Getenv(benchProfileFirstEnv))
		n = max(n-1, 0)
		for range sig {
			if f != nil {
				pprof.StopCPUProfile()
				f.Close()
				f = nil
				writeAllocs(filepath.Join(dir, fmt.Sprintf("%s-%d.allocs.pprof", name, n)))
				m := totalMallocs() - mallocs
				_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.mallocs", name, n)), []byte(strconv.FormatUint(m, 10)+"\n"), 0o644)
				continue
			}
			n++
			writeAllocs(filepath.Join(dir, fmt.Sprintf("%s-%d.allocs-base.pprof", name, n)))
			mallocs = totalMallocs()
			var err error
			if f, err = os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", name, n))); err != nil {
				fmt.Fprintln(os.Stderr, "bench profile:", err)
				continue
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				fmt.Fprintln(os.Stderr, "bench profile:", err)
				f.Close()
				f = nil
			}
		}
	}()
}

// totalMallocs is the heap allocations of the process so far (runtime/metrics reads it
// without stopping the world, as runtime.ReadMemStats would).
func totalMallocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// writeAllocs writes the allocation profile so far (sampled: one per 512 KiB by default).
func writeAllocs(path string) {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench profile:", err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		fmt.Fprintln(os.Stderr, "bench profile:", err)
	}
}
