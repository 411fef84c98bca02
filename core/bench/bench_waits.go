package bench

import (
	"bufio"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The durable charge's wait per scenario, from the gateway's own histograms: the wait of
// each answer's end (gateway_charge_wait_seconds) and the group commits it waited for
// (gateway_settlement_duration_seconds, one transaction per group). Read before and after a
// scenario, the difference is that scenario's alone.

const (
	waitMetric   = "gateway_charge_wait_seconds_bucket{"
	commitMetric = "gateway_settlement_duration_seconds_bucket{"
)

// waitHistogram is a reading of a histogram: cumulative counts by upper bound.
type waitHistogram map[float64]float64

// waitReading is one scrape of both histograms.
type waitReading struct{ waits, commits waitHistogram }

// chargeWaits reads the histograms; nil ones when metrics are off or unreadable.
func (b *bench) chargeWaits() waitReading {
	if b.metricsURL == "" {
		return waitReading{}
	}
	resp, err := http.Get(b.metricsURL)
	if err != nil {
		return waitReading{}
	}
	defer resp.Body.Close()
	r := waitReading{waitHistogram{}, waitHistogram{}}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		h := r.waits
		switch {
		case strings.HasPrefix(line, waitMetric):
		case strings.HasPrefix(line, commitMetric):
			h = r.commits
		default:
			continue
		}
		_, rest, _ := strings.Cut(line, `le="`)
		le, rest, _ := strings.Cut(rest, `"`)
		bound, err := strconv.ParseFloat(le, 64)
		if le == "+Inf" {
			bound, err = math.Inf(1), nil
		}
		count, err2 := strconv.ParseFloat(rest[strings.LastIndexByte(rest, ' ')+1:], 64)
		if err != nil || err2 != nil {
			continue
		}
		h[bound] += count
	}
	return r
}

// chargeWaitLine is the scenario's line: the waits, and the commits they waited for.
func chargeWaitLine(before, after waitReading) string {
	line := waitLine(before.waits, after.waits, "charges")
	if p50, p99, n := waitQuantiles(before.waits, after.waits); n > 0 {
		line += fmt.Sprintf(" (target p50 <= %v, p99 <= %v: %s)", targetWaitP50, targetWaitP99, verdict(p50 <= targetWaitP50 && p99 <= targetWaitP99))
	}
	if after.commits != nil {
		line += "; its group commits (one transaction each): " + waitLine(before.commits, after.commits, "commits")
	}
	return line
}

// waitLine describes the durations of what (charges, commits) between two readings: p50 and
// p99 interpolated linearly inside their buckets, as Prometheus's histogram_quantile does.
func waitLine(before, after waitHistogram, what string) string {
	if after == nil {
		return "not measured (no /metrics)"
	}
	p50, p99, total := waitQuantiles(before, after)
	if total <= 0 {
		return "not measured (no " + what + ")"
	}
	return fmt.Sprintf("p50 %v, p99 %v (%.0f %s)", p50, p99, total, what)
}

// waitQuantiles are waitLine's p50 and p99, and how many durations they are of (0: none).
func waitQuantiles(before, after waitHistogram) (p50, p99 time.Duration, total float64) {
	bounds := make([]float64, 0, len(after))
	for b := range after {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	if len(bounds) == 0 {
		return 0, 0, 0
	}
	total = after[bounds[len(bounds)-1]] - before[bounds[len(bounds)-1]]
	if total <= 0 {
		return 0, 0, 0
	}
	quantile := func(q float64) time.Duration {
		rank, lower, below := q*total, 0.0, 0.0
		for _, b := range bounds {
			n := after[b] - before[b]
			if n >= rank {
				if math.IsInf(b, 1) {
					return time.Duration(lower * float64(time.Second))
				}
				frac := 0.0
				if n > below {
					frac = (rank - below) / (n - below)
				}
				return time.Duration((lower + (b-lower)*frac) * float64(time.Second)).Round(10 * time.Microsecond)
			}
			lower, below = b, n
		}
		return 0
	}
	return quantile(0.5), quantile(0.99), total
}
