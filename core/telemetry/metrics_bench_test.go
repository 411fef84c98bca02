package telemetry

import (
	"context"
	"io"
	"testing"
	"time"
)

// BenchmarkWorkerMetrics is one outcome's metrics as the worker records them, alone (the
// access line and queue left out): the instruments' records and the attribute sets' lookups.
func BenchmarkWorkerMetrics(b *testing.B) {
	log, err := NewLogger(io.Discard, "json", "")
	if err != nil {
		b.Fatal(err)
	}
	tel, err := New(context.Background(), Options{Log: log, MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	defer tel.Close(context.Background())
	w := newWorker(tel)
	o := outcome(time.Now())
	b.ReportAllocs()
	c0 := cpuTime()
	i := 0
	for b.Loop() {
		w.metrics(&o)
		w.requests(o.EndpointFamily, o.Status)
		if i++; i%64 == 0 {
			w.flush()
		}
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}
