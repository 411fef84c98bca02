package telemetry

import (
	"context"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"modelgateway/core/rpc"
	"modelgateway/core/wire/apierror"
)

// worker caches attribute sets: after the first request of a kind, recording allocates
// nothing. Counters are counted in the sets and added to their instruments once per drain
// of the queue (flush): the SDK resolves a call's attributes and finds its series on every
// call, which per request cost more than the counting.
type worker struct {
	t        *Telemetry
	sets     map[setKey]*setEntry
	spanSets map[spanKey][]attribute.KeyValue
	counted  []*setEntry // sets with counts not yet added
	// last is each kind's set of the last lookup, with its key: consecutive requests of one
	// model, route and outcome, the common case, compare the key's strings (the same
	// strings, from the snapshot: equal at their pointers) instead of hashing five of them.
	last [setKinds]struct {
		k setKey
		e *setEntry
	}
	// attrs and lines are reused from one access line to the next.
	attrs attrSink
	lines lineWriter
}

// attrOpts is one attribute set as the option lists Record and Add take.
type attrOpts struct {
	rec []metric.RecordOption
	add []metric.AddOption
}

type setKey struct {
	kind          uint8
	a, b, c, d, e string
}

const (
	setGenAI uint8 = iota
	setTokens
	setRequests
	setAttempt
	setCurrency
	setFamily
	setClient
	setKinds // the number of kinds
)

// AttemptOutcome is an upstream attempt's outcome label (contract.md, "Routing"): ok,
// rate_limited (429), timeout, or error.
func AttemptOutcome(errType string) string {
	switch errType {
	case "":
		return "ok"
	case "429":
		return "rate_limited"
	case rpc.AttemptTimeout:
		return "timeout"
	}
	return "error"
}

func newWorker(t *Telemetry) *worker {
	return &worker{t: t, sets: map[setKey]*setEntry{}, spanSets: map[spanKey][]attribute.KeyValue{}}
}

// setEntry is an attribute set resolved once, with what its counters were given since the
// last flush.
type setEntry struct {
	attrOpts
	kind uint8 // setKey.kind: which counters n, fallbacks and amount are of
	// n counts requests (setRequests), attempts (setAttempt) or refusals (setFamily);
	// fallbacks the attempts that failed over (setAttempt); amount the money charged
	// (setCurrency).
	n, fallbacks int64
	amount       float64
	counted      bool // on worker.counted
	// tokens are the input and output token sets of a setGenAI set, resolved on its first use.
	tokens [2]*setEntry
}

func (w *worker) set(k setKey, kvs func() []attribute.KeyValue) *setEntry {
	last := &w.last[k.kind]
	if last.e != nil && last.k == k {
		return last.e
	}
	e, ok := w.sets[k]
	if !ok {
		o := metric.WithAttributeSet(attribute.NewSet(kvs()...))
		e = &setEntry{attrOpts: attrOpts{rec: []metric.RecordOption{o}, add: []metric.AddOption{o}}, kind: k.kind}
		if len(w.sets) < 10000 { // bounded, though every part of the key is bounded already
			w.sets[k] = e
		}
	}
	last.k, last.e = k, e
	return e
}

// count marks e as having counts to add at the next flush.
func (w *worker) count(e *setEntry) {
	if !e.counted {
		e.counted = true
		w.counted = append(w.counted, e)
	}
}

// flush writes the buffered access lines out and adds the counts to the counters: at the
// end of each drain of the queue, at a barrier (Sync) and at the stop.
func (w *worker) flush() {
	w.lines.flush()
	ctx, in := context.Background(), w.t.inst
	for i, e := range w.counted {
		switch e.kind {
		case setRequests:
			in.requests.Add(ctx, e.n, e.add...)
		case setAttempt:
			in.attempts.Add(ctx, e.n, e.add...)
			if e.fallbacks > 0 {
				in.fallbacks.Add(ctx, e.fallbacks, e.add...)
			}
		case setCurrency:
			in.charged.Add(ctx, e.amount, e.add...)
		case setFamily:
			in.refusals.Add(ctx, e.n, e.add...)
		}
		e.n, e.fallbacks, e.amount, e.counted = 0, 0, 0, false
		w.counted[i] = nil
	}
	w.counted = w.counted[:0]
}

func (w *worker) requests(family, code string) {
	if !w.t.metricsOn {
		return
	}
	e := w.set(setKey{kind: setRequests, a: family, b: code}, func() []attribute.KeyValue {
		return []attribute.KeyValue{attribute.String("endpoint_family", family), attribute.String("code", code)}
	})
	e.n++
	w.count(e)
}

