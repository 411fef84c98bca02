package telemetry

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"modelgateway/core/metering"
	"modelgateway/core/rpc"
	"modelgateway/core/wire/apierror"
)

// sdkInstruments are the worker's instruments as synchronous SDK instruments, made as
// newInstruments made them before the worker aggregated them itself.
type sdkInstruments struct {
	duration, ttft, tpot metric.Float64Histogram
	tokens               metric.Int64Histogram
	requests             metric.Int64Counter
	attempts, fallbacks  metric.Int64Counter
	clientDuration       metric.Float64Histogram
	charged              metric.Float64Counter
	refusals             metric.Int64Counter
	chargeWait           metric.Float64Histogram
}

func newSDKInstruments(t *testing.T, m metric.Meter) *sdkInstruments {
	var in sdkInstruments
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	f64h := func(name, desc, unit string, buckets []float64) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithDescription(desc), metric.WithUnit(unit), metric.WithExplicitBucketBoundaries(buckets...))
		must(err)
		return h
	}
	counter := func(name, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithDescription(desc))
		must(err)
		return c
	}
	in.duration = f64h("gen_ai.server.request.duration", "Generative AI server request duration, from arrival to the end of the answer.", "s", durationBuckets)
	in.ttft = f64h("gen_ai.server.time_to_first_token", "Time from arrival to the first answer from the upstream, for successful generations.", "s", ttftBuckets)
	in.tpot = f64h("gen_ai.server.time_per_output_token", "Time per output token after the first, for successful generations.", "s", tpotBuckets)
	tokens, err := m.Int64Histogram("gen_ai.client.token.usage", metric.WithDescription("Tokens used per upstream answer, by gen_ai.token.type."), metric.WithUnit("{token}"), metric.WithExplicitBucketBoundaries(tokenBuckets...))
	must(err)
	in.tokens = tokens
	in.requests = counter("gateway.requests", "Requests by endpoint family and spec code (ok for success).")
	in.attempts = counter("gateway.upstream.attempts", "Upstream calls by provider and outcome (ok, rate_limited, timeout, error).")
	in.clientDuration = f64h("gen_ai.client.operation.duration", "Duration of one upstream call, from sending it to its first answer or failure.", "s", durationBuckets)
	in.fallbacks = counter("gateway.upstream.fallbacks", "Failed upstream calls after which the next route was tried, by provider and outcome.")
	in.refusals = counter("gateway.balance.refusals", "Requests refused with insufficient_balance, by endpoint family.")
	charged, err := m.Float64Counter("gateway.charged", metric.WithDescription("Amount charged, by currency."))
	must(err)
	in.charged = charged
	in.chargeWait = f64h("gateway.charge.wait", "Time the end of an answer waited for its charge to be durable (group commit).", "s", chargeWaitBuckets)
	return &in
}

