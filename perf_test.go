package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"modelgateway/core/simulator"
	"modelgateway/core/store/storetest"
	"modelgateway/core/telemetry"
)

// perfCatalog is the bench's scenarios 1 and 2 (core/bench): bench-gpt, an OpenAI upstream
// whose chat answers pass through, and bench-claude, the same upstream as an Anthropic one
// (chat translated to messages and back).
func perfCatalog(upstream string) string {
	return `{"currency": "RUB", "families": [{"id": "bench"}],
  "providers": [{"id": "bench-openai", "kind": "openai", "base_url": "` + upstream + `/v1", "api_key_env": "BENCH_UPSTREAM_KEY"},
                {"id": "bench-anthropic", "kind": "anthropic", "base_url": "` + upstream + `", "api_key_env": "BENCH_UPSTREAM_KEY"}],
  "models": [{"id": "bench-gpt", "family": "bench", "owned_by": "bench", "priority": 10,
    "routes": [{"endpoint_families": ["chat.completions"], "provider": "bench-openai", "upstream_model": "sim-gpt"}],
    "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "1.00", "output": "2.00"}]},
    {"id": "bench-claude", "family": "bench", "owned_by": "bench", "priority": 11,
    "routes": [{"endpoint_families": ["chat.completions"], "provider": "bench-anthropic", "upstream_model": "sim-claude"}],
    "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "1.00", "output": "2.00"}]}]}`
}

// processCPU is this process's user and system time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkChatNonStreamed is the whole non-streamed chat path of `make bench` scenario 1 in
// one process, 64 clients at a time: the gateway (billing on, durable charges, metrics and
// the JSON access log as served) and, for scale, the bare reverse proxy, both in front of the
// canned upstream. allocs/op and cpu-ns/op count the client and the upstream too (the same
// for both), so the difference between the two is the proxy's own.
func BenchmarkChatNonStreamed(b *testing.B) {
	upstream := cannedUpstream(b)
	// Usage above the hold, as the bench's upstream reports it.
	content := "hello #sim:input=20000"

	run := func(b *testing.B, target, model, key string) {
		body := []byte(`{"model":"` + model + `","messages":[{"role":"user","content":"` + content + `"}]}`)
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
		defer client.CloseIdleConnections()
		// do may run on RunParallel's goroutines: it reports failures with Error, not Fatal.
		do := func() bool {
			_, ok := postChat(b, client, target, key, body)
			return ok
		}
		for range 200 { // warm: the canned answer, connections, leases
			if !do() {
				b.FailNow()
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		c0 := processCPU()
		// 64 clients, as the bench: durable charges are committed in groups, as under load.
		b.SetParallelism(32)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() && do() {
			}
		})
		b.ReportMetric(float64(processCPU()-c0)/float64(b.N), "cpu-ns/op")
	}

	b.Run("bare", func(b *testing.B) {
		run(b, bareProxy(b, upstream), "sim-gpt", "bench-upstream-key")
	})

	b.Run("gateway", func(b *testing.B) {
		e, pid, stop := startBenchGateway(b, upstream)
		defer stop()
		run(b, e.base, "bench-gpt", benchKey(e, pid))
	})
}

// startBenchGateway starts a gateway in process for a benchmark: its log discarded, the perf
// catalogue pointed at upstream, and one profile with an ample balance (its id returned);
// stop shuts it down. Not a Cleanup: a benchmark's function runs once per b.N tried, and each
// run must stop its own gateway.
func startBenchGateway(b *testing.B, upstream string) (e *env, pid string, stop func()) {
	b.Helper()
	log, err := telemetry.NewLogger(io.Discard, "json", "")
	if err != nil {
		b.Fatal(err)
	}
	cfg := &Config{DatabaseURL: storetest.DatabaseURL(b), HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0",
		AdminToken: adminToken, DrainTimeout: 5 * time.Second, MetricsAddr: "127.0.0.1:0",
		Env: func(k string) string {
			if k == "BENCH_UPSTREAM_KEY" {
				return "bench-upstream-key"
			}
			return ""
		}}
	g, err := Start(context.Background(), cfg, log)
	if err != nil {
		b.Fatal(err)
	}
	stop = func() {
		http.DefaultClient.CloseIdleConnections()
		if err := g.Shutdown(5 * time.Second); err != nil {
			b.Errorf("shutdown: %v", err)
		}
	}
	e = &env{t: b, g: g, base: "http://" + g.HTTPAddr}
	e.admin("POST", "/admin/v1/catalog:apply", perfCatalog(upstream))
	p := e.admin("POST", "/admin/v1/profiles", `{"display_name":"Bench","external_ref":"tg:`+uuid.NewString()+`"}`)
	pid = p["id"].(string)
	e.admin("POST", "/admin/v1/profiles/"+pid+":credit", `{"amount":"1000000000","reason":"topup","idempotency_key":"c1"}`)
	return e, pid, stop
}

// benchKey is a new key of the bench profile pid with every endpoint and model allowed.
func benchKey(e *env, pid string) string {
	k := e.admin("POST", "/admin/v1/profiles/"+pid+"/keys", `{"name":"bench","allowed_endpoints":["*"],"allowed_models":["*"]}`)
	if !strings.HasPrefix(e.base, "http://") {
		e.t.Fatal(e.base)
	}
	return k["secret"].(string)
}

// postChat posts a chat completion request to target with key and reads its answer whole:
// the answer and true on 200, false after an Error otherwise (Error, not Fatal: it may run on
// RunParallel's goroutines).
func postChat(b *testing.B, client *http.Client, target, key string, body []byte) ([]byte, bool) {
	req, _ := http.NewRequest("POST", target+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		b.Error(err)
		return nil, false
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Errorf("status %d: %s", resp.StatusCode, raw)
		return raw, false
	}
	return raw, true
}

// bareProxy serves a bare net/http reverse proxy to upstream until b ends, as make bench's
// bare side (flushing every write), and returns its base URL.
func bareProxy(b *testing.B, upstream string) string {
	u, _ := url.Parse(upstream)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 256
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u) }, FlushInterval: -1, Transport: tr}
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: proxy}
	go func() { _ = srv.Serve(pln) }()
	b.Cleanup(func() { srv.Close() })
	return "http://" + pln.Addr().String()
}

// cannedUpstream serves the canned simulator (20 words, each answer replayed from memory in
// one write) until b ends, and returns its base URL: the upstream of make bench's chat
// scenarios.
func cannedUpstream(b *testing.B) string {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = simulator.ServeCanned(ctx, ln, simulator.New(simulator.Options{Words: 20})) }()
	return "http://" + ln.Addr().String()
}