func (w *worker) metrics(o *rpc.Outcome) {
	ctx, in := context.Background(), w.t.inst
	op, prov := Operation(o.EndpointFamily), ""
	if n := len(o.Attempts); n > 0 {
		prov = ProviderName(o.Attempts[n-1].Kind)
	}
	errType := ""
	if o.Status != "ok" {
		errType = o.Status
	}
	genai := w.set(setKey{kind: setGenAI, a: op, b: prov, c: o.Model, d: errType}, func() []attribute.KeyValue {
		kvs := []attribute.KeyValue{semconv.GenAIOperationNameKey.String(op), semconv.GenAIRequestModelKey.String(o.Model)}
		if prov != "" {
			kvs = append(kvs, semconv.GenAIProviderNameKey.String(prov))
		}
		if errType != "" {
			kvs = append(kvs, semconv.ErrorTypeKey.String(errType))
		}
		return kvs
	})
	in.duration.Record(ctx, o.EndTime.Sub(o.StartTime).Seconds(), genai.rec...)
	if errType == "" && !o.FirstByteTime.IsZero() && generative(op) {
		in.ttft.Record(ctx, o.FirstByteTime.Sub(o.StartTime).Seconds(), genai.rec...)
		if o.Usage.Reliable && o.Usage.Output > 1 {
			in.tpot.Record(ctx, o.EndTime.Sub(o.FirstByteTime).Seconds()/float64(o.Usage.Output-1), genai.rec...)
		}
	}
	if o.Usage.Reliable {
		for i, tt := range [...]struct {
			typ string
			n   int64
		}{{"input", o.Usage.TotalInput()}, {"output", o.Usage.Output}} {
			opts := genai.tokens[i]
			if opts == nil {
				opts = w.set(setKey{kind: setTokens, a: op, b: prov, c: o.Model, d: tt.typ}, func() []attribute.KeyValue {
					kvs := []attribute.KeyValue{semconv.GenAIOperationNameKey.String(op), semconv.GenAIRequestModelKey.String(o.Model), semconv.GenAITokenTypeKey.String(tt.typ)}
					if prov != "" {
						kvs = append(kvs, semconv.GenAIProviderNameKey.String(prov))
					}
					return kvs
				})
				genai.tokens[i] = opts
			}
			in.tokens.Record(ctx, tt.n, opts.rec...)
		}
	}
	for i, at := range o.Attempts {
		outcome := AttemptOutcome(at.Error)
		e := w.set(setKey{kind: setAttempt, a: at.Provider, b: outcome}, func() []attribute.KeyValue {
			return []attribute.KeyValue{attribute.String("provider", at.Provider), attribute.String("outcome", outcome)}
		})
		e.n++
		if at.Error != "" && i < len(o.Attempts)-1 {
			e.fallbacks++
		}
		w.count(e)
		// The client-side duration of the call (OpenTelemetry GenAI conventions), by the
		// provider's semantic-convention name; error.type as the attempt's outcome.
		pname := ProviderName(at.Kind)
		copts := w.set(setKey{kind: setClient, a: op, b: pname, c: o.Model, d: at.Error}, func() []attribute.KeyValue {
			kvs := []attribute.KeyValue{semconv.GenAIOperationNameKey.String(op), semconv.GenAIRequestModelKey.String(o.Model), semconv.GenAIProviderNameKey.String(pname)}
			if at.Error != "" {
				kvs = append(kvs, semconv.ErrorTypeKey.String(at.Error))
			}
			return kvs
		})
		in.clientDuration.Record(ctx, at.End.Sub(at.Start).Seconds(), copts.rec...)
	}
	if o.Cost.Valid {
		e := w.set(setKey{kind: setCurrency, a: o.Currency}, func() []attribute.KeyValue {
			return []attribute.KeyValue{attribute.String("currency", o.Currency)}
		})
		e.amount += o.Cost.Decimal.InexactFloat64()
		w.count(e)
	}
	if o.Status == apierror.InsufficientBalance {
		e := w.set(setKey{kind: setFamily, a: o.EndpointFamily}, func() []attribute.KeyValue {
			return []attribute.KeyValue{attribute.String("endpoint_family", o.EndpointFamily)}
		})
		e.n++
		w.count(e)
	}
}

