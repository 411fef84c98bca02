package telemetry

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"

	"modelgateway/core/rpc"
	"modelgateway/core/wire/jsontext"
)

// accessLineCases are access lines of every shape: an HTTP request with and without an
// outcome, traced, refused with a 5xx (a warn line), with client-chosen bytes in the id and
// path, a free answer (no cost), and a gRPC call's own line.
func accessLineCases() []struct {
	name string
	o    *rpc.Outcome
	h    *accessLine
} {
	start := time.Date(2026, 11, 27, 22, 0, 0, 0, time.UTC)
	var all strings.Builder
	for c := range 0x80 {
		all.WriteByte(byte(c))
	}
	http := func(status int, path, id string, traced bool) *accessLine {
		a := &access{method: "POST", path: path, requestID: id, status: status, bytes: 1234,
			start: start, firstByte: start.Add(1500 * time.Microsecond), end: start.Add(12345678 * time.Nanosecond)}
		if traced {
			a.span = trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 0xab, 0xff}, SpanID: trace.SpanID{0xfe, 9}, TraceFlags: trace.FlagsSampled})
		}
		return &accessLine{a: a, family: "chat.completions", code: "ok"}
	}
	o := outcome(start)
	free := outcome(start)
	free.Cost = decimal.NullDecimal{}
	free.Usage.Reliable = false
	free.RequestID = "from-the-outcome"
	tiny := outcome(start)
	tiny.EndTime = start.Add(time.Nanosecond)
	tiny.FirstByteTime = time.Time{}
	tiny.Cost.Decimal = decimal.RequireFromString("0.000000012345")
	noFirstByte := http(200, "/v1/models", "req-2", false)
	noFirstByte.a.firstByte = time.Time{}
	return []struct {
		name string
		o    *rpc.Outcome
		h    *accessLine
	}{
		{"answered", &o, http(200, "/v1/chat/completions", "req-1", false)},
		{"traced", &o, http(200, "/v1/chat/completions", "req-1", true)},
		{"refused before core", nil, noFirstByte},
		{"5xx", &o, http(502, "/v1/chat/completions", "req-3", false)},
		{"client bytes", &o, http(200, all.String(), "bad\xff\xfe utf-8 \u2028 \u2029 héllo <&>", false)},
		{"id from the outcome, free", &free, http(200, "/v1/chat/completions", "", false)},
		{"grpc", &o, nil},
		{"grpc, tiny cost and latency", &tiny, nil},
	}
}

// The access line formatted into the worker's buffer is byte for byte slog's JSON line of the
// same fields, and the same fields go to any other logger as attributes.
func TestAccessLineIsSlogsLine(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 27, 22, 1, 2, 345678900, time.UTC)
	for _, c := range accessLineCases() {
		level := slog.LevelInfo
		if c.h != nil && c.h.a.status >= 500 {
			level = slog.LevelWarn
		}
		var as attrSink
		lineFields(&as, c.o, c.h)
		var want bytes.Buffer
		r := slog.NewRecord(at, level, "request", 0)
		r.AddAttrs(as.attrs...)
		if err := slog.NewJSONHandler(&want, nil).Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		var lw lineWriter
		lw.to = &jsonLines{} // as begin leaves it: no flush of an empty buffer to a nil writer
		lineFields(lw.begin(lw.to, at, level, "request"), c.o, c.h)
		lw.end()
		if got := string(lw.buf); got != want.String() {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, want.String())
		}
		if len(as.attrs) < 8 {
			t.Errorf("%s: %d fields, want the whole line", c.name, len(as.attrs))
		}
	}
}

// jsonSink writes keys as they are: every key of the line must be one JSON leaves alone.
func TestAccessLineKeysNeedNoEscaping(t *testing.T) {
	t.Parallel()
	seen := 0
	for _, c := range accessLineCases() {
		var as attrSink
		lineFields(&as, c.o, c.h)
		for _, a := range as.attrs {
			seen++
			if esc := string(jsontext.AppendSlogEscaped(nil, a.Key)); esc != a.Key || a.Key == "" {
				t.Errorf("key %q escapes to %q", a.Key, esc)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no fields")
	}
}

// Lines of one drain of the queue are written to the logger's writer together, in order,
// and only when flushed or past flushAt.
func TestAccessLinesAreWrittenInBatches(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	to := &jsonLines{w: &out}
	var lw lineWriter
	c := accessLineCases()[0]
	n := 0
	for out.Len() == 0 {
		lineFields(lw.begin(to, time.Now(), slog.LevelInfo, "request"), c.o, c.h)
		lw.end()
		n++
		if n > flushAt {
			t.Fatal("never written out")
		}
	}
	if out.Len() < flushAt || strings.Count(out.String(), "\n") != n {
		t.Errorf("written out after %d lines: %d bytes, %d lines; want at least %d bytes, all lines", n, out.Len(), strings.Count(out.String(), "\n"), flushAt)
	}
	lineFields(lw.begin(to, time.Now(), slog.LevelInfo, "request"), c.o, c.h)
	lw.end()
	if strings.Count(out.String(), "\n") != n {
		t.Error("a line below flushAt was written before the flush")
	}
	lw.flush()
	if strings.Count(out.String(), "\n") != n+1 || !strings.HasSuffix(out.String(), "}\n") {
		t.Errorf("after flush: %d lines, want %d", strings.Count(out.String(), "\n"), n+1)
	}
}

// counterSum reads a counter's total over its series (0 when it has none yet).
func counterSum(t *testing.T, r *sdkmetric.ManualReader, name string) float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					sum += float64(p.Value)
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					sum += p.Value
				}
			}
		}
	}
	return sum
}

// Counters are counted in the worker and added to the instruments once per drain of the
// queue, all of them: requests, attempts, fallbacks and money charged.
func TestCountersAreAddedAtEachFlush(t *testing.T) {
	t.Parallel()
	var reader *sdkmetric.ManualReader
	tel, err := New(context.Background(), Options{Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Reader: func(p sdkmetric.Producer) sdkmetric.Reader {
		reader = sdkmetric.NewManualReader(sdkmetric.WithProducer(p))
		return reader
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close(context.Background())
	w := newWorker(tel)
	start := time.Now()
	const n = 5
	for range n {
		o := outcome(start) // two attempts, the first failed over; cost 1.5
		a := &access{method: "POST", path: "/v1/chat/completions", status: 200, start: start, end: start.Add(time.Millisecond)}
		a.add(&o)
		w.handle(item{o: &queuedOutcome{o: o, logged: true}})
		w.handle(item{a: a})
	}
	for _, name := range []string{"gateway.requests", "gateway.upstream.attempts"} {
		if got := counterSum(t, reader, name); got != 0 {
			t.Errorf("%s before the flush = %v, want 0 (counted in the worker)", name, got)
		}
	}
	w.flush()
	for name, want := range map[string]float64{
		"gateway.requests":           n,
		"gateway.upstream.attempts":  2 * n,
		"gateway.upstream.fallbacks": n,
		"gateway.charged":            1.5 * n,
	} {
		if got := counterSum(t, reader, name); got != want {
			t.Errorf("%s after the flush = %v, want %v", name, got, want)
		}
	}
	// Counts are added once: a second flush adds nothing.
	w.flush()
	if got := counterSum(t, reader, "gateway.requests"); got != n {
		t.Errorf("after a second flush: %v requests, want %d", got, n)
	}
}