// record is the worker's metrics of an outcome and its request counter as they were
// recorded into the SDK's instruments, point by point.
func (in *sdkInstruments) record(o *rpc.Outcome) {
	ctx := context.Background()
	attrs := func(kvs ...attribute.KeyValue) metric.MeasurementOption { return metric.WithAttributes(kvs...) }
	op, prov := Operation(o.EndpointFamily), ""
	if n := len(o.Attempts); n > 0 {
		prov = ProviderName(o.Attempts[n-1].Kind)
	}
	errType := ""
	if o.Status != "ok" {
		errType = o.Status
	}
	kvs := []attribute.KeyValue{semconv.GenAIOperationNameKey.String(op), semconv.GenAIRequestModelKey.String(o.Model)}
	if prov != "" {
		kvs = append(kvs, semconv.GenAIProviderNameKey.String(prov))
	}
	if errType != "" {
		kvs = append(kvs, semconv.ErrorTypeKey.String(errType))
	}
	genai := attrs(kvs...)
	in.duration.Record(ctx, o.EndTime.Sub(o.StartTime).Seconds(), genai)
	if errType == "" && !o.FirstByteTime.IsZero() && generative(op) {
		in.ttft.Record(ctx, o.FirstByteTime.Sub(o.StartTime).Seconds(), genai)
		if o.Usage.Reliable && o.Usage.Output > 1 {
			in.tpot.Record(ctx, o.EndTime.Sub(o.FirstByteTime).Seconds()/float64(o.Usage.Output-1), genai)
		}
	}
	if o.Usage.Reliable {
		for typ, n := range map[string]int64{"input": o.Usage.TotalInput(), "output": o.Usage.Output} {
			kvs := []attribute.KeyValue{semconv.GenAIOperationNameKey.String(op), semconv.GenAIRequestModelKey.String(o.Model), semconv.GenAITokenTypeKey.String(typ)}
			if prov != "" {
				kvs = append(kvs, semconv.GenAIProviderNameKey.String(prov))
			}
			in.tokens.Record(ctx, n, attrs(kvs...))
		}
	}
	for i, at := range o.Attempts {
		a := attrs(attribute.String("provider", at.Provider), attribute.String("outcome", AttemptOutcome(at.Error)))
		in.attempts.Add(ctx, 1, a)
		if at.Error != "" && i < len(o.Attempts)-1 {
			in.fallbacks.Add(ctx, 1, a)
		}
		kvs := []attribute.KeyValue{semconv.GenAIOperationNameKey.String(op), semconv.GenAIRequestModelKey.String(o.Model), semconv.GenAIProviderNameKey.String(ProviderName(at.Kind))}
		if at.Error != "" {
			kvs = append(kvs, semconv.ErrorTypeKey.String(at.Error))
		}
		in.clientDuration.Record(ctx, at.End.Sub(at.Start).Seconds(), attrs(kvs...))
	}
	if o.Cost.Valid {
		in.charged.Add(ctx, o.Cost.Decimal.InexactFloat64(), attrs(attribute.String("currency", o.Currency)))
	}
	if o.Status == apierror.InsufficientBalance {
		in.refusals.Add(ctx, 1, attrs(attribute.String("endpoint_family", o.EndpointFamily)))
	}
	in.requests.Add(ctx, 1, attrs(attribute.String("endpoint_family", o.EndpointFamily), attribute.String("code", o.Status)))
}

// variedOutcomes are outcomes of every shape the worker's metrics tell apart. Their
// durations and amounts are exact in binary, so that sums do not depend on the order of
// their additions (the SDK's own order varies with its collections).
func variedOutcomes(start time.Time) []rpc.Outcome {
	ms := func(n float64) time.Time { return start.Add(time.Duration(n * float64(time.Millisecond))) }
	ok := outcome(start) // two attempts, the first failed over
	ok.Attempts = []rpc.Attempt{
		{Provider: "first", Kind: "anthropic", Start: start, End: ms(62.5), Error: "503"},
		{Provider: "second", Kind: "openai", Start: ms(62.5), End: ms(250)},
	}
	ok.FirstByteTime, ok.EndTime = ms(250), ms(1250) // the first token on a bound: the bucket it closes
	ok.Usage.Output = 9                              // 1 s over 8 tokens after the first
	gemini := outcome(start)
	gemini.Model, gemini.EndpointFamily = "gemini-x", "content.generate"
	gemini.Attempts = []rpc.Attempt{{Provider: "g", Kind: "gemini", Start: start, End: ms(125)}}
	gemini.Usage = metering.Usage{Input: 5000, Output: 65537, Reliable: true}
	gemini.FirstByteTime, gemini.EndTime = ms(125), ms(131072+125) // past the last bucket
	gemini.Cost = decimal.NullDecimal{Decimal: decimal.Zero, Valid: true}
	failed := outcome(start)
	failed.Status, failed.FirstByteTime = "upstream_error", time.Time{}
	failed.Usage = metering.Usage{}
	failed.Cost = decimal.NullDecimal{}
	failed.Attempts = []rpc.Attempt{
		{Provider: "first", Kind: "anthropic", Start: start, End: ms(500), Error: "429"},
		{Provider: "second", Kind: "openai", Start: ms(500), End: ms(1000), Error: rpc.AttemptTimeout},
	}
	failed.EndTime = ms(1000)
	refused := rpc.Outcome{Model: "gpt-x", EndpointFamily: "chat.completions", Status: apierror.InsufficientBalance,
		StartTime: start, EndTime: ms(0.5)}
	embed := outcome(start)
	embed.EndpointFamily, embed.Model = "embeddings", "emb"
	embed.Attempts = ok.Attempts[1:]
	embed.Usage = metering.Usage{Input: 16, Reliable: true}
	embed.FirstByteTime, embed.EndTime = ms(250), ms(512)
	return []rpc.Outcome{ok, gemini, failed, refused, embed}
}

