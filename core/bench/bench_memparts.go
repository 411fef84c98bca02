package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// benchMemPartsEnv, set by the bench in the environment of the gateway it starts, names a
// directory where the gateway writes its resident set by part for the peak-RSS scenario: the
// first SIGUSR2 takes a snapshot (the streams' start) and starts a sampler that takes another
// at every new VmRSS maximum; the second writes both to memparts.txt. The parts come from
// /proc/self/smaps (what the kernel counts) and runtime/metrics (what the Go runtime says
// those pages hold), so that a peak above the target names its part: code and read-only data
// touched, the heap's objects or its headroom, stacks, the runtime's own metadata.
const benchMemPartsEnv = "GATEWAY_BENCH_MEMPARTS_DIR"

// benchMemHeapEnv, when set (by hand, beside GODEBUG=memprofilerate=4096 for a profile that
// says something), is a path prefix for the gateway's heap profiles at the streams' start and
// end: PREFIX-start.pprof and PREFIX-end.pprof.
const benchMemHeapEnv = "GATEWAY_BENCH_MEMPARTS_HEAP"

// memSamplePeriod is how often the sampler reads VmRSS (/proc/self/statm: a few µs).
const memSamplePeriod = 50 * time.Millisecond

func init() {
	dir := os.Getenv(benchMemPartsEnv)
	if dir == "" || len(os.Args) < 2 || os.Args[1] != "serve" {
		return
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR2)
	go func() {
		var stop chan struct{}
		var done sync.WaitGroup
		var start, peak memSnapshot
		for range sig {
			if stop == nil {
				start = takeMemSnapshot(true)
				peak = start
				writeHeapProfile("start")
				stop = make(chan struct{})
				done.Add(1)
				go func() {
					defer done.Done()
					sampleMemPeak(stop, &peak)
				}()
				continue
			}
			close(stop)
			done.Wait()
			stop = nil
			writeHeapProfile("end")
			var buf bytes.Buffer
			writeMemParts(&buf, start, peak)
			_ = os.WriteFile(filepath.Join(dir, "memparts.txt"), buf.Bytes(), 0o644)
		}
	}()
}

// writeHeapProfile writes the heap profile (as of the last collection) to benchMemHeapEnv's
// prefix-name.pprof, when that is set.
func writeHeapProfile(name string) {
	prefix := os.Getenv(benchMemHeapEnv)
	if prefix == "" {
		return
	}
	f, err := os.Create(prefix + "-" + name + ".pprof")
	if err != nil {
		return
	}
	defer f.Close()
	_ = pprof.Lookup("heap").WriteTo(f, 0)
}

// memPartsStep is how far VmRSS rises past the last reading of smaps before the sampler
// reads it again: a read of smaps is milliseconds of the gateway's CPU (and holds its
// memory map's lock), so the parts of the peak are those of a reading within this of it.
const memPartsStep = 256 // kB

// sampleMemPeak keeps in peak the snapshot of the highest VmRSS seen until stop.
func sampleMemPeak(stop <-chan struct{}, peak *memSnapshot) {
	t := time.NewTicker(memSamplePeriod)
	defer t.Stop()
	page := int64(os.Getpagesize())
	partsAt := peak.status["VmRSS"]
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		data, err := os.ReadFile("/proc/self/statm")
		if err != nil {
			return
		}
		f := strings.Fields(string(data))
		if len(f) < 2 {
			return
		}
		pages, _ := strconv.ParseInt(f[1], 10, 64)
		if rss := pages * page / 1024; rss > peak.status["VmRSS"] {
			parts := peak.parts
			*peak = takeMemSnapshot(rss >= partsAt+memPartsStep)
			if peak.parts == nil {
				peak.parts = parts
			} else {
				partsAt = rss
			}
		}
	}
}

// memSnapshot is the process's memory at one moment, in kB (status, smaps parts) and bytes
// (runtime metrics).
type memSnapshot struct {
	status  map[string]int64 // VmRSS, RssAnon, RssFile
	parts   map[string]int64 // smaps Rss by part
	metrics map[string]uint64
}

// memPartNames orders the smaps parts for printing.
var memPartNames = []string{"text", "rodata", "data+bss", "heap arenas", "other anon", "other"}

// memMetricNames are the runtime metrics printed, in order.
var memMetricNames = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/os-stacks:bytes",
	"/memory/classes/metadata/mspan/inuse:bytes",
	"/memory/classes/metadata/mcache/inuse:bytes",
	"/memory/classes/metadata/other:bytes",
	"/memory/classes/profiling/buckets:bytes",
	"/memory/classes/other:bytes",
	"/memory/classes/total:bytes",
	"/gc/heap/live:bytes",
	"/gc/heap/goal:bytes",
	"/gc/scan/stack:bytes",
	"/gc/scan/globals:bytes",
	"/gc/heap/objects:objects",
	"/sched/goroutines:goroutines",
	"/gc/cycles/total:gc-cycles",
}

