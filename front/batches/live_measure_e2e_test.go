package batches_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"modelgateway/core/gatewaytest"
)

// TestBatchLiveLatencyMeasure measures what a running batch does to live requests: the
// latency of live chat requests (one client, one at a time, another profile's key) before,
// while and after a batch of GATEWAY_BATCH_MEASURE_LIVE items runs on the same replica
// against the canned upstream (contract: live requests go first; issue 37's target is a p99
// within 2 ms of without). It only runs when GATEWAY_BATCH_MEASURE_LIVE is set (it is a
// measurement, not a check: on a shared machine its numbers move with the load, which it
// logs). GATEWAY_BATCH_MEASURE_CONCURRENCY sets the replica's GATEWAY_BATCH_CONCURRENCY;
// GATEWAY_BATCH_MEASURE_LIVE_ROUNDS=<r> splits the measurement into r rounds (requests
// without a batch, then beside a batch of items/r), so that the two sides of a round see the
// same load of a shared machine; GATEWAY_BATCH_MEASURE_PROFILE=<dir> writes the gateway's CPU
// profiles of the first round's two sides there.
func TestBatchLiveLatencyMeasure(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("GATEWAY_BATCH_MEASURE_LIVE"))
	if n <= 0 {
		t.Skip("set GATEWAY_BATCH_MEASURE_LIVE=<items> to measure")
	}
	var env []string
	if c := os.Getenv("GATEWAY_BATCH_MEASURE_CONCURRENCY"); c != "" {
		env = append(env, "GATEWAY_BATCH_CONCURRENCY="+c)
	}
	rounds, _ := strconv.Atoi(os.Getenv("GATEWAY_BATCH_MEASURE_LIVE_ROUNDS"))
	rounds = max(rounds, 1)
	profile := os.Getenv("GATEWAY_BATCH_MEASURE_PROFILE")
	if profile != "" {
		// The gateway's CPU profile of the first round's live requests without a batch
		// (gateway-1.pprof) and beside it (gateway-2.pprof): SIGUSR1 toggles it.
		env = append(env, "GATEWAY_BENCH_CPUPROFILE_DIR="+profile)
	}
	g := gatewaytest.StartGen(t, gatewaytest.Options{Env: env})
	ctx := context.Background()
	c := sdk(g, g.Key)
	lines := make([]string, n/rounds)
	for i := range lines {
		lines[i] = chatLine(fmt.Sprintf("i%d", i), "m-openai")
	}
	file := upload(t, c, lines...)
	liveKey, _ := g.NewProfile("", "100000")
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	body := `{"model":"m-openai","max_tokens":12,"messages":[{"role":"user","content":"hi"}]}`
	one := func() time.Duration {
		req, err := http.NewRequest(http.MethodPost, g.Base+"/v1/chat/completions", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+liveKey)
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("live request: %d", resp.StatusCode)
		}
		return took
	}
	sample := func(k int) []time.Duration {
		out := make([]time.Duration, k)
		for i := range out {
			out[i] = one()
		}
		return out
	}
	toggle := func(round int) {
		if profile != "" && round == 0 {
			if err := g.Cmd.Process.Signal(syscall.SIGUSR1); err != nil {
				t.Fatal(err)
			}
		}
	}
	sample(300) // warm up: connections, leases, caches

	status := func(id string) string {
		var s string
		if err := g.Pool().QueryRow(ctx, `SELECT status FROM batches WHERE id = $1`, id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// Rounds of live requests without a batch and then beside one, so that both sides
	// of each round see about the same load of the (shared) machine.
	var before, during []time.Duration
	var took time.Duration
	for r := range rounds {
		toggle(r)
		before = append(before, sample(3000/rounds)...)
		toggle(r)
		b, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: file, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
			CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
		if err != nil {
			t.Fatal(err)
		}
		toggle(r)
		start := time.Now()
		for status(b.ID) == "in_progress" {
			during = append(during, sample(50)...)
		}
		took += time.Since(start)
		toggle(r)
	}
	after := sample(3000)
	if profile != "" {
		t.Logf("profiles: go tool pprof -top -diff_base %s/gateway-1.pprof %s/gateway-2.pprof", profile, profile)
	}

	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("%d batches of %d items in %s (%.0f items/s); load average %s", rounds, len(lines), took.Round(time.Millisecond), float64(rounds*len(lines))/took.Seconds(), strings.Join(strings.Fields(string(load))[:3], " "))
	for _, s := range []struct {
		name string
		d    []time.Duration
	}{{"before", before}, {"during", during}, {"after", after}} {
		slices.Sort(s.d)
		q := func(p float64) time.Duration { return s.d[int(p*float64(len(s.d)-1))].Round(10 * time.Microsecond) }
		t.Logf("live %-6s the batch: %5d requests, p50 %s, p90 %s, p99 %s, max %s", s.name, len(s.d), q(0.5), q(0.9), q(0.99), s.d[len(s.d)-1].Round(10*time.Microsecond))
	}
}
