package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Printing a bench run: the tables, the verdicts and the database figures.

var proxyNames = [2]string{"bare", "gateway"}

// chargeStats reads the gateway's last "charges committed" log line (written every 10 s while
// charges happen): how long answers waited at their end for the charge to be durable.
func (b *bench) chargeStats() string {
	data, err := os.ReadFile(b.gw.log)
	if err != nil {
		return "not measured (" + err.Error() + ")"
	}
	lines := strings.Split(string(data), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if !strings.Contains(lines[i], "charges committed") {
			continue
		}
		f := map[string]string{}
		var js map[string]any
		if json.Unmarshal([]byte(lines[i]), &js) == nil { // JSON logs: durations in nanoseconds
			for k, v := range js {
				f[k] = fmt.Sprint(v)
				if n, ok := v.(float64); ok && (strings.HasPrefix(k, "wait_") || strings.HasPrefix(k, "tx_")) {
					f[k] = time.Duration(n).String()
				}
			}
		} else {
			for _, kv := range strings.Fields(lines[i]) {
				if k, v, ok := strings.Cut(kv, "="); ok {
					f[k] = v
				}
			}
		}
		return fmt.Sprintf("p50 %s, p99 %s (%s charges in %s commits; their transactions p50 %s, p99 %s)",
			f["wait_p50"], f["wait_p99"], f["charges"], f["commits"], f["tx_p50"], f["tx_p99"])
	}
	return "not measured (no statistics in the gateway log)"
}

