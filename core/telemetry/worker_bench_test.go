package telemetry

import (
	"context"
	"io"
	"testing"
	"time"
)

// BenchmarkWorkerAccess is the background half of a request's telemetry as the gateway
// serves it: the JSON process logger at info (the access line, flushed once per 64 lines as
// a drain of the queue would), the outcome's metrics and the request counter.
func BenchmarkWorkerAccess(b *testing.B) {
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
	start := time.Now()
	o := outcome(start)
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		a := &access{method: "POST", path: "/v1/chat/completions", requestID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", status: 200,
			bytes: 612, start: start, firstByte: start.Add(time.Millisecond), end: start.Add(2 * time.Millisecond)}
		a.add(&o)
		q := outcomes.Get().(*queuedOutcome) // as Record queues it; handle recycles it
		q.o, q.logged = o, true
		w.handle(item{o: q})
		w.handle(item{a: a})
		if i%64 == 63 {
			w.flush() // as a drain of the queue ends: the lines written, the counts added
		}
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}
