// Package telemetry is what an operator sees of the gateway: metrics served to Prometheus (and
// pushed over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set), traces, and the access log.
//
// The gateway records through the OpenTelemetry API; Prometheus pulls from a registry that also
// carries the Go runtime and process collectors. Recording stays off the request path: a
// request leaves one access record and its outcomes on a queue, and one background goroutine
// turns them into metric points, client spans and the access line. Nothing is done per
// stream chunk.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
)

// Options configure New.
type Options struct {
	// MetricsAddr is the listener of GET /metrics; empty serves none.
	MetricsAddr string
	// Getenv reads the standard OTEL_* variables; os.Getenv when nil.
	Getenv func(string) string
	// Log receives the access lines and telemetry's own errors.
	Log *slog.Logger
	// SpanExporter takes the spans instead of OTLP (tests); tracing is on when it or
	// OTEL_EXPORTER_OTLP_ENDPOINT is set.
	SpanExporter sdktrace.SpanExporter
	// SpanSyncer exports each span as it ends instead of in batches (tests).
	SpanSyncer bool
	// Sampler replaces the one OTEL_TRACES_SAMPLER configures (tests).
	Sampler sdktrace.Sampler
	// Reader makes one more metric reader (tests read the instruments with it), which must
	// take worker as a producer (sdkmetric.WithProducer) and be cumulative (the default):
	// the worker's instruments reach the readers through it (series.go).
	Reader func(worker sdkmetric.Producer) sdkmetric.Reader
	// Gauges are read on each collection.
	Gauges Gauges
	// QueueSize bounds the records waiting for the background goroutine; 8192 when 0.
	QueueSize int
}

// Telemetry records outcomes and requests; it implements rpc.Observer.
type Telemetry struct {
	// MetricsAddr is the bound /metrics listener; empty when there is none.
	MetricsAddr string

	log        *slog.Logger
	metricsOn  bool
	tracingOn  bool
	mp         *sdkmetric.MeterProvider
	tp         *sdktrace.TracerProvider
	tracer     trace.Tracer
	sampler    sdktrace.Sampler
	propagator propagation.TextMapPropagator
	inst       *instruments
	store      *store // the worker's instruments
	// chargeWaits is gateway.charge.wait, measured by billing's goroutines.
	chargeWaits *sharedSeries
	srv         *http.Server
	queue       chan item
	dropped     atomic.Int64
	done        chan struct{}
	closed      atomic.Bool
}

// New sets up the providers and exporters and starts the background goroutine and the
// /metrics listener. Close stops them.
func New(ctx context.Context, o Options) (*Telemetry, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 8192
	}
	t := &Telemetry{log: o.Log, queue: make(chan item, o.QueueSize), done: make(chan struct{}),
		propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}
	otlp := otlpEndpoint(getenv) != ""
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(serviceName(getenv))))
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}

	// Metrics: a registry for Prometheus, OTLP beside it when configured. Each reader takes
	// the worker's instruments from a view of their store in its temporality.
	t.store = newStore(time.Now())
	var readers []sdkmetric.Option
	registry := prometheus.NewRegistry()
	if o.MetricsAddr != "" {
		registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		exp, err := otelprom.New(otelprom.WithRegisterer(registry), otelprom.WithoutScopeInfo(), otelprom.WithProducer(t.store.view(nil)))
		if err != nil {
			return nil, fmt.Errorf("prometheus exporter: %w", err)
		}
		readers = append(readers, sdkmetric.WithReader(exp))
	}
	if otlp {
		exp, err := metricExporter(ctx, getenv)
		if err != nil {
			return nil, err
		}
		readers = append(readers, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithProducer(t.store.view(exp.Temporality)))))
	}
	if o.Reader != nil {
		readers = append(readers, sdkmetric.WithReader(o.Reader(t.store.view(nil))))
	}
	t.metricsOn = len(readers) > 0
	t.chargeWaits = t.store.shared(chargeWaitInst)
	// Every measurement is taken with a context without a span (the worker's, the ledger's
	// observers'), so there are never exemplars to keep; the default trace-based filter would
	// still look for a span on every call.
	t.mp = sdkmetric.NewMeterProvider(append(readers, sdkmetric.WithResource(res), sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter))...)
	if t.inst, err = newInstruments(t.mp.Meter("modelgateway"), o.Gauges, &t.dropped); err != nil {
		return nil, err
	}

	// Traces: only when something takes them; a no-op tracer costs nothing per request.
	t.tracer = noop.NewTracerProvider().Tracer("")
	spans := o.SpanExporter
	if spans == nil && otlp {
		if spans, err = spanExporter(ctx, getenv); err != nil {
			return nil, err
		}
	}
	if spans != nil {
		process := sdktrace.WithBatcher(spans)
		if o.SpanSyncer {
			process = sdktrace.WithSyncer(spans)
		}
		if t.sampler = o.Sampler; t.sampler == nil {
			if t.sampler, err = sampler(getenv); err != nil {
				return nil, err
			}
		}
		tpOpts := []sdktrace.TracerProviderOption{process, sdktrace.WithResource(res),
			sdktrace.WithIDGenerator(presetIDs{}), sdktrace.WithSampler(t.sampler)}
		t.tp = sdktrace.NewTracerProvider(tpOpts...)
		t.tracer = t.tp.Tracer("modelgateway")
		t.tracingOn = true
	}

	if o.MetricsAddr != "" {
		ln, err := net.Listen("tcp", o.MetricsAddr)
		if err != nil {
			return nil, fmt.Errorf("listen metrics: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{ErrorLog: slogErrorLog{o.Log}}))
		t.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		t.MetricsAddr = ln.Addr().String()
		go func() { _ = t.srv.Serve(ln) }()
	}
	go t.run()
	return t, nil
}

// Close drains the queue, stops the listener and flushes the exporters within ctx.
func (t *Telemetry) Close(ctx context.Context) error {
	if t.closed.Swap(true) {
		return nil
	}
	// The queue is never closed: a late Record (a straggling goroutine) must not panic. The
	// stop item ends the goroutine after everything queued before it.
	select {
	case t.queue <- item{stop: true}:
		select {
		case <-t.done:
		case <-ctx.Done():
		}
	case <-ctx.Done():
	}
	var err error
	if t.srv != nil {
		err = t.srv.Close()
	}
	if t.tp != nil {
		err = errors.Join(err, t.tp.Shutdown(ctx))
	}
	return errors.Join(err, t.mp.Shutdown(ctx))
}

// Dropped is the number of records lost because the queue was full.
func (t *Telemetry) Dropped() int64 { return t.dropped.Load() }

func serviceName(getenv func(string) string) string {
	if s := getenv("OTEL_SERVICE_NAME"); s != "" {
		return s
	}
	return "modelgateway"
}

// slogErrorLog adapts the Prometheus handler's error log to slog.
type slogErrorLog struct{ log *slog.Logger }

func (l slogErrorLog) Println(v ...any) { l.log.Error("metrics", "err", fmt.Sprint(v...)) }
