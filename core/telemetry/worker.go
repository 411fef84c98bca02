package telemetry

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"modelgateway/core/rpc"
	"modelgateway/core/wire/apierror"
)

// worker caches attribute sets and their series (series.go): after the first request of a
// kind, recording allocates nothing and takes no lock. What it records waits in the series
// and is merged into the readers' views once per drain of the queue (flush).
type worker struct {
	t        *Telemetry
	sets     map[setKey]*setEntry
	spanSets map[spanKey][]attribute.KeyValue
	dirty    []*series // series with measurements not yet merged
	// last is each kind's sets of the last two lookups, with their keys: consecutive
	// requests of one model, route and outcome, the common case, compare the key's strings
	// (the same strings, from the snapshot: equal at their pointers) instead of hashing five
	// of them; two, for a request's two attempts (a failover) or two alternating models.
	// A hit writes nothing (a set key is five strings: copied while the GC runs, each
	// copy took the write barrier's bulk path); a miss replaces the older of the two.
	last [setKinds]struct {
		s     [2]lastSet
		older uint8
	}
	// attrs and lines are reused from one access line to the next.
	attrs attrSink
	lines lineWriter
}

type lastSet struct {
	k setKey
	e *setEntry
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

// setEntry is an attribute set resolved once, with its series of each instrument that
// takes it, made at their first use: a setGenAI set has the request duration, time to
// first token and time per output token; a setAttempt set the attempts and fallbacks.
type setEntry struct {
	attrs  attribute.Set
	series [3]*series
	// tokens are the input and output token sets of a setGenAI set, resolved on its first use.
	tokens [2]*setEntry
}

func (w *worker) set(k setKey, kvs func() []attribute.KeyValue) *setEntry {
	last := &w.last[k.kind]
	for i := range last.s {
		if l := &last.s[i]; l.e != nil && l.k == k {
			return l.e
		}
	}
	e, ok := w.sets[k]
	if !ok {
		e = &setEntry{attrs: attribute.NewSet(kvs()...)}
		if len(w.sets) < 10000 { // bounded, though every part of the key is bounded already
			w.sets[k] = e
		}
	}
	last.s[last.older] = lastSet{k, e}
	last.older ^= 1
	return e
}

// series is e's series of instrument d (the i-th of e's kind), marked as measured: the
// caller measures into it.
func (w *worker) series(e *setEntry, i int, d *instDesc) *series {
	s := e.series[i]
	if s == nil {
		s = w.t.store.lookup(d, e.attrs)
		e.series[i] = s
	}
	if !s.dirty {
		s.dirty = true
		w.dirty = append(w.dirty, s)
	}
	return s
}

// flush writes the buffered access lines out and merges the measurements into the readers'
// views: at the end of each drain of the queue, at a barrier (Sync) and at the stop.
func (w *worker) flush() {
	w.lines.flush()
	w.t.store.merge(w.dirty)
	for i, s := range w.dirty {
		s.dirty = false
		w.dirty[i] = nil
	}
	w.dirty = w.dirty[:0]
}

func (w *worker) requests(family, code string) {
	if !w.t.metricsOn {
		return
	}
	e := w.set(setKey{kind: setRequests, a: family, b: code}, func() []attribute.KeyValue {
		return []attribute.KeyValue{attribute.String("endpoint_family", family), attribute.String("code", code)}
	})
	w.series(e, 0, requestsInst).addInt(1)
}

func (w *worker) metrics(o *rpc.Outcome) {
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
	w.series(genai, 0, durationInst).measureFloat(o.EndTime.Sub(o.StartTime).Seconds())
	if errType == "" && !o.FirstByteTime.IsZero() && generative(op) {
		w.series(genai, 1, ttftInst).measureFloat(o.FirstByteTime.Sub(o.StartTime).Seconds())
		if o.Usage.Reliable && o.Usage.Output > 1 {
			w.series(genai, 2, tpotInst).measureFloat(o.EndTime.Sub(o.FirstByteTime).Seconds() / float64(o.Usage.Output-1))
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
			w.series(opts, 0, tokensInst).measureInt(tt.n)
		}
	}
	for i, at := range o.Attempts {
		outcome := AttemptOutcome(at.Error)
		e := w.set(setKey{kind: setAttempt, a: at.Provider, b: outcome}, func() []attribute.KeyValue {
			return []attribute.KeyValue{attribute.String("provider", at.Provider), attribute.String("outcome", outcome)}
		})
		w.series(e, 0, attemptsInst).addInt(1)
		if at.Error != "" && i < len(o.Attempts)-1 {
			w.series(e, 1, fallbackInst).addInt(1)
		}
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
		w.series(copts, 0, clientInst).measureFloat(at.End.Sub(at.Start).Seconds())
	}
	if o.Cost.Valid {
		e := w.set(setKey{kind: setCurrency, a: o.Currency}, func() []attribute.KeyValue {
			return []attribute.KeyValue{attribute.String("currency", o.Currency)}
		})
		w.series(e, 0, chargedInst).addFloat(o.Cost.Decimal.InexactFloat64())
	}
	if o.Status == apierror.InsufficientBalance {
		e := w.set(setKey{kind: setFamily, a: o.EndpointFamily}, func() []attribute.KeyValue {
			return []attribute.KeyValue{attribute.String("endpoint_family", o.EndpointFamily)}
		})
		w.series(e, 0, refusalsInst).addInt(1)
	}
}

// access finishes an HTTP request: its counter and its access line.
func (w *worker) access(a *access) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held { // the request's only outcome, as it came (Record)
		a.held = false
		w.metrics(&a.last)
	}
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
		s.str(keyRequestID, a.requestID)
		if a.span.IsValid() {
			s.ids(a.span.TraceID(), a.span.SpanID())
		}
		s.str(keyMethod, a.method)
		s.str(keyPath, a.path)
		s.str(keyFamily, h.family)
		s.i64(keyStatus, int64(a.status))
		s.str(keyCode, h.code)
	} else {
		s.str(keyRequestID, o.RequestID)
		s.str(keyTransport, "grpc")
		s.str(keyFamily, o.EndpointFamily)
		s.str(keyCode, o.Status)
	}
	var start, firstByte, end time.Time
	if o != nil {
		s.str(keyKeyPrefix, o.KeyPrefix)
		s.str(keyModel, o.Model)
		s.str(keyUpstream, o.Provider)
		s.i64(keyAttempts, int64(len(o.Attempts)))
		u := &o.Usage
		s.boolean(keyUsageReliable, u.Reliable)
		s.i64(keyInputTokens, u.Input)
		s.i64(keyCachedInputTokens, u.CachedInput)
		s.i64(keyCacheWriteTokens, u.CacheWrite)
		s.i64(keyOutputTokens, u.Output)
		s.i64(keyReasoningTokens, u.Reasoning)
		s.i64(keyAudioInputTokens, u.AudioInput)
		s.i64(keyAudioOutputTokens, u.AudioOutput)
		if o.Cost.Valid {
			s.dec(keyCost, o.Cost.Decimal)
			s.str(keyCurrency, o.Currency)
		}
		start, firstByte, end = o.StartTime, o.FirstByteTime, o.EndTime
	}
	if h != nil {
		start, firstByte, end = h.a.start, h.a.firstByte, h.a.end
		s.i64(keyBytes, h.a.bytes)
	}
	s.millis(keyLatencyMS, end.Sub(start))
	if !firstByte.IsZero() {
		s.millis(keyTTFBMS, firstByte.Sub(start))
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
