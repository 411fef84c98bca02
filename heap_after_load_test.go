package main

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"modelgateway/core/residency"
	"modelgateway/core/simulator"
)

// BenchmarkHeapAfterLoad is a driver of make bench's peak-RSS question in one process, not a
// benchmark (it runs once, whatever b.N): the gateway's heap while it holds 64 paced
// translated streams (scenario 3) on its own, then again after the saturating scenarios 1, 2
// and 2b, with a heap profile of each (4 KiB sampling) in GATEWAY_HEAP_DRIVER_DIR, so that
//
//	go tool pprof -sample_index=inuse_space -top -diff_base DIR/alone.pprof DIR/after.pprof
//
// names what the saturating scenarios leave behind. The client and the simulators live in the
// process too, the same in both phases.
//
//	GATEWAY_HEAP_DRIVER_DIR=/tmp/heap go test -run x -bench HeapAfterLoad -benchtime 1x .
func BenchmarkHeapAfterLoad(b *testing.B) {
	dir := os.Getenv("GATEWAY_HEAP_DRIVER_DIR")
	if dir == "" {
		b.Skip("GATEWAY_HEAP_DRIVER_DIR is not set")
	}
	// GATEWAY_HEAP_DRIVER_RATE=0 takes no profiles: sampling unwinds each sampled stack
	// (the pclntab) and writing a profile symbolizes them, which the executable's resident
	// pages then show.
	runtime.MemProfileRate = 4096
	if r := os.Getenv("GATEWAY_HEAP_DRIVER_RATE"); r != "" {
		runtime.MemProfileRate, _ = strconv.Atoi(r)
	}
	// heapProfile writes the heap profile as name.pprof in dir, when profiles are taken.
	heapProfile := func(name string) {
		if runtime.MemProfileRate == 0 {
			return
		}
		f, err := os.Create(filepath.Join(dir, name+".pprof"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			b.Fatal(err)
		}
	}
	canned := cannedUpstream(b)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	paced, err := simulator.Serve(ctx, "127.0.0.1:0", simulator.Options{FirstByteDelay: 2 * time.Millisecond, ChunkDelay: time.Millisecond, Words: 20})
	if err != nil {
		b.Fatal(err)
	}
	e, pid, stop := startBenchGateway(b, canned)
	defer stop()
	if _, err := residency.Drop(); err != nil { // as serve does once Start has returned
		b.Fatal(err)
	}
	e.admin("POST", "/admin/v1/catalog:apply", heapDriverCatalog(canned, paced))
	key := benchKey(e, pid)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	load := func(model string, stream bool, d time.Duration) int64 {
		body := []byte(`{"model":"` + model + `","stream":` + map[bool]string{true: "true", false: "false"}[stream] +
			`,"messages":[{"role":"user","content":"hello #sim:input=20000"}]}`)
		end := time.Now().Add(d)
		var wg sync.WaitGroup
		var n atomic.Int64
		for range 64 {
			wg.Go(func() {
				for time.Now().Before(end) {
					if _, ok := postChat(b, client, e.base, key, body); !ok {
						return
					}
					n.Add(1)
				}
			})
		}
		wg.Wait()
		return n.Load()
	}
	measure := func(name string) {
		done := make(chan struct{})
		var streams int64
		c0 := processCPU()
		go func() { defer close(done); streams = load("bench-claude-paced", true, 4*time.Second) }()
		var live, goal []float64
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/goal:bytes"}, {Name: "/gc/stack/starting-size:bytes"},
			{Name: "/memory/classes/heap/stacks:bytes"}, {Name: "/sched/goroutines:goroutines"}, {Name: "/gc/scan/stack:bytes"}}
		time.Sleep(time.Second) // the streams under way
		for t := time.Now(); time.Since(t) < 2500*time.Millisecond; time.Sleep(50 * time.Millisecond) {
			metrics.Read(s)
			live, goal = append(live, float64(s[0].Value.Uint64())/(1<<20)), append(goal, float64(s[1].Value.Uint64())/(1<<20))
		}
		b.Logf("%s: stacks %.2f MB for %d goroutines (%.2f MB of them scanned), new goroutines start with %d bytes", name,
			float64(s[3].Value.Uint64())/(1<<20), s[4].Value.Uint64(), float64(s[5].Value.Uint64())/(1<<20), s[2].Value.Uint64())
		b.Logf("%s: the executable's resident pages by section (MB): %s", name, residentSections(b))
		heapProfile(name)
		<-done
		b.Logf("%s: %d paced streams, %.0f µs of the process's CPU each (client and simulator included)", name, streams,
			float64((processCPU()-c0).Microseconds())/float64(streams))
		slices.Sort(live)
		slices.Sort(goal)
		b.Logf("%s: live heap MB median %.2f (%.2f-%.2f), goal median %.2f (%.2f-%.2f)", name,
			live[len(live)/2], live[0], live[len(live)-1], goal[len(goal)/2], goal[0], goal[len(goal)-1])
	}
	// idle writes what stays live with no request in flight, after two collections (the
	// second drops what sync.Pools kept): its diff, before and after the saturating
	// scenarios, is what they leave behind, without the streams' own heap and its noise.
	// Only with GATEWAY_HEAP_DRIVER_IDLE=1: the collections change the phase after them.
	idle := func(name string) {
		if os.Getenv("GATEWAY_HEAP_DRIVER_IDLE") != "1" {
			return
		}
		// The last requests' records leave the telemetry queue (drained every 50 ms) and
		// their answers' drains end first: what stays after that is what was left behind.
		time.Sleep(300 * time.Millisecond)
		runtime.GC()
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		b.Logf("%s: live heap %.2f MB with no request in flight", name, float64(s[0].Value.Uint64())/(1<<20))
		heapProfile(name)
		// A heap dump (objects, their pointers, the roots: goroutines' frames, globals, and
		// the sampled objects' allocation stacks) tells what keeps an object alive, which a
		// profile does not: read it with a dump reader that follows pointers from the roots.
		if os.Getenv("GATEWAY_HEAP_DRIVER_DUMP") == "1" {
			f, err := os.Create(filepath.Join(dir, name+".heapdump"))
			if err != nil {
				b.Fatal(err)
			}
			debug.WriteHeapDump(f.Fd())
			f.Close()
		}
	}
	for i := 0; i < b.N && i < 1; i++ {
		measure("alone")
		idle("idle-before")
		load("bench-gpt", false, 3*time.Second)
		load("bench-claude", true, 3*time.Second)
		load("bench-gpt", true, 3*time.Second)
		idle("idle-after")
		measure("after")
	}
}