// dbCounts reads the database's committed transactions and the gateway's request records
// (one per request that passed the key checks).
func (b *bench) dbCounts(ctx context.Context) (xacts, requests int64, err error) {
	conn, err := pgx.Connect(ctx, b.dbURL)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
		(SELECT count(*) FROM requests)`).Scan(&xacts, &requests)
	return xacts, requests, err
}

func (b *bench) printCommon(w io.Writer, extra string, res [2]phaseResult, cols func(phaseResult) string) {
	b.printSides(w, scenario{}, extra, res, cols)
}

// printSides is printCommon for a scenario whose two sides may both be the gateway (a pair):
// rows and PostgreSQL's cost are then per side.
func (b *bench) printSides(w io.Writer, s scenario, extra string, res [2]phaseResult, cols func(phaseResult) string) {
	names := s.labels()
	width := 8
	for _, n := range names {
		width = max(width, len(n))
	}
	fmt.Fprintf(w, "  %-*s %5s %8s %6s %8s %8s %8s %6s %6s %6s %6s%s\n",
		width, "proxy", "conc", "requests", "errors", "req/s", "p50", "p99", "proxy", "CPU0", "load", "CPU1", extra)
	for i, r := range res {
		fmt.Fprintf(w, "  %-*s %5d %8d %6d %8.1f %8s %8s %5.0f%% %5.0f%% %5.0f%% %5.0f%%%s\n",
			width, names[i], r.concurrency, r.requests, r.errors, r.rps(), ms(r.percentile(50)), ms(r.percentile(99)),
			r.pct(r.cpu), r.pct(r.busy[0]), r.pct(r.loadCPU), r.pct(r.busy[1]), cols(r))
	}
	perReq := func(r phaseResult, n int64) float64 { return float64(n) / float64(max(r.requests, 1)) }
	if res[0].window.io.syscr > 0 {
		fmt.Fprintf(w, "  proxy read/write system calls per request: %s %.1f/%.1f, %s %.1f/%.1f; context switches per request: %s %.2f, %s %.2f\n",
			names[0], perReq(res[0], res[0].window.io.syscr), perReq(res[0], res[0].window.io.syscw),
			names[1], perReq(res[1], res[1].window.io.syscr), perReq(res[1], res[1].window.io.syscw),
			names[0], perReq(res[0], res[0].window.io.switches), names[1], perReq(res[1], res[1].window.io.switches))
	}
	if b.pg != nil && s.pair {
		// Each side's own rounds and the settlement pauses after them.
		fmt.Fprintf(w, "  PostgreSQL CPU (on %s, not in the proxy's numbers) per request: %s %.1f µs, %s %.1f µs; runnable but waiting for a CPU: %.1f and %.1f µs per request\n",
			b.pgCPUs(), names[0], perReq(res[0], res[0].window.pgCPU.Microseconds()), names[1], perReq(res[1], res[1].window.pgCPU.Microseconds()),
			perReq(res[0], res[0].window.pgWait.Microseconds()), perReq(res[1], res[1].window.pgWait.Microseconds()))
	} else if b.pg != nil {
		// The whole window: the bare proxy never touches PostgreSQL, so it is the gateway's.
		pg := perReq(res[1], res[1].window.pgCPU.Microseconds())
		fmt.Fprintf(w, "  PostgreSQL CPU (on %s, not in the proxy's numbers): %.1f µs per gateway request (target <= %d µs: %s); runnable but waiting for a CPU: %.1f µs per request\n",
			b.pgCPUs(), pg, targetPGPerRequest, verdict(pg <= targetPGPerRequest), perReq(res[1], res[1].window.pgWait.Microseconds()))
	}
	for i, r := range res {
		if r.errors > 0 {
			fmt.Fprintf(w, "  !!! %s: %d of %d requests FAILED: %s\n", names[i], r.errors, r.requests+r.errors, r.errorSummary())
		}
		// CPU time the watched processes do not account for: other programs on the pinned
		// CPUs (the kernel's network work on behalf of ours is a few points).
		other0, other1 := r.pct(r.busy[0]-r.cpu), r.pct(r.busy[1]-r.loadCPU-r.pgCPU)
		if b.pinned && (other0 > contentionPoints || other1 > contentionPoints) {
			fmt.Fprintf(w, "  !!! %s: other work used about %.0f%% of CPU 0 and %.0f%% of %s: the machine is not quiet, numbers are unreliable\n",
				names[i], other0, other1, b.layout.rest())
		}
	}
}

// pgCPUs names where PostgreSQL runs.
func (b *bench) pgCPUs() string {
	if b.layout.pg != "" {
		return "CPUs " + b.layout.pg
	}
	return b.layout.rest()
}

// The request path's targets (issue 35), printed beside what each scenario measured.
const (
	targetCPUPerRequest = 0.8                  // gateway/bare CPU per non-streamed request
	targetCPUPerChunk   = 1.0                  // gateway/bare CPU per streamed chunk, passthrough and translated
	targetRSSMB         = 40                   // peak RSS holding 64 streams
	targetPGPerRequest  = 25                   // PostgreSQL CPU µs per gateway request, on cores of its own
	targetTxPerRequest  = 0.1                  // database transactions per gateway request
	targetWaitP50       = time.Millisecond     // an answer's end waiting for its durable charge
	targetWaitP99       = 5 * time.Millisecond // (on a database with cores of its own)
)

// contentionPoints is the share of a pinned CPU, in percent of wall time, that may go to work
// outside the watched processes before a phase is flagged.
const contentionPoints = 15

func (b *bench) printPassthrough(w io.Writer, res [2]phaseResult) {
	b.printCommon(w, "  CPU µs/req", res, func(r phaseResult) string { return fmt.Sprintf("  %10.1f", r.cpuPerReq()) })
	cpu := res[1].cpuPerReq() / res[0].cpuPerReq()
	thr := res[1].rps() / res[0].rps()
	gap := res[1].percentile(99) - res[0].percentile(99)
	fmt.Fprintf(w, "  gateway/bare: CPU per request %.2fx (target <= %.1fx: %s); throughput %.2fx (target >= 0.9x: %s); p99 %+.2fms (target <= +2ms: %s)\n",
		cpu, targetCPUPerRequest, verdict(cpu <= targetCPUPerRequest), thr, verdict(thr >= 0.9), float64(gap.Microseconds())/1000, verdict(gap <= 2*time.Millisecond))
	printSpread(w, res, "CPU per request", roundResult.cpuPerReq)
	printThroughputParts(w, res)
}

// throughputParts splits the throughput ratio of the rounds into its two factors: requests
// per second are the proxy's busy share of a core over its CPU time per request, so
// gateway/bare throughput = (gateway busy / bare busy) x (bare CPU / gateway CPU per request).
// The first factor is the time the gateway's core stood idle while every client waited (at
// an answer's end for the durable charge, or on the load generator); the second is the cost
// of each request. Both come from the rounds alone (not the wider window of the CPU ratio),
// so that their product is the rounds' throughput ratio exactly.
func throughputParts(res [2]phaseResult) (busy, cpu float64) {
	if res[0].cpu <= 0 || res[1].cpu <= 0 || res[0].requests == 0 || res[1].requests == 0 {
		return 0, 0
	}
	busy = res[1].pct(res[1].cpu) / res[0].pct(res[0].cpu)
	cpu = (res[0].cpu.Seconds() / float64(res[0].requests)) / (res[1].cpu.Seconds() / float64(res[1].requests))
	return busy, cpu
}

func printThroughputParts(w io.Writer, res [2]phaseResult) {
	busy, cpu := throughputParts(res)
	if busy == 0 {
		return
	}
	fmt.Fprintf(w, "  throughput %.2fx = busy share %.2f (gateway %.0f%%, bare %.0f%% of its core: the rest, every client waited) x %.2f (bare/gateway CPU per request in the rounds)\n",
		busy*cpu, busy, res[1].pct(res[1].cpu), res[0].pct(res[0].cpu), cpu)
}

// printSpread prints how the gateway/bare ratios of the rounds measured side by side (round
// k of each proxy) spread: on a shared machine a whole run's ratio moves by a tenth or more
// from run to run, and a change smaller than the spread is not seen in one run.
func printSpread(w io.Writer, res [2]phaseResult, name string, cost func(roundResult) float64) {
	c, t := roundRatios(res, cost), roundRatios(res, roundResult.rps)
	if len(c) < 2 {
		return
	}
	fmt.Fprintf(w, "  per round (%d pairs): %s %.2fx median, %.2fx to %.2fx; throughput %.2fx median, %.2fx to %.2fx\n",
		len(c), name, median(c), c[0], c[len(c)-1], median(t), t[0], t[len(t)-1])
}

// roundRatios are f(gateway)/f(bare) of each pair of rounds that both have requests, sorted.
func roundRatios(res [2]phaseResult, f func(roundResult) float64) []float64 {
	var out []float64
	for k := range min(len(res[0].rounds), len(res[1].rounds)) {
		b, g := res[0].rounds[k], res[1].rounds[k]
		if b.requests > 0 && g.requests > 0 && f(b) > 0 {
			out = append(out, f(g)/f(b))
		}
	}
	slices.Sort(out)
	return out
}

// median of sorted values.
func median(v []float64) float64 {
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

func (r roundResult) rps() float64 { return float64(r.requests) / r.elapsed.Seconds() }

// cpuPerReq and cpuPerChunk of a round leave out the deferred work the phase's window adds.
func (r roundResult) cpuPerReq() float64 {
	return float64(r.cpu.Microseconds()) / float64(max(r.requests, 1))
}
func (r roundResult) cpuPerChunk() float64 {
	return float64(r.cpu.Microseconds()) / float64(max(r.chunks, 1))
}

func (b *bench) printStreams(w io.Writer, res [2]phaseResult) {
	b.printCommon(w, "  chunks/req  CPU µs/req  CPU µs/chunk", res, func(r phaseResult) string {
		return fmt.Sprintf("  %10.1f  %10.1f  %12.2f", float64(r.chunks)/float64(max(r.requests, 1)), r.cpuPerReq(), r.cpuPerChunk())
	})
	chunk := res[1].cpuPerChunk() / res[0].cpuPerChunk()
	thr := res[1].rps() / res[0].rps()
	fmt.Fprintf(w, "  gateway/bare: CPU per chunk %.2fx (target <= %.1fx: %s); CPU per request %.2fx; throughput %.2fx\n",
		chunk, targetCPUPerChunk, verdict(chunk <= targetCPUPerChunk), res[1].cpuPerReq()/res[0].cpuPerReq(), thr)
	printSpread(w, res, "CPU per chunk", roundResult.cpuPerChunk)
	printThroughputParts(w, res)
}

func (b *bench) printRSS(w io.Writer, res [2]phaseResult) {
	b.printCommon(w, "  max open  VmHWM MB  VmRSS MB", res, func(r phaseResult) string {
		return fmt.Sprintf("  %8d  %8.1f  %8.1f", r.maxOpen, mb(r.hwm), mb(r.rss))
	})
	whole := max(res[1].hwm, res[1].peak.prior)
	if !res[1].peak.done {
		fmt.Fprintf(w, "  gateway peak RSS (VmHWM, whole run: this kernel does not reset it) %.1f MB (target <= %d MB: %s)\n", mb(whole), targetRSSMB, verdict(mb(whole) <= targetRSSMB))
		return
	}
	fmt.Fprintf(w, "  gateway peak RSS holding the streams (VmHWM over the measured rounds, from VmRSS %.1f MB at their start) %.1f MB (target <= %d MB: %s); whole run so far %.1f MB\n",
		mb(res[1].peak.base), mb(res[1].hwm), targetRSSMB, verdict(mb(res[1].hwm) <= targetRSSMB), mb(whole))
	b.printMemParts(w)
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISSED"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }
func mb(kb int64) float64       { return float64(kb) / 1024 }

// The load generator.

// runScenario measures one scenario, prints it and returns the sides whose requests failed;
// profiles counts the CPU profiles written so far.
func (b *bench) runScenario(ctx context.Context, w io.Writer, s scenario, profiles *int) (failed []string, err error) {
	fmt.Fprintf(w, "\n%s\n", s.title)
	waits := b.chargeWaits()
	res, err := b.scenario(ctx, s, b.cfg.profileDir != "")
	if err != nil {
		return nil, err
	}
	if b.cfg.profileDir != "" {
		*profiles++
	}
	num, _, _ := strings.Cut(s.title, ".")
	for j, r := range res {
		if r.errors > 0 {
			failed = append(failed, fmt.Sprintf("scenario %s %s", num, s.labels()[j]))
		}
	}
	s.print(w, res)
	side := "gateway"
	if s.pair {
		side = "gateway, both sides"
	}
	fmt.Fprintf(w, "  end-of-answer wait for the durable charge (%s, warmup included): %s\n", side, chargeWaitLine(waits, b.chargeWaits()))
	if b.cfg.profileDir != "" {
		fmt.Fprintf(w, "  heap allocations per request (runtime count over the window, both proxies' profiling on): %s\n", b.allocsLine(*profiles, s, res))
	}
	return failed, nil
}

// scenarioNumbers writes 1, 2, 3 as "1 to 3".
func scenarioNumbers(nums []string) string {
	if len(nums) > 2 && nums[len(nums)-1] == strconv.Itoa(len(nums)) && nums[0] == "1" {
		return "1 to " + nums[len(nums)-1]
	}
	return strings.Join(nums, ", ")
}

func (b *bench) header(w io.Writer) {
	pin := b.layout.describe()
	if !b.pinned {
		pin = "NOT PINNED (needs taskset and 2 CPUs): CPU numbers include contention"
	}
	fmt.Fprintf(w, "gateway bench: %d CPUs, %s; clock %g Hz\n", runtime.NumCPU(), pin, b.hz)
	fmt.Fprintf(w, "simulator: first-byte %v, chunk-delay %v, %d words\n", b.cfg.firstByte, b.cfg.chunkDelay, b.cfg.words)
	fmt.Fprintf(w, "load: closed loop; per scenario and proxy: warmup %v, then %v measured in %d rounds alternating bare and gateway\n",
		b.cfg.warmup, b.cfg.duration, b.cfg.rounds)
	if b.cfg.uploads > 0 {
		fmt.Fprintf(w, "uploads: %d clients, forms of %d MiB; both proxies restarted, then per proxy: 1 client for %v, warmup %v, %v measured in %d rounds\n",
			b.cfg.uploads, uploadSize>>20, b.cfg.uploadDuration/2, b.cfg.warmup, b.cfg.uploadDuration, b.cfg.rounds)
	}
	fmt.Fprintf(w, "columns: proxy = proxy process CPU, CPU0 = all of CPU 0, load = bench + simulator CPU, CPU1 = all of %s (%% of wall time, of one CPU);\n", b.layout.rest())
	fmt.Fprintf(w, "  CPU µs = proxy process user+system time from %v before the first round to %v after the last, per request\n", settleGrace, settleGrace)
}

// allocsLine is each proxy's heap allocations per request over profile n's window, as its
// profiling hook counted them (bench_proc.go). A pair scenario has one process for both
// sides: its count is over both sides' requests.
func (b *bench) allocsLine(n int, s scenario, res [2]phaseResult) string {
	read := func(name string) (uint64, bool) {
		var raw []byte
		var err error
		// The hook writes the count as it handles the signal that ended the window.
		for range 20 {
			if raw, err = os.ReadFile(filepath.Join(b.cfg.profileDir, fmt.Sprintf("%s-%d.mallocs", name, n))); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		m, perr := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64)
		return m, err == nil && perr == nil
	}
	if s.pair {
		m, ok := read("gateway")
		if !ok || res[0].requests+res[1].requests == 0 {
			return "gateway not measured"
		}
		return fmt.Sprintf("gateway %.0f (%s and %s together, settlement pauses included)", float64(m)/float64(res[0].requests+res[1].requests), s.names[0], s.names[1])
	}
	var parts []string
	for j, name := range proxyNames {
		m, ok := read(name)
		if !ok || res[j].requests == 0 {
			parts = append(parts, name+" not measured")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.0f", name, float64(m)/float64(res[j].requests)))
	}
	return strings.Join(parts, ", ")
}
