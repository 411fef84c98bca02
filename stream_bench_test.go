package main

import (
	"bytes"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
)

// syscalls is a count of this process's system calls from /proc/self/io (syscr: reads,
// syscw: writes); 0 where there is none.
func syscalls(field string) int64 {
	raw, _ := os.ReadFile("/proc/self/io")
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, field+": "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkChatStreamed is `make bench` scenario 2 in one process, 64 clients at a time, and
// its passthrough twin: streamed chat requests to the canned simulator (20 words, replayed in
// one write) through the bare reverse proxy (chat SSE passed on), the gateway passing an
// OpenAI stream through (bench-gpt) and the gateway translating an Anthropic one
// (bench-claude), billing and durable charges on. cpu-ns/op and cpu-ns/chunk count the
// client and the upstream too (the same for all three), so differences are the proxy's own.
//
//	go test -run x -bench ChatStreamed -benchmem .
func BenchmarkChatStreamed(b *testing.B) {
	upstream := cannedUpstream(b)
	content := "hello #sim:input=20000"

	run := func(b *testing.B, target, model, key string) {
		body := []byte(`{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"` + content + `"}]}`)
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
		defer client.CloseIdleConnections()
		// do may run on RunParallel's goroutines: it reports failures with Error, not Fatal.
		do := func() int {
			raw, ok := postChat(b, client, target, key, body)
			if !ok {
				return 0
			}
			if !bytes.HasSuffix(raw, []byte("data: [DONE]\n\n")) {
				b.Errorf("a stream without its end: %s", raw)
				return 0
			}
			return bytes.Count(raw, []byte("data: "))
		}
		chunks := 0
		for range 200 { // warm: the canned answer, connections, leases
			if chunks = do(); chunks == 0 {
				b.FailNow()
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		c0, r0, w0 := processCPU(), syscalls("syscr"), syscalls("syscw")
		b.SetParallelism(32)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() && do() > 0 {
			}
		})
		cpu := float64(processCPU()-c0) / float64(b.N)
		b.ReportMetric(cpu, "cpu-ns/op")
		b.ReportMetric(cpu/float64(chunks), "cpu-ns/chunk")
		// The process's read and write system calls (client and upstream included): what
		// the proxies' differ by is their own.
		b.ReportMetric(float64(syscalls("syscr")-r0)/float64(b.N), "reads/op")
		b.ReportMetric(float64(syscalls("syscw")-w0)/float64(b.N), "writes/op")
	}

	b.Run("bare", func(b *testing.B) {
		run(b, bareProxy(b, upstream), "sim-gpt", "bench-upstream-key")
	})

	for _, m := range []struct{ name, model string }{{"passthrough", "bench-gpt"}, {"translated", "bench-claude"}} {
		b.Run("gateway/"+m.name, func(b *testing.B) {
			e, pid, stop := startBenchGateway(b, upstream)
			defer stop()
			run(b, e.base, m.model, benchKey(e, pid))
		})
	}
}