// residentSections sums the pages of this process's executable that are resident (its
// pagemap's present bit), by ELF section, in MB.
func residentSections(b *testing.B) string {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	ef, err := elf.Open(exe)
	if err != nil {
		b.Fatal(err)
	}
	defer ef.Close()
	pm, err := os.Open("/proc/self/pagemap")
	if err != nil {
		b.Fatal(err)
	}
	defer pm.Close()
	page := uint64(os.Getpagesize())
	var out []string
	for _, sec := range ef.Sections {
		if sec.Addr == 0 || sec.Type == elf.SHT_NOBITS || sec.Size < 64<<10 {
			continue
		}
		first, last := sec.Addr/page, (sec.Addr+sec.Size-1)/page
		buf := make([]byte, 8*(last-first+1))
		if _, err := pm.ReadAt(buf, int64(first*8)); err != nil {
			b.Fatal(err)
		}
		present := 0
		for i := 0; i < len(buf); i += 8 {
			if binary.LittleEndian.Uint64(buf[i:])&(1<<63) != 0 {
				present++
			}
		}
		out = append(out, fmt.Sprintf("%s %.2f of %.2f", sec.Name, float64(uint64(present)*page)/(1<<20), float64(sec.Size)/(1<<20)))
		if sec.Name == ".gopclntab" {
			out = append(out, pclntabParts(b, sec, buf, page))
		}
	}
	return strings.Join(out, ", ")
}

// pclntabParts splits the pclntab's resident pages by its tables (runtime's pcHeader):
// function names, compilation units, file names, pc-value tables (stack maps, line
// numbers), and the function table with its _func records.
func pclntabParts(b *testing.B, sec *elf.Section, present []byte, page uint64) string {
	hdr := make([]byte, 72)
	if _, err := sec.ReadAt(hdr, 0); err != nil {
		b.Fatal(err)
	}
	off := func(i int) uint64 { return binary.LittleEndian.Uint64(hdr[8+8*i:]) }
	bounds := []uint64{off(3), off(4), off(5), off(6), off(7), sec.Size} // funcname, cu, filetab, pctab, pcln
	names := []string{"funcnames", "cus", "files", "pctab", "functab"}
	var out []string
	first := sec.Addr / page
	for i, name := range names {
		lo, hi := (sec.Addr+bounds[i])/page, (sec.Addr+bounds[i+1]-1)/page
		n := 0
		for pg := lo; pg <= hi; pg++ {
			if binary.LittleEndian.Uint64(present[8*(pg-first):])&(1<<63) != 0 {
				n++
			}
		}
		out = append(out, fmt.Sprintf("%s %.2f of %.2f", name, float64(uint64(n)*page)/(1<<20), float64(bounds[i+1]-bounds[i])/(1<<20)))
	}
	return "(" + strings.Join(out, ", ") + ")"
}

// heapDriverCatalog is perfCatalog and bench-claude-paced, the paced simulator as an
// Anthropic upstream (the bench's scenario 3).
func heapDriverCatalog(canned, paced string) string {
	return `{"currency": "RUB", "families": [{"id": "bench"}],
  "providers": [{"id": "bench-openai", "kind": "openai", "base_url": "` + canned + `/v1", "api_key_env": "BENCH_UPSTREAM_KEY"},
                {"id": "bench-anthropic", "kind": "anthropic", "base_url": "` + canned + `", "api_key_env": "BENCH_UPSTREAM_KEY"},
                {"id": "bench-anthropic-paced", "kind": "anthropic", "base_url": "` + paced + `", "api_key_env": "BENCH_UPSTREAM_KEY"}],
  "models": [{"id": "bench-gpt", "family": "bench", "owned_by": "bench", "priority": 10,
    "routes": [{"endpoint_families": ["chat.completions"], "provider": "bench-openai", "upstream_model": "sim-gpt"}],
    "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "1.00", "output": "2.00"}]},
    {"id": "bench-claude", "family": "bench", "owned_by": "bench", "priority": 11,
    "routes": [{"endpoint_families": ["chat.completions"], "provider": "bench-anthropic", "upstream_model": "sim-claude"}],
    "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "1.00", "output": "2.00"}]},
    {"id": "bench-claude-paced", "family": "bench", "owned_by": "bench", "priority": 12,
    "routes": [{"endpoint_families": ["chat.completions"], "provider": "bench-anthropic-paced", "upstream_model": "sim-claude"}],
    "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "1.00", "output": "2.00"}]}]}`
}
