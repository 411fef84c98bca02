package telemetry

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"modelgateway/core/wire/jsontext"
)

// The access line is written once per request. Through slog's JSON handler it costs a
// reflective json.Marshal per float, a record copy of the attributes and a caller lookup;
// the JSON logger of NewLogger therefore also takes whole lines formatted here, byte for byte
// what its slog handler writes for the same record (jsonline_test.go holds the two together).

// jsonLines is the sink of NewLogger's JSON handler, shared with lines formatted here. One
// mutex orders the slog handler's writes and these, so that lines never interleave.
type jsonLines struct {
	mu sync.Mutex
	w  io.Writer
}

// lockedWriter is what the slog handler writes through.
type lockedWriter struct{ l *jsonLines }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	return w.l.w.Write(p)
}

// lineWriter formats lines for the JSON logger into a buffer it reuses, and writes them
// out together (flush): one system call per drain of the telemetry queue rather than one
// per request. One per goroutine (the telemetry worker has one).
type lineWriter struct {
	buf  []byte
	to   *jsonLines // where buf goes
	sink jsonSink   // the line begun (begin), on buf's array
}

// flushAt is the buffered size at which lines are written out without waiting for flush.
const flushAt = 32 << 10

// write logs msg with attrs at level as log's JSON handler would, and reports whether it
// could: false for any other logger (a text logger, one with attributes or groups of its
// own, a test's) or an attribute of a kind the line never has; the caller then logs
// through slog. The line may wait in the buffer until flush.
func (lw *lineWriter) write(log *slog.Logger, level slog.Level, msg string, attrs []slog.Attr) bool {
	th, ok := log.Handler().(traceHandler)
	if !ok || th.json == nil {
		return false
	}
	for _, a := range attrs {
		if a.Key == "" {
			return false // slog's rules for empty attributes are not repeated here
		}
		switch a.Value.Kind() {
		case slog.KindString, slog.KindInt64, slog.KindBool:
		case slog.KindFloat64:
			if f := a.Value.Float64(); math.IsInf(f, 0) || math.IsNaN(f) {
				return false // slog writes its error text for these
			}
		default:
			return false
		}
	}
	if !th.Enabled(context.Background(), level) {
		return true
	}
	if lw.to != th.json {
		lw.flush()
		lw.to = th.json
	}
	lw.buf = appendJSONLine(lw.buf, time.Now(), level, msg, attrs)
	if len(lw.buf) >= flushAt {
		lw.flush()
	}
	return true
}

// flush writes the buffered lines out.
func (lw *lineWriter) flush() {
	if len(lw.buf) == 0 {
		return
	}
	lw.to.mu.Lock()
	_, _ = lw.to.w.Write(lw.buf)
	lw.to.mu.Unlock()
	lw.buf = lw.buf[:0]
	if cap(lw.buf) > 4*flushAt {
		lw.buf = nil // an outsized line does not pin its buffer
	}
}

// appendJSONLine is slog.JSONHandler's line for a record without a source, with attributes of
// the kinds write admits.
func appendJSONLine(b []byte, t time.Time, level slog.Level, msg string, attrs []slog.Attr) []byte {
	b = appendJSONHead(b, t, level, msg)
	for _, a := range attrs {
		b = append(b, `,"`...)
		b = jsontext.AppendSlogEscaped(b, a.Key)
		b = append(b, `":`...)
		switch v := a.Value; v.Kind() {
		case slog.KindString:
			b = append(b, '"')
			b = jsontext.AppendSlogEscaped(b, v.String())
			b = append(b, '"')
		case slog.KindInt64:
			b = strconv.AppendInt(b, v.Int64(), 10)
		case slog.KindBool:
			b = strconv.AppendBool(b, v.Bool())
		case slog.KindFloat64:
			b = appendJSONFloat(b, v.Float64())
		}
	}
	return append(b, "}\n"...)
}

// appendJSONHead is what slog.JSONHandler writes of a record before its attributes.
func appendJSONHead(b []byte, t time.Time, level slog.Level, msg string) []byte {
	b = append(b, `{"time":"`...)
	b = t.Round(0).AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"`...)
	b = jsontext.AppendSlogEscaped(b, level.String())
	b = append(b, `","msg":"`...)
	b = jsontext.AppendSlogEscaped(b, msg)
	return append(b, '"')
}

// appendJSONFloat is encoding/json's form of a finite float64 (which slog uses): like %g,
// with the exponent only below 1e-6 and from 1e21 on, and never padded.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
