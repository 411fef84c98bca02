package telemetry

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"modelgateway/core/rpc"
)

// Spans are written after the fact by the background goroutine, like the metrics. A request
// only gets its span context up front (the trace and span ids that its logs and its client
// spans refer to): the server span is later started with exactly those ids through
// presetIDs, with the request's start and end times.

// startSpan gives a request its span context: the trace of an incoming traceparent, or a new
// one.
func (t *Telemetry) startSpan(r *http.Request, a *access) context.Context {
	ctx := r.Context()
	if r.Header.Get("Traceparent") != "" {
		a.parent = trace.SpanContextFromContext(t.propagator.Extract(ctx, propagation.HeaderCarrier(r.Header)))
	}
	cfg := trace.SpanContextConfig{SpanID: randomSpanID()}
	if a.parent.IsValid() {
		cfg.TraceID, cfg.TraceState = a.parent.TraceID(), a.parent.TraceState()
		ctx = trace.ContextWithRemoteSpanContext(ctx, a.parent)
	} else {
		cfg.TraceID = randomTraceID()
	}
	// Decided here, once: the server span, the client spans and the logs all follow it. The
	// trace id is all a ratio sampler reads, so the worker's decision for the server span is
	// the same.
	res := t.sampler.ShouldSample(sdktrace.SamplingParameters{ParentContext: ctx, TraceID: cfg.TraceID, Kind: trace.SpanKindServer})
	if res.Decision == sdktrace.RecordAndSample {
		cfg.TraceFlags = trace.FlagsSampled
	}
	a.span = trace.NewSpanContext(cfg)
	return trace.ContextWithSpanContext(ctx, a.span)
}

func randomSpanID() (id trace.SpanID) {
	for id == (trace.SpanID{}) {
		binary.NativeEndian.PutUint64(id[:], rand.Uint64())
	}
	return id
}

func randomTraceID() (id trace.TraceID) {
	for id == (trace.TraceID{}) {
		binary.NativeEndian.PutUint64(id[:8], rand.Uint64())
		binary.NativeEndian.PutUint64(id[8:], rand.Uint64())
	}
	return id
}

// presetIDs is the tracer provider's ID generator: the ids a context presets, else random.
type presetIDs struct{}

type presetKey struct{}

func withPreset(ctx context.Context, sc trace.SpanContext) context.Context {
	return context.WithValue(ctx, presetKey{}, sc)
}

func (presetIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if sc, ok := ctx.Value(presetKey{}).(trace.SpanContext); ok {
		return sc.TraceID(), sc.SpanID()
	}
	return randomTraceID(), randomSpanID()
}

func (presetIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if sc, ok := ctx.Value(presetKey{}).(trace.SpanContext); ok {
		return sc.SpanID()
	}
	return randomSpanID()
}

// serverSpan writes the request's server span with its preset ids and returns the context
// its client spans start in.
func (w *worker) serverSpan(a *access, family, code string) context.Context {
	ctx := withPreset(context.Background(), a.span)
	if a.parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, a.parent)
	}
	route := RouteOf(a.path)
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodKey.String(a.method), semconv.HTTPRouteKey.String(route),
		semconv.HTTPResponseStatusCodeKey.Int(a.status), attribute.String("gateway.endpoint_family", family),
	}
	if code != "ok" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(code))
	}
	ctx, span := w.t.tracer.Start(ctx, a.method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(a.start), trace.WithAttributes(attrs...))
	if a.status >= 500 {
		span.SetStatus(codes.Error, strconv.Itoa(a.status))
	}
	span.End(trace.WithTimestamp(a.end))
	return ctx
}

// clientSpans writes one client span per upstream attempt under ctx: named "{operation}
// {model}", with the GenAI attributes and, on the attempt that answered, the usage. Prompt and
// answer content never reach a span.
func (w *worker) clientSpans(ctx context.Context, o *rpc.Outcome) {
	op := Operation(o.EndpointFamily)
	for i, at := range o.Attempts {
		base := w.spanAttrs(op, o, &at)
		end, errType := at.End, at.Error
		answered := i == len(o.Attempts)-1 && at.Error == "" && o.Provider != ""
		if answered {
			end = o.EndTime
			if o.Status != "ok" {
				errType = o.Status
			}
		}
		// Every attribute at the start: added later, the SDK would deduplicate them.
		attrs := append(make([]attribute.KeyValue, 0, len(base)+5), base...)
		if answered && o.Usage.Reliable {
			u := o.Usage
			attrs = append(attrs,
				semconv.GenAIUsageInputTokensKey.Int64(u.TotalInput()), semconv.GenAIUsageOutputTokensKey.Int64(u.Output),
				semconv.GenAIUsageCacheReadInputTokensKey.Int64(u.CachedInput), semconv.GenAIUsageCacheCreationInputTokensKey.Int64(u.CacheWrite))
		}
		if errType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
		}
		_, span := w.t.tracer.Start(ctx, op+" "+o.Model, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithTimestamp(at.Start), trace.WithAttributes(attrs...))
		if errType != "" {
			span.SetStatus(codes.Error, errType)
		}
		span.End(trace.WithTimestamp(end))
	}
}

type spanKey struct{ op, kind, model, provider, family string }

// spanAttrs are the fixed attributes of an attempt's span, built once per kind of attempt.
func (w *worker) spanAttrs(op string, o *rpc.Outcome, at *rpc.Attempt) []attribute.KeyValue {
	k := spanKey{op, at.Kind, o.Model, at.Provider, o.EndpointFamily}
	if attrs, ok := w.spanSets[k]; ok {
		return attrs
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameKey.String(op), semconv.GenAIProviderNameKey.String(ProviderName(at.Kind)),
		semconv.GenAIRequestModelKey.String(o.Model), attribute.String("gateway.provider", at.Provider),
		attribute.String("gateway.endpoint_family", o.EndpointFamily),
	}
	if len(w.spanSets) < 10000 {
		w.spanSets[k] = attrs
	}
	return attrs
}