// TestProducedMetricsAreTheSDKs: the worker's series, produced to a reader, are what the
// SDK's synchronous instruments made of the same outcomes (and billing's charge waits): names, descriptions, units,
// attribute sets, bounds, bucket counts, counts, sums, minima, maxima and counter values,
// cumulative and delta, collection after collection (a delta view reports only what came
// since its last collection, and only the series that had some).
func TestProducedMetricsAreTheSDKs(t *testing.T) {
	t.Parallel()
	delta := func(sdkmetric.InstrumentKind) metricdata.Temporality { return metricdata.DeltaTemporality }
	for _, tc := range []struct {
		name string
		temp sdkmetric.TemporalitySelector
	}{{"cumulative", sdkmetric.DefaultTemporalitySelector}, {"delta", delta}} {
		t.Run(tc.name, func(t *testing.T) {
			ref := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(tc.temp))
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(ref), sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter))
			defer mp.Shutdown(context.Background())
			in := newSDKInstruments(t, mp.Meter("modelgateway"))

			var got *sdkmetric.ManualReader
			tel, err := New(context.Background(), Options{Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Reader: func(p sdkmetric.Producer) sdkmetric.Reader {
				got = sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(tc.temp), sdkmetric.WithProducer(p))
				return got
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer tel.Close(context.Background())
			// The view of the test's reader: New made it cumulative; this one is the reader's.
			tel.store.views[0].temporality = tc.temp
			w := newWorker(tel)
			waited := tel.ChargeWaitObserver()
			waits := []time.Duration{125 * time.Millisecond, 250 * time.Millisecond, 2 * time.Second, 8 * time.Second} // 8 s: past the last bound

			outcomes := variedOutcomes(time.Now())
			for round, batch := range [][]rpc.Outcome{outcomes, outcomes[:2], outcomes[2:3], nil, outcomes} {
				for i, o := range batch {
					for range 3 {
						in.record(&o)
						w.metrics(&o)
						w.requests(o.EndpointFamily, o.Status)
						if wait := waits[(i+round)%len(waits)]; round != 2 {
							in.chargeWait.Record(context.Background(), wait.Seconds())
							waited(wait)
						}
					}
				}
				w.flush()
				want, have := collectWorker(t, ref), collectWorker(t, got)
				if len(want) != len(have) {
					t.Fatalf("round %d: %d instruments, want %d (%v)", round, len(have), len(want), names(have))
				}
				for i := range want {
					metricdatatest.AssertEqual(t, want[i], have[i], metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
				}
			}
		})
	}
}

// collectWorker collects r and returns the worker's instruments' metrics, by name.
func collectWorker(t *testing.T, r *sdkmetric.ManualReader) []metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	byName := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope != workerScope {
			t.Errorf("scope %+v, want %+v", sm.Scope, workerScope)
		}
		for _, m := range sm.Metrics {
			byName[m.Name] = m
		}
	}
	var ms []metricdata.Metrics
	for _, d := range workerInsts {
		if m, ok := byName[d.name]; ok {
			ms = append(ms, m)
		}
	}
	return ms
}

func names(ms []metricdata.Metrics) []string {
	var s []string
	for _, m := range ms {
		s = append(s, m.Name)
	}
	return s
}

// Past the SDK's cardinality limit, new attribute sets of an instrument go to its overflow
// series, as the SDK's limiter sends them; known ones keep theirs.
func TestSeriesPastTheLimitOverflow(t *testing.T) {
	s := newStore(time.Now())
	s.limit = 3
	a := s.lookup(requestsInst, attribute.NewSet(attribute.String("code", "a")))
	b := s.lookup(requestsInst, attribute.NewSet(attribute.String("code", "b")))
	c := s.lookup(requestsInst, attribute.NewSet(attribute.String("code", "c")))
	d := s.lookup(requestsInst, attribute.NewSet(attribute.String("code", "d")))
	if a == b || c != d || c.attrs != overflowSet {
		t.Errorf("series a %v b %v c %v d %v: want a and b their own, c and d the overflow set", a.attrs, b.attrs, c.attrs, d.attrs)
	}
	if again := s.lookup(requestsInst, attribute.NewSet(attribute.String("code", "a"))); again != a {
		t.Error("a known set went to another series")
	}
	if other := s.lookup(attemptsInst, attribute.NewSet(attribute.String("code", "c"))); other.attrs == overflowSet {
		t.Error("the limit is per instrument")
	}
}
