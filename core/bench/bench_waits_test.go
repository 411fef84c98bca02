package bench

import (
	"math"
	"testing"
)

func TestWaitLineInterpolatesInsideBuckets(t *testing.T) {
	inf := math.Inf(1)
	before := waitHistogram{0.001: 10, 0.002: 10, 0.004: 10, inf: 10}
	for _, c := range []struct {
		name          string
		before, after waitHistogram
		want          string
	}{
		// 100 new charges: 40 under 1 ms, 50 in (1, 2] ms, 10 in (2, 4] ms: the 50th is at
		// 1 ms + (50-40)/50 of the next millisecond; the 99th at 2 ms + (99-90)/10 of 2 ms.
		{"only the scenario's charges count", before, waitHistogram{0.001: 50, 0.002: 100, 0.004: 110, inf: 110}, "p50 1.2ms, p99 3.8ms (100 charges)"},
		{"beyond the last bound is its lower edge", waitHistogram{}, waitHistogram{0.001: 1, inf: 100}, "p50 1ms, p99 1ms (100 charges)"},
		{"no charges", before, before, "not measured (no charges)"},
		{"metrics off", nil, nil, "not measured (no /metrics)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := waitLine(c.before, c.after, "charges"); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestChargeWaitLineNamesTheCommitsWaitedFor(t *testing.T) {
	inf := math.Inf(1)
	before := waitReading{waitHistogram{0.002: 0, inf: 0}, waitHistogram{0.001: 0, inf: 0}}
	after := waitReading{waitHistogram{0.002: 4, inf: 4}, waitHistogram{0.001: 2, inf: 2}}
	want := "p50 1ms, p99 1.98ms (4 charges) (target p50 <= 1ms, p99 <= 5ms: ok); its group commits (one transaction each): p50 500µs, p99 990µs (2 commits)"
	if got := chargeWaitLine(before, after); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	// A p50 just over the target misses it, with the p99 well inside.
	slow := waitReading{waitHistogram{0.002: 1, 0.004: 4, inf: 4}, nil}
	want = "p50 2.67ms, p99 3.97ms (4 charges) (target p50 <= 1ms, p99 <= 5ms: MISSED)"
	if got := chargeWaitLine(before, slow); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := chargeWaitLine(waitReading{}, waitReading{}); got != "not measured (no /metrics)" {
		t.Fatalf("metrics off: got %q", got)
	}
}
