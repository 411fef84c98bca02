package telemetry

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"modelgateway/core/billing"
)

// The access line's fields are listed once (worker.fields) and go to one of two sinks: the
// JSON process logger's bytes, formatted straight into the worker's line buffer with the
// keys as constants (no slog.Attr per field, no escaping of keys that need none: a third of
// the line's formatting before), or slog attributes for any other logger (text, tests').
// TestAccessLineIsSlogsLine holds the two to the same bytes.

// fieldSink takes the access line's fields in order. Keys are the constants of fields, none
// of which JSON escapes (TestAccessLineKeysNeedNoEscaping).
type fieldSink interface {
	str(key, v string)
	i64(key string, v int64)
	boolean(key string, v bool)
	// millis takes a duration, written as ms(d), a float of milliseconds.
	millis(key string, d time.Duration)
	// dec writes an amount as a string, as Decimal.String writes it.
	dec(key string, v decimal.Decimal)
}

// jsonSink appends fields to a line as slog's JSON handler writes them.
type jsonSink struct{ b []byte }

func (s *jsonSink) key(k string) {
	s.b = append(s.b, ',', '"')
	s.b = append(s.b, k...)
	s.b = append(s.b, '"', ':')
}

func (s *jsonSink) str(k, v string) {
	s.key(k)
	s.b = append(s.b, '"')
	s.b = appendJSONString(s.b, v)
	s.b = append(s.b, '"')
}

// dec needs no escaping: an amount is digits, a sign and a point.
func (s *jsonSink) dec(k string, v decimal.Decimal) {
	s.key(k)
	s.b = append(s.b, '"')
	s.b = billing.AppendDecimal(s.b, v)
	s.b = append(s.b, '"')
}

func (s *jsonSink) i64(k string, v int64) {
	s.key(k)
	s.b = strconv.AppendInt(s.b, v, 10)
}

func (s *jsonSink) boolean(k string, v bool) {
	s.key(k)
	s.b = strconv.AppendBool(s.b, v)
}

func (s *jsonSink) millis(k string, d time.Duration) {
	s.key(k)
	s.b = appendMillis(s.b, d)
}

// attrSink collects the fields as slog attributes.
type attrSink struct{ attrs []slog.Attr }

func (s *attrSink) str(k, v string)          { s.attrs = append(s.attrs, slog.String(k, v)) }
func (s *attrSink) i64(k string, v int64)    { s.attrs = append(s.attrs, slog.Int64(k, v)) }
func (s *attrSink) boolean(k string, v bool) { s.attrs = append(s.attrs, slog.Bool(k, v)) }
func (s *attrSink) millis(k string, d time.Duration) {
	s.attrs = append(s.attrs, slog.Float64(k, ms(d)))
}
func (s *attrSink) dec(k string, v decimal.Decimal) {
	s.attrs = append(s.attrs, slog.String(k, billing.FormatDecimal(v)))
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
