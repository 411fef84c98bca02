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
// logs). GATEWAY_BATCH_MEASURE_CONCURRENCY sets the replica's GATEWAY_BATCH_CONCURRENCY.
func TestBatchLiveLatencyMeasure(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("GATEWAY_BATCH_MEASURE_LIVE"))
	if n <= 0 {
		t.Skip("set GATEWAY_BATCH_MEASURE_LIVE=<items> to measure")
	}
	var env []string
	if c := os.Getenv("GATEWAY_BATCH_MEASURE_CONCURRENCY"); c != "" {
		env = append(env, "GATEWAY_BATCH_CONCURRENCY="+c)
	}
	g := gatewaytest.StartGen(t, gatewaytest.Options{Env: env})
	ctx := context.Background()
	c := sdk(g, g.Key)
	lines := make([]string, n)
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
	sample(300) // warm up: connections, leases, caches
	before := sample(3000)

	status := func(id string) string {
		var s string
		if err := g.Pool().QueryRow(ctx, `SELECT status FROM batches WHERE id = $1`, id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	b, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: file, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var during []time.Duration
	for status(b.ID) == "in_progress" {
		during = append(during, sample(50)...)
	}
	took := time.Since(start)
	after := sample(3000)

	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("batch of %d items in %s (%.0f items/s); load average %s", n, took.Round(time.Millisecond), float64(n)/took.Seconds(), strings.Join(strings.Fields(string(load))[:3], " "))
	for _, s := range []struct {
		name string
		d    []time.Duration
	}{{"before", before}, {"during", during}, {"after", after}} {
		slices.Sort(s.d)
		q := func(p float64) time.Duration { return s.d[int(p*float64(len(s.d)-1))].Round(10 * time.Microsecond) }
		t.Logf("live %-6s the batch: %5d requests, p50 %s, p90 %s, p99 %s, max %s", s.name, len(s.d), q(0.5), q(0.9), q(0.99), s.d[len(s.d)-1].Round(10*time.Microsecond))
	}
}
