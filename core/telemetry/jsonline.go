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
	// sec is the text of the current second (its date and time, and its zone) as
	// RFC3339Nano writes them: a line's time writes only its fraction of a second.
	sec struct {
		unix       int64
		loc        *time.Location
		text, zone []byte // text nil: not cached
	}
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

// head is appendJSONHead with the time's second from the writer's cache: formatting a time
// (its date from the Unix time, every field) cost a tenth of the line.
func (lw *lineWriter) head(b []byte, t time.Time, level slog.Level, msg string) []byte {
	c := &lw.sec
	if unix := t.Unix(); unix != c.unix || t.Location() != c.loc || c.text == nil {
		c.unix, c.loc = unix, t.Location()
		whole := time.Unix(unix, 0).In(t.Location()).AppendFormat(c.text[:0], time.RFC3339Nano)
		// "2006-01-02T15:04:05" and the zone; a year of other than four digits is left to
		// AppendFormat, every time.
		c.text, c.zone = nil, nil
		if len(whole) >= 20 && whole[4] == '-' && (whole[19] == 'Z' || whole[19] == '+' || whole[19] == '-') {
			c.text, c.zone = whole[:19:19], whole[19:]
		}
	}
	if c.text == nil {
		return appendJSONHead(b, t, level, msg)
	}
	b = append(b, `{"time":"`...)
	b = append(b, c.text...)
	if ns := t.Nanosecond(); ns != 0 {
		// RFC3339Nano's fraction: nine digits, the trailing zeros dropped.
		var d [10]byte
		d[0] = '.'
		for i := 9; i > 0; i-- {
			d[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for d[n-1] == '0' {
			n--
		}
		b = append(b, d[:n]...)
	}
	b = append(b, c.zone...)
	b = append(b, `","level":"`...)
	b = appendJSONString(b, level.String())
	b = append(b, `","msg":"`...)
	b = appendJSONString(b, msg)
	return append(b, '"')
}

// appendMillis is appendJSONFloat(b, ms(d)) without the float: ms(d) is a whole number of
// microseconds over 1000, and below 2^53 microseconds the nearest float to n/1000 has n/1000
// written out (at most three decimals, the trailing zeros dropped) as its shortest form,
// which is what strconv writes (below 10^15 any two such decimals have distinct floats).
// TestAppendMillisIsTheFloats.
func appendMillis(b []byte, d time.Duration) []byte {
	us := d.Microseconds()
	if us <= -1e15 || us >= 1e15 {
		return appendJSONFloat(b, ms(d))
	}
	if us < 0 {
		b = append(b, '-')
		us = -us
	}
	b = strconv.AppendInt(b, us/1000, 10)
	if f := us % 1000; f != 0 {
		d := [4]byte{'.', byte('0' + f/100), byte('0' + f/10%10), byte('0' + f%10)}
		n := 4
		for d[n-1] == '0' {
			n--
		}
		b = append(b, d[:n]...)
	}
	return b
}

// appendJSONString is jsontext.AppendSlogEscaped, which looks at each byte, with the bytes
// that need no escaping (printable ASCII but for the quote and the backslash: all of most
// lines) found eight at a time and copied at once.
func appendJSONString(b []byte, s string) []byte {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if needsEscape(x) {
			break
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			b = append(b, s[:i]...)
			// From a character's start (every byte before it is ASCII): the same escaping
			// as of the whole string.
			return jsontext.AppendSlogEscaped(b, s[i:])
		}
	}
	return append(b, s...)
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// needsEscape reports whether any of the eight bytes of x is a control character, a quote,
// a backslash or not ASCII (the classic has-zero-byte and has-less-than tests, exact for
// whether there is one).
func needsEscape(x uint64) bool {
	hasZero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	return (x&highs)|((x-0x20*ones) & ^x & highs)|hasZero(x^('"'*ones))|hasZero(x^('\\'*ones)) != 0
}
