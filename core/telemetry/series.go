package telemetry

import (
	"context"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// The worker's instruments (the generation, request and upstream metrics, several points
// per request) are aggregated by the worker itself, in series it resolves once per
// attribute set and owns alone, and reach the SDK's readers as a metric Producer at each
// collection. A synchronous SDK instrument resolves its attributes again on every call
// (the options, a dedup of the set), looks the series up in a map and takes the series'
// hot/cold guard: ~300 ns per point, ~2 µs per request, against a bucket search and a few
// adds here. The SDK has no asynchronous histogram, and a Producer's data is what the
// readers export beside the SDK's own, untouched: the same names, descriptions, units,
// attribute sets, bucket bounds, counts, sums, minima and maxima as the SDK's instruments
// made them (TestProducedMetricsAreTheSDKs holds the two together), the SDK's default
// cardinality limit included. Each reader has its own view, in its temporality
// (cumulative, or delta where an OTLP exporter asks for it).

// workerScope is the instrumentation scope the SDK's meter gave these instruments.
var workerScope = instrumentation.Scope{Name: "modelgateway"}

// instKind is the kind of SDK instrument an instDesc stands for.
type instKind uint8

const (
	floatHistogram instKind = iota
	intHistogram
	intCounter
	floatCounter
)

// instDesc is one instrument: what the SDK's instrument was created with.
type instDesc struct {
	name, desc, unit string
	kind             instKind
	bounds           []float64 // histograms: sorted, as the SDK keeps them
}

func (d *instDesc) sdkKind() sdkmetric.InstrumentKind {
	if d.kind == intCounter || d.kind == floatCounter {
		return sdkmetric.InstrumentKindCounter
	}
	return sdkmetric.InstrumentKindHistogram
}

// The worker's instruments, in the order they are produced.
var (
	durationInst = &instDesc{name: "gen_ai.server.request.duration", desc: "Generative AI server request duration, from arrival to the end of the answer.", unit: "s", bounds: durationBuckets}
	ttftInst     = &instDesc{name: "gen_ai.server.time_to_first_token", desc: "Time from arrival to the first answer from the upstream, for successful generations.", unit: "s", bounds: ttftBuckets}
	tpotInst     = &instDesc{name: "gen_ai.server.time_per_output_token", desc: "Time per output token after the first, for successful generations.", unit: "s", bounds: tpotBuckets}
	tokensInst   = &instDesc{name: "gen_ai.client.token.usage", desc: "Tokens used per upstream answer, by gen_ai.token.type.", unit: "{token}", kind: intHistogram, bounds: tokenBuckets}
	requestsInst = &instDesc{name: "gateway.requests", desc: "Requests by endpoint family and spec code (ok for success).", kind: intCounter}
	attemptsInst = &instDesc{name: "gateway.upstream.attempts", desc: "Upstream calls by provider and outcome (ok, rate_limited, timeout, error).", kind: intCounter}
	clientInst   = &instDesc{name: "gen_ai.client.operation.duration", desc: "Duration of one upstream call, from sending it to its first answer or failure.", unit: "s", bounds: durationBuckets}
	fallbackInst = &instDesc{name: "gateway.upstream.fallbacks", desc: "Failed upstream calls after which the next route was tried, by provider and outcome.", kind: intCounter}
	refusalsInst = &instDesc{name: "gateway.balance.refusals", desc: "Requests refused with insufficient_balance, by endpoint family.", kind: intCounter}
	chargedInst  = &instDesc{name: "gateway.charged", desc: "Amount charged, by currency.", kind: floatCounter}
	// chargeWaitInst is recorded by billing's goroutines, one point per request, through a
	// sharedSeries.
	chargeWaitInst = &instDesc{name: "gateway.charge.wait", desc: "Time the end of an answer waited for its charge to be durable (group commit).", unit: "s", bounds: chargeWaitBuckets}

	workerInsts = []*instDesc{durationInst, ttftInst, tpotInst, tokensInst, requestsInst, attemptsInst,
		clientInst, fallbackInst, refusalsInst, chargedInst, chargeWaitInst}
)

// agg is what a series was given: a histogram's buckets, count, sum and extrema, or a
// counter's sum (isum or fsum by the instrument's number kind).
type agg struct {
	counts     []uint64 // len(bounds)+1, made at the first measurement
	count      uint64
	fsum       float64
	isum       int64
	fmin, fmax float64
	imin, imax int64
	set        bool // something was measured or added
}

// bucket is the index of v's bucket, as the SDK finds it (sort.SearchFloat64s: the first
// bound not below v; len(bounds) above the last, and for NaN).
func bucket(bounds []float64, v float64) int {
	i, j := 0, len(bounds)
	for i < j {
		h := int(uint(i+j) >> 1)
		if !(bounds[h] >= v) {
			i = h + 1
		} else {
			j = h
		}
	}
	return i
}

func (a *agg) measureFloat(bounds []float64, v float64) {
	if a.counts == nil {
		a.counts = make([]uint64, len(bounds)+1)
	}
	a.counts[bucket(bounds, v)]++
	a.count++
	a.fsum += v
	switch {
	case !a.set:
		a.fmin, a.fmax, a.set = v, v, true
	case v < a.fmin:
		a.fmin = v
	case v > a.fmax:
		a.fmax = v
	}
}

func (a *agg) measureInt(bounds []float64, v int64) {
	if a.counts == nil {
		a.counts = make([]uint64, len(bounds)+1)
	}
	a.counts[bucket(bounds, float64(v))]++
	a.count++
	a.isum += v
	switch {
	case !a.set:
		a.imin, a.imax, a.set = v, v, true
	case v < a.imin:
		a.imin = v
	case v > a.imax:
		a.imax = v
	}
}

// merge adds from to a.
func (a *agg) merge(from *agg) {
	if !from.set {
		return
	}
	if from.counts != nil {
		if a.counts == nil {
			a.counts = make([]uint64, len(from.counts))
		}
		for i, c := range from.counts {
			a.counts[i] += c
		}
	}
	a.count += from.count
	a.fsum += from.fsum
	a.isum += from.isum
	if !a.set {
		a.fmin, a.fmax, a.imin, a.imax = from.fmin, from.fmax, from.imin, from.imax
	} else {
		a.fmin, a.fmax = min(a.fmin, from.fmin), max(a.fmax, from.fmax)
		a.imin, a.imax = min(a.imin, from.imin), max(a.imax, from.imax)
	}
	a.set = true
}

// reset empties a, keeping its buckets' array.
func (a *agg) reset() {
	clear(a.counts)
	*a = agg{counts: a.counts}
}

// series is one instrument's attribute set. pending is the worker's alone: what it
// recorded since its last flush, which merges it into every view.
type series struct {
	d       *instDesc
	attrs   attribute.Set
	id      int // index in store.series and in each view's aggs
	pending agg
	dirty   bool // on the worker's list of series to merge
}

func (s *series) measureFloat(v float64) { s.pending.measureFloat(s.d.bounds, v) }
func (s *series) measureInt(v int64)     { s.pending.measureInt(s.d.bounds, v) }
func (s *series) addInt(n int64)         { s.pending.isum += n; s.pending.set = true }
func (s *series) addFloat(f float64)     { s.pending.fsum += f; s.pending.set = true }

// sharedSeries is a series measured from any goroutine: its pending measurements under a
// lock of its own, merged into the views at each collection.
type sharedSeries struct {
	mu sync.Mutex
	se *series
}

func (s *sharedSeries) measureFloat(v float64) {
	s.mu.Lock()
	s.se.measureFloat(v)
	s.mu.Unlock()
}

// shared adds a series of d without attributes, measured from any goroutine.
func (s *store) shared(d *instDesc) *sharedSeries {
	sh := &sharedSeries{se: s.lookup(d, *attribute.EmptySet())}
	s.mu.Lock()
	s.sharedSeries = append(s.sharedSeries, sh)
	s.mu.Unlock()
	return sh
}

type seriesKey struct {
	d     *instDesc
	attrs attribute.Distinct
}

// store holds the worker's series and the readers' views of them.
type store struct {
	mu     sync.Mutex
	series []*series
	byKey  map[seriesKey]*series
	perIns map[*instDesc]int // series per instrument, for the limit
	views  []*view
	// sharedSeries are merged at each collection (the worker's at its flushes).
	sharedSeries []*sharedSeries
	start        time.Time // when the SDK's instruments would have been made
	limit        int
}

// overflowSet is the SDK's attribute set of the series past the cardinality limit.
var overflowSet = attribute.NewSet(attribute.Bool("otel.metric.overflow", true))

// cardinalityLimit is the SDK's default limit of series per instrument (the overflow
// series included).
const cardinalityLimit = 2000

func newStore(start time.Time) *store {
	return &store{byKey: map[seriesKey]*series{}, perIns: map[*instDesc]int{}, start: start, limit: cardinalityLimit}
}

// lookup is d's series of attrs, made at its first use; past the limit, d's overflow
// series, as the SDK's limiter gives it.
func (s *store) lookup(d *instDesc, attrs attribute.Set) *series {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := seriesKey{d, attrs.Equivalent()}
	if se, ok := s.byKey[k]; ok {
		return se
	}
	if s.limit > 0 && s.perIns[d] >= s.limit-1 {
		attrs = overflowSet
		k.attrs = attrs.Equivalent()
		if se, ok := s.byKey[k]; ok {
			return se
		}
	}
	se := &series{d: d, attrs: attrs, id: len(s.series)}
	s.series = append(s.series, se)
	s.byKey[k] = se
	s.perIns[d]++
	return se
}

// merge adds the series' pending measurements to every view and empties them.
func (s *store) merge(dirty []*series) {
	if len(dirty) == 0 {
		return
	}
	s.mu.Lock()
	s.mergeLocked(dirty)
	s.mu.Unlock()
}

// mergeLocked is merge under s.mu.
func (s *store) mergeLocked(dirty []*series) {
	for _, v := range s.views {
		if n := len(s.series); len(v.aggs) < n {
			v.aggs = append(v.aggs, make([]agg, n-len(v.aggs))...)
		}
		for _, se := range dirty {
			v.aggs[se.id].merge(&se.pending)
		}
	}
	for _, se := range dirty {
		se.pending.reset()
	}
}

// view is one reader's Producer: the series as that reader's temporality wants them.
type view struct {
	s           *store
	temporality func(sdkmetric.InstrumentKind) metricdata.Temporality
	aggs        []agg     // by series id, under s.mu
	start       time.Time // delta: the last collection
}

// view adds a reader's view; a nil temporality is cumulative.
func (s *store) view(temporality func(sdkmetric.InstrumentKind) metricdata.Temporality) *view {
	if temporality == nil {
		temporality = sdkmetric.DefaultTemporalitySelector
	}
	v := &view{s: s, temporality: temporality, start: s.start}
	s.mu.Lock()
	s.views = append(s.views, v)
	s.mu.Unlock()
	return v
}

// Produce implements sdkmetric.Producer: the instruments with points, in the SDK's form.
func (v *view) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	s := v.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sh := range s.sharedSeries {
		sh.mu.Lock()
		s.mergeLocked([]*series{sh.se})
		sh.mu.Unlock()
	}
	t := time.Now()
	var ms []metricdata.Metrics
	for _, d := range workerInsts {
		temp := v.temporality(d.sdkKind())
		delta := temp == metricdata.DeltaTemporality
		start := v.start
		if !delta {
			start = s.start
		}
		m := metricdata.Metrics{Name: d.name, Description: d.desc, Unit: d.unit}
		n := 0
		switch d.kind {
		case floatHistogram:
			h := metricdata.Histogram[float64]{Temporality: temp}
			bounds := slices.Clone(d.bounds)
			v.each(d, func(se *series, a *agg) {
				h.DataPoints = append(h.DataPoints, metricdata.HistogramDataPoint[float64]{
					Attributes: se.attrs, StartTime: start, Time: t, Count: a.count, Bounds: bounds,
					BucketCounts: slices.Clone(a.counts), Sum: a.fsum,
					Min: metricdata.NewExtrema(a.fmin), Max: metricdata.NewExtrema(a.fmax)})
			})
			m.Data, n = h, len(h.DataPoints)
		case intHistogram:
			h := metricdata.Histogram[int64]{Temporality: temp}
			bounds := slices.Clone(d.bounds)
			v.each(d, func(se *series, a *agg) {
				h.DataPoints = append(h.DataPoints, metricdata.HistogramDataPoint[int64]{
					Attributes: se.attrs, StartTime: start, Time: t, Count: a.count, Bounds: bounds,
					BucketCounts: slices.Clone(a.counts), Sum: a.isum,
					Min: metricdata.NewExtrema(a.imin), Max: metricdata.NewExtrema(a.imax)})
			})
			m.Data, n = h, len(h.DataPoints)
		case intCounter:
			c := metricdata.Sum[int64]{Temporality: temp, IsMonotonic: true}
			v.each(d, func(se *series, a *agg) {
				c.DataPoints = append(c.DataPoints, metricdata.DataPoint[int64]{Attributes: se.attrs, StartTime: start, Time: t, Value: a.isum})
			})
			m.Data, n = c, len(c.DataPoints)
		case floatCounter:
			c := metricdata.Sum[float64]{Temporality: temp, IsMonotonic: true}
			v.each(d, func(se *series, a *agg) {
				c.DataPoints = append(c.DataPoints, metricdata.DataPoint[float64]{Attributes: se.attrs, StartTime: start, Time: t, Value: a.fsum})
			})
			m.Data, n = c, len(c.DataPoints)
		}
		if n > 0 { // as the SDK, an instrument without points is left out
			ms = append(ms, m)
		}
		if delta { // a delta view reports what came since its last collection
			v.each(d, func(_ *series, a *agg) { a.reset() })
		}
	}
	// The SDK keeps one start per instrument; every instrument here was collected at t.
	v.start = t
	if len(ms) == 0 {
		return nil, nil
	}
	return []metricdata.ScopeMetrics{{Scope: workerScope, Metrics: ms}}, nil
}

// each calls f with d's series that have something to report in v.
func (v *view) each(d *instDesc, f func(*series, *agg)) {
	for _, se := range v.s.series {
		if se.d == d && se.id < len(v.aggs) && v.aggs[se.id].set {
			f(se, &v.aggs[se.id])
		}
	}
}
