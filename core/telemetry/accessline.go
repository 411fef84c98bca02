package telemetry

import (
	"encoding/hex"
	"log/slog"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
	"go.opentelemetry.io/otel/trace"

	"modelgateway/core/billing"
)

// The access line's fields are listed once (worker.fields) and go to one of two sinks: the
// JSON process logger's bytes, formatted straight into the worker's line buffer with the
// keys as constants (no slog.Attr per field, no escaping of keys that need none: a third of
// the line's formatting before), or slog attributes for any other logger (text, tests').
// TestAccessLineIsSlogsLine holds the two to the same bytes.

// fieldKey is a field's key as the JSON line writes it, with the comma before it and the
// colon after it: one append per key.
type fieldKey string

// name is the key itself.
func (k fieldKey) name() string { return string(k[2 : len(k)-2]) }

// The access line's keys.
const (
	keyRequestID         fieldKey = `,"request_id":`
	keyTraceID           fieldKey = `,"trace_id":`
	keySpanID            fieldKey = `,"span_id":`
	keyMethod            fieldKey = `,"method":`
	keyPath              fieldKey = `,"path":`
	keyFamily            fieldKey = `,"family":`
	keyStatus            fieldKey = `,"status":`
	keyCode              fieldKey = `,"code":`
	keyTransport         fieldKey = `,"transport":`
	keyKeyPrefix         fieldKey = `,"key_prefix":`
	keyModel             fieldKey = `,"model":`
	keyUpstream          fieldKey = `,"upstream":`
	keyAttempts          fieldKey = `,"attempts":`
	keyUsageReliable     fieldKey = `,"usage_reliable":`
	keyInputTokens       fieldKey = `,"input_tokens":`
	keyCachedInputTokens fieldKey = `,"cached_input_tokens":`
	keyCacheWriteTokens  fieldKey = `,"cache_write_tokens":`
	keyOutputTokens      fieldKey = `,"output_tokens":`
	keyReasoningTokens   fieldKey = `,"reasoning_tokens":`
	keyAudioInputTokens  fieldKey = `,"audio_input_tokens":`
	keyAudioOutputTokens fieldKey = `,"audio_output_tokens":`
	keyCost              fieldKey = `,"cost":`
	keyCurrency          fieldKey = `,"currency":`
	keyBytes             fieldKey = `,"bytes":`
	keyLatencyMS         fieldKey = `,"latency_ms":`
	keyTTFBMS            fieldKey = `,"ttfb_ms":`
)

// fieldSink takes the access line's fields in order. Keys are the constants above, none
// of which JSON escapes (TestAccessLineKeysNeedNoEscaping).
type fieldSink interface {
	str(key fieldKey, v string)
	// ids writes trace_id and span_id, as their String methods write them. By value: a
	// slice of them would move them to the heap through the interface.
	ids(tr trace.TraceID, sp trace.SpanID)
	i64(key fieldKey, v int64)
	boolean(key fieldKey, v bool)
	// millis takes a duration, written as ms(d), a float of milliseconds.
	millis(key fieldKey, d time.Duration)
	// dec writes an amount as a string, as Decimal.String writes it.
	dec(key fieldKey, v decimal.Decimal)
}

// jsonSink appends fields to a line as slog's JSON handler writes them.
type jsonSink struct{ b []byte }

func (s *jsonSink) key(k fieldKey) { s.b = append(s.b, k...) }

func (s *jsonSink) str(k fieldKey, v string) {
	s.key(k)
	s.b = append(s.b, '"')
	s.b = appendJSONString(s.b, v)
	s.b = append(s.b, '"')
}

// ids need no escaping, and formatted into the line their strings are never made.
func (s *jsonSink) ids(tr trace.TraceID, sp trace.SpanID) {
	s.key(keyTraceID)
	s.b = append(s.b, '"')
	s.b = hex.AppendEncode(s.b, tr[:])
	s.b = append(s.b, '"')
	s.key(keySpanID)
	s.b = append(s.b, '"')
	s.b = hex.AppendEncode(s.b, sp[:])
	s.b = append(s.b, '"')
}

// dec needs no escaping: an amount is digits, a sign and a point.
func (s *jsonSink) dec(k fieldKey, v decimal.Decimal) {
	s.key(k)
	s.b = append(s.b, '"')
	s.b = billing.AppendDecimal(s.b, v)
	s.b = append(s.b, '"')
}

func (s *jsonSink) i64(k fieldKey, v int64) {
	s.key(k)
	// Most of the line's numbers (token counts, attempts, status) are below 1000.
	switch {
	case v >= 0 && v < 10:
		s.b = append(s.b, byte('0'+v))
	case v >= 10 && v < 100:
		s.b = append(s.b, byte('0'+v/10), byte('0'+v%10))
	case v >= 100 && v < 1000:
		s.b = append(s.b, byte('0'+v/100), byte('0'+v/10%10), byte('0'+v%10))
	default:
		s.b = strconv.AppendInt(s.b, v, 10)
	}
}

func (s *jsonSink) boolean(k fieldKey, v bool) {
	s.key(k)
	s.b = strconv.AppendBool(s.b, v)
}

func (s *jsonSink) millis(k fieldKey, d time.Duration) {
	s.key(k)
	s.b = appendMillis(s.b, d)
}

// attrSink collects the fields as slog attributes.
type attrSink struct{ attrs []slog.Attr }

func (s *attrSink) str(k fieldKey, v string) { s.attrs = append(s.attrs, slog.String(k.name(), v)) }
func (s *attrSink) ids(tr trace.TraceID, sp trace.SpanID) {
	s.attrs = append(s.attrs, slog.String(keyTraceID.name(), tr.String()), slog.String(keySpanID.name(), sp.String()))
}
func (s *attrSink) i64(k fieldKey, v int64)    { s.attrs = append(s.attrs, slog.Int64(k.name(), v)) }
func (s *attrSink) boolean(k fieldKey, v bool) { s.attrs = append(s.attrs, slog.Bool(k.name(), v)) }
func (s *attrSink) millis(k fieldKey, d time.Duration) {
	s.attrs = append(s.attrs, slog.Float64(k.name(), ms(d)))
}
func (s *attrSink) dec(k fieldKey, v decimal.Decimal) {
	s.attrs = append(s.attrs, slog.String(k.name(), billing.FormatDecimal(v)))
}

// begin starts a line in the buffer: what slog writes before a record's attributes.
func (lw *lineWriter) begin(to *jsonLines, t time.Time, level slog.Level, msg string) *jsonSink {
	if lw.to != to {
		lw.flush()
		lw.to = to
	}
	lw.sink.b = lw.head(lw.buf, t, level, msg)
	return &lw.sink
}

// end closes the line begun and writes the buffer out once it holds flushAt bytes.
func (lw *lineWriter) end() {
	lw.buf = append(lw.sink.b, "}\n"...)
	lw.sink.b = nil
	if len(lw.buf) >= flushAt {
		lw.flush()
	}
}