// access finishes an HTTP request: its counter and its access line.
func (w *worker) access(a *access) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var o *rpc.Outcome
	family, code := FamilyOf(a.path), a.code
	if a.outcomes > 0 {
		o = &a.last
		family, code = o.EndpointFamily, o.Status
	}
	if code == "" {
		switch {
		case a.status < 400:
			code = "ok"
		case a.status >= 500:
			code = apierror.Internal
		default:
			code = apierror.InvalidRequest
		}
	}
	if family == "health" {
		// Probes every few seconds would drown the log and the traces; they are still counted.
		w.requests(family, code)
		return
	}
	w.requests(family, code)
	if w.t.tracingOn && a.span.IsSampled() {
		ctx := trace.ContextWithSpanContext(context.Background(), a.span)
		if !a.grpc {
			ctx = w.serverSpan(a, family, code)
		}
		if o != nil && trace.SpanContextFromContext(ctx).IsSampled() {
			w.clientSpans(ctx, o)
		}
	}
	w.line(o, &accessLine{a: a, family: family, code: code})
}

type accessLine struct {
	a            *access
	family, code string
}

// line writes the access line: who (key prefix, never the key), what (model, family), how it
// went (status, code, upstream, attempts), what it used and cost, and how long it took. The
// JSON process logger's line is formatted straight into the worker's buffer, written out
// with the others of the same drain of the queue (accessline.go).
func (w *worker) line(o *rpc.Outcome, h *accessLine) {
	log, ctx := w.t.log, context.Background()
	if !log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	level := slog.LevelInfo
	if h != nil && h.a.status >= http.StatusInternalServerError {
		level = slog.LevelWarn
	}
	if th, ok := log.Handler().(traceHandler); ok && th.json != nil {
		lineFields(w.lines.begin(th.json, time.Now(), level, "request"), o, h)
		w.lines.end()
		return
	}
	w.attrs.attrs = w.attrs.attrs[:0]
	lineFields(&w.attrs, o, h)
	log.LogAttrs(ctx, level, "request", w.attrs.attrs...)
}

// lineFields are the access line's fields, in their order.
func lineFields(s fieldSink, o *rpc.Outcome, h *accessLine) {
	if h != nil {
		a := h.a
		if a.requestID == "" && o != nil {
			a.requestID = o.RequestID
		}
		s.str("request_id", a.requestID)
		if a.span.IsValid() {
			var tid [32]byte
			var sid [16]byte
			// The ids' hex, as their String methods give it, without the strings.
			tr, sp := a.span.TraceID(), a.span.SpanID()
			hex.Encode(tid[:], tr[:])
			hex.Encode(sid[:], sp[:])
			s.str("trace_id", string(tid[:]))
			s.str("span_id", string(sid[:]))
		}
		s.str("method", a.method)
		s.str("path", a.path)
		s.str("family", h.family)
		s.i64("status", int64(a.status))
		s.str("code", h.code)
	} else {
		s.str("request_id", o.RequestID)
		s.str("transport", "grpc")
		s.str("family", o.EndpointFamily)
		s.str("code", o.Status)
	}
	var start, firstByte, end time.Time
	if o != nil {
		s.str("key_prefix", o.KeyPrefix)
		s.str("model", o.Model)
		s.str("upstream", o.Provider)
		s.i64("attempts", int64(len(o.Attempts)))
		u := &o.Usage
		s.boolean("usage_reliable", u.Reliable)
		s.i64("input_tokens", u.Input)
		s.i64("cached_input_tokens", u.CachedInput)
		s.i64("cache_write_tokens", u.CacheWrite)
		s.i64("output_tokens", u.Output)
		s.i64("reasoning_tokens", u.Reasoning)
		s.i64("audio_input_tokens", u.AudioInput)
		s.i64("audio_output_tokens", u.AudioOutput)
		if o.Cost.Valid {
			s.dec("cost", o.Cost.Decimal)
			s.str("currency", o.Currency)
		}
		start, firstByte, end = o.StartTime, o.FirstByteTime, o.EndTime
	}
	if h != nil {
		start, firstByte, end = h.a.start, h.a.firstByte, h.a.end
		s.i64("bytes", h.a.bytes)
	}
	s.f64("latency_ms", ms(end.Sub(start)))
	if !firstByte.IsZero() {
		s.f64("ttfb_ms", ms(firstByte.Sub(start)))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Operation is gen_ai.operation.name for an endpoint family: the convention's names where it
// has one, the family otherwise.
func Operation(family string) string {
	switch family {
	case "chat.completions", "messages", "responses", "responses.compact":
		return "chat"
	case "completions":
		return "text_completion"
	case "content.generate":
		return "generate_content"
	case "embeddings", "content.embed":
		return "embeddings"
	}
	return family
}

func generative(op string) bool {
	return op == "chat" || op == "text_completion" || op == "generate_content"
}

// ProviderName is gen_ai.provider.name for a provider kind.
func ProviderName(kind string) string {
	if kind == "gemini" {
		return "gcp.gemini"
	}
	return kind
}
