package telemetry

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRequest is the whole per-request cost of telemetry, the background goroutine
// included (reported as cpu-ns/op): one request through the handler with one outcome.
func BenchmarkRequest(b *testing.B) {
	for _, bc := range []struct {
		name string
		o    Options
	}{
		{"off", Options{}},
		{"metrics", Options{MetricsAddr: "127.0.0.1:0"}},
		{"metrics+tracing", Options{MetricsAddr: "127.0.0.1:0", SpanExporter: &discardSpans{}, Sampler: sdktrace.AlwaysSample()}},
		// The exporters read the standard variables themselves: the default endpoint, where
		// nothing listens here. Traces sampled as by default, and all of them.
		{"metrics+otlp-without-collector", Options{MetricsAddr: "127.0.0.1:0", Getenv: otlpEnv("")}},
		{"metrics+otlp-without-collector-all-traces", Options{MetricsAddr: "127.0.0.1:0", Getenv: otlpEnv("parentbased_always_on")}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			bc.o.Log = slog.New(slog.NewJSONHandler(io.Discard, nil))
			tel, err := New(context.Background(), bc.o)
			if err != nil {
				b.Fatal(err)
			}
			defer tel.Close(context.Background())
			start := time.Now()
			h := tel.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tel.Record(r.Context(), outcome(start))
				w.Write([]byte("answer"))
			}))
			req := httptest.NewRequest("POST", "/v1/chat/completions", nil)
			w := httptest.NewRecorder()
			b.ReportAllocs()
			b.ResetTimer()
			c0 := cpuTime()
			for i := 0; i < b.N; i++ {
				h.ServeHTTP(w, req)
				if i%1000 == 999 {
					tel.Sync(context.Background())
				}
			}
			tel.Sync(context.Background())
			b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func otlpEnv(sampler string) func(string) string {
	return func(k string) string {
		switch k {
		case "OTEL_EXPORTER_OTLP_ENDPOINT":
			return "http://127.0.0.1:4318"
		case "OTEL_TRACES_SAMPLER":
			return sampler
		}
		return ""
	}
}

type discardSpans struct{ tracetest.NoopExporter }
