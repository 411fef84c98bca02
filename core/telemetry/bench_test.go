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
		{"metrics+tracing", Options{MetricsAddr: "127.0.0.1:0", SpanExporter: &discardSpans{}}},
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

type discardSpans struct{ tracetest.NoopExporter }
