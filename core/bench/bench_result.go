package bench

import (
	"context"
	"time"
)

// phaseResult is one measured phase against one proxy.
type phaseResult struct {
	loadResult
	cpuSample               // summed over this proxy's rounds
	window    cpuSample     // over the whole measurement window (see scenario)
	hwm       int64         // proxy VmHWM in kB after the phase
	rss       int64         // proxy VmRSS in kB after the phase
	peak      peakReset     // how hwm was reset, with scenario.resetPeak
	rounds    []roundResult // each round, in the order measured
}

// roundResult is one round of a phase: what the load did and what it cost the proxy meanwhile.
type roundResult struct {
	requests int
	chunks   int64
	elapsed  time.Duration
	cpu      time.Duration
}

// settleGrace outlasts the gateway's deferred per-request work: the contract settles a charge
// within 2 s of the response's end.
const settleGrace = 2500 * time.Millisecond

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (r phaseResult) rps() float64 { return float64(r.requests) / r.elapsed.Seconds() }

// pct is a CPU time in percent of the phase's wall time.
func (r phaseResult) pct(d time.Duration) float64 { return 100 * d.Seconds() / r.elapsed.Seconds() }

// cpuPerReq and cpuPerChunk use the window: they include deferred work (billing batches) and
// the idle background of the proxy while the other one was measured (snapshot polling: tiny).
func (r phaseResult) cpuPerReq() float64 {
	return float64(r.window.cpu.Microseconds()) / float64(max(r.requests, 1))
}
func (r phaseResult) cpuPerChunk() float64 {
	return float64(r.window.cpu.Microseconds()) / float64(max(r.chunks, 1))
}