// takeMemSnapshot reads status and the runtime's metrics, and smaps with withParts.
func takeMemSnapshot(withParts bool) memSnapshot {
	s := memSnapshot{status: map[string]int64{}, metrics: map[string]uint64{}}
	if data, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, k := range []string{"VmRSS", "RssAnon", "RssFile"} {
			s.status[k] = statusKB(data, k)
		}
	}
	if withParts {
		if f, err := os.Open("/proc/self/smaps"); err == nil {
			exe, _ := os.Executable()
			s.parts = smapsParts(f, exe)
			f.Close()
		}
	}
	samples := make([]metrics.Sample, len(memMetricNames))
	for i, n := range memMetricNames {
		samples[i].Name = n
	}
	metrics.Read(samples)
	for _, m := range samples {
		if m.Value.Kind() == metrics.KindUint64 {
			s.metrics[m.Name] = m.Value.Uint64()
		}
	}
	return s
}

// smapsParts sums the Rss (kB) of a smaps listing by part: the executable's code (r-x), its
// read-only data (r--), its data and the anonymous mapping right after it (bss), anonymous
// mappings in the Go heap's address range (arenas from 0xc000000000: objects, free spans,
// goroutine stacks), other anonymous mappings (the runtime's metadata, thread stacks) and
// the rest (vdso, the main thread's stack).
func smapsParts(r io.Reader, exe string) map[string]int64 {
	parts := map[string]int64{}
	sc := bufio.NewScanner(r)
	part := "other"
	var lastExeEnd uint64
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && len(f[1]) == 4 {
			lo, hi, _ := strings.Cut(f[0], "-")
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				path := ""
				if len(f) >= 6 {
					path = strings.TrimSuffix(strings.Join(f[5:], " "), " (deleted)")
				}
				part = mappingPart(start, f[1], path, exe, lastExeEnd)
				if path == exe && exe != "" {
					lastExeEnd = end
				}
				continue
			}
		}
		if strings.HasPrefix(line, "Rss:") && len(f) >= 2 {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			parts[part] += kb
		}
	}
	return parts
}

func mappingPart(start uint64, perms, path, exe string, lastExeEnd uint64) string {
	switch {
	case path == exe && exe != "" && perms[2] == 'x':
		return "text"
	case path == exe && exe != "" && perms[1] == 'w':
		return "data+bss"
	case path == exe && exe != "":
		return "rodata"
	case path == "" && start == lastExeEnd && lastExeEnd != 0:
		return "data+bss"
	case path == "" && start >= 0xc000000000 && start < 0x7f0000000000:
		return "heap arenas"
	case path == "":
		return "other anon"
	}
	return "other"
}

// writeMemParts prints the two snapshots side by side in MB.
func writeMemParts(w io.Writer, start, peak memSnapshot) {
	fmt.Fprintf(w, "  %-44s %9s %9s\n", "gateway memory by part (MB)", "start", "peak")
	row := func(name string, a, b float64) { fmt.Fprintf(w, "  %-44s %9.2f %9.2f\n", name, a, b) }
	for _, k := range []string{"VmRSS", "RssAnon", "RssFile"} {
		row(k, float64(start.status[k])/1024, float64(peak.status[k])/1024)
	}
	for _, k := range memPartNames { // the peak's: within memPartsStep of it
		row("smaps Rss "+k, float64(start.parts[k])/1024, float64(peak.parts[k])/1024)
	}
	for _, k := range memMetricNames {
		a, b := float64(start.metrics[k]), float64(peak.metrics[k])
		if strings.HasSuffix(k, ":bytes") {
			row(k, a/(1<<20), b/(1<<20))
			continue
		}
		fmt.Fprintf(w, "  %-44s %9.0f %9.0f\n", k, a, b)
	}
}

// markMemParts signals the gateway to start or end its memory sampling (benchMemPartsEnv).
func (b *bench) markMemParts() {
	_ = b.gw.cmd.Process.Signal(syscall.SIGUSR2)
}

// printMemParts prints what the gateway wrote at the end of its sampling, if it did.
func (b *bench) printMemParts(w io.Writer) {
	path := filepath.Join(b.dir, "memparts.txt")
	for range 20 { // the gateway writes it within a few ms of the signal
		if data, err := os.ReadFile(path); err == nil {
			_, _ = w.Write(data)
			_ = os.Remove(path)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ProfilesHeap says whether the bench asked this process for heap or allocation profiles
// (-cpuprofile-dir, its pprof address, or the memory parts' heap profiles): then serve keeps
// sampling its allocations, which it otherwise leaves off.
func ProfilesHeap() bool {
	for _, k := range []string{benchProfileEnv, benchPprofEnv, benchMemHeapEnv} {
		if os.Getenv(k) != "" {
			return true
		}
	}
	return false
}
