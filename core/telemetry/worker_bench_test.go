package telemetry

import (
	"context"
	"io"
	"testing"
	"time"
)

// BenchmarkWorkerAccess is the background half of a request's telemetry as the gateway
// serves it: the JSON process logger at info (the access line, flushed once per 64 lines as
// a drain of the queue would), the outcome's metrics and the request counter, all from the
// access record (the request's only outcome waits in it).
func BenchmarkWorkerAccess(b *testing.B) {
	w := benchWorker(b)
	start := time.Now()
	o := outcome(start)
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		a := &access{method: "POST", path: "/v1/chat/completions", requestID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", status: 200,
			bytes: 612, start: start, firstByte: start.Add(time.Millisecond), end: start.Add(2 * time.Millisecond)}
		a.add(&o)
		a.held = true // as Record leaves a request's only outcome: measured with the access record
		w.handle(item{a: a})
		if i%64 == 63 {
			w.flush() // as a drain of the queue ends: the lines written, the counts added
		}
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkWorkerMetrics is one outcome's metrics as the worker records them, alone (the
// access line and queue left out): the instruments' records and the attribute sets' lookups.
func BenchmarkWorkerMetrics(b *testing.B) {
	w := benchWorker(b)
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

// benchWorker is a worker of a gateway's telemetry (the JSON process logger at info, a
// metrics listener) that ends with b.
func benchWorker(b *testing.B) *worker {
	log, err := NewLogger(io.Discard, "json", "")
	if err != nil {
		b.Fatal(err)
	}
	tel, err := New(context.Background(), Options{Log: log, MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tel.Close(context.Background()) })
	return newWorker(tel)
}

// BenchmarkWorkerLine is one HTTP request's access line as the worker writes it, alone (the
// metrics and queue left out): the JSON process logger's line formatted into the worker's
// buffer, written out once per 64 lines as a drain of the queue would.
func BenchmarkWorkerLine(b *testing.B) {
	w := benchWorker(b)
	start := time.Now()
	o := outcome(start)
	a := &access{method: "POST", path: "/v1/chat/completions", requestID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", status: 200,
		bytes: 612, start: start, firstByte: start.Add(time.Millisecond), end: start.Add(2 * time.Millisecond)}
	a.add(&o)
	h := &accessLine{a: a, family: "chat.completions", code: "ok"}
	b.ReportAllocs()
	c0 := cpuTime()
	i := 0
	for b.Loop() {
		w.line(&a.last, h)
		if i++; i%64 == 0 {
			w.lines.flush()
		}
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkChargeWaitObserver is billing's per-request point of gateway.charge.wait, from
// the request goroutines, with a /metrics listener (as the gateway runs it).
func BenchmarkChargeWaitObserver(b *testing.B) {
	w := benchWorker(b)
	observe := w.t.ChargeWaitObserver()
	b.ReportAllocs()
	c0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		wait := 1700 * time.Microsecond
		for pb.Next() {
			observe(wait)
			wait += time.Microsecond
		}
	})
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}
