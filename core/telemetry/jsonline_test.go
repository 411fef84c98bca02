package telemetry

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

// lineCases are records with what access lines carry and what a client may put in them
// (the request id and path are the client's): every byte below 0x80, invalid UTF-8, the
// JavaScript line separators, floats on both sides of the exponent cut-offs.
func lineCases() [][]slog.Attr {
	var all strings.Builder
	for c := range 0x80 {
		all.WriteByte(byte(c))
	}
	return [][]slog.Attr{
		nil,
		{slog.String("request_id", "req-1"), slog.String("method", "POST"), slog.String("path", "/v1/chat/completions"),
			slog.Int("status", 200), slog.Bool("usage_reliable", true), slog.Int64("input_tokens", 20000),
			slog.String("cost", "0.020064"), slog.Float64("latency_ms", 1.234), slog.Float64("ttfb_ms", 0.5)},
		{slog.String("path", all.String()), slog.String("request_id", "bad\xff\xfe utf-8 \u2028 \u2029 héllo 日本 <&>")},
		{slog.String("k\"ey\n", "v"), slog.Bool("no", false), slog.Int64("neg", -42), slog.Int("zero", 0)},
		{slog.Float64("zero", 0), slog.Float64("tiny", 1e-7), slog.Float64("small", 1e-6), slog.Float64("nano", 1.5e-9),
			slog.Float64("big", 1e21), slog.Float64("below big", 999999999999999999999.0), slog.Float64("neg", -0.001),
			slog.Float64("latency", 12345.678), slog.Float64("third", 1.0/3), slog.Float64("neg tiny", -2e-10)},
	}
}

// appendJSONLine writes what slog's JSON handler writes for the same record.
func TestJSONLineIsSlogsLine(t *testing.T) {
	t.Parallel()
	zone := time.FixedZone("MSK", 3*3600)
	times := []time.Time{
		time.Date(2026, 11, 25, 2, 45, 16, 123456789, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 0, zone),
		time.Date(2026, 1, 2, 3, 4, 5, 100000000, zone),
		time.Now(), // with a monotonic reading, in the local zone
	}
	for i, attrs := range lineCases() {
		for _, at := range times {
			for _, level := range []slog.Level{slog.LevelInfo, slog.LevelWarn} {
				var want bytes.Buffer
				r := slog.NewRecord(at, level, "request", 0)
				r.AddAttrs(attrs...)
				if err := slog.NewJSONHandler(&want, nil).Handle(context.Background(), r); err != nil {
					t.Fatal(err)
				}
				if got := appendJSONLine(nil, at, level, "request", attrs); string(got) != want.String() {
					t.Errorf("case %d at %v, %v:\n got %s\nwant %s", i, at, level, got, want.String())
				}
			}
		}
	}
}

var timeField = regexp.MustCompile(`^\{"time":"[^"]+",`)

// Through the process logger the line goes to the logger's writer, at the logger's level,
// and equals the slog line but for the time; loggers whose lines it cannot match are left to
// slog.
func TestLineWriterWritesTheLoggersLines(t *testing.T) {
	t.Parallel()
	attrs := lineCases()[1]
	var out bytes.Buffer
	log, err := NewLogger(&out, "json", "")
	if err != nil {
		t.Fatal(err)
	}
	var lw lineWriter
	if !lw.write(log, slog.LevelInfo, "request", attrs) {
		t.Fatal("the JSON process logger was left to slog")
	}
	lw.flush()
	log.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", out.String())
	}
	if a, b := timeField.ReplaceAllString(lines[0], ""), timeField.ReplaceAllString(lines[1], ""); a != b || a == lines[0] {
		t.Errorf("formatted line\n%s\nslog's line\n%s", lines[0], lines[1])
	}

	// Below the logger's level nothing is written, and the line counts as done.
	out.Reset()
	warnOnly, _ := NewLogger(&out, "json", "warn")
	if !lw.write(warnOnly, slog.LevelInfo, "request", attrs) || out.Len() != 0 {
		t.Errorf("an info line on a warn logger: %q", out.String())
	}
	if !lw.write(warnOnly, slog.LevelWarn, "request", attrs) {
		t.Error("a warn line on a warn logger was left to slog")
	}
	lw.flush()
	if !strings.Contains(out.String(), `"level":"WARN"`) {
		t.Errorf("a warn line on a warn logger: %q", out.String())
	}

	text, _ := NewLogger(&out, "text", "")
	for name, l := range map[string]*slog.Logger{
		"text":            text,
		"with attributes": log.With("replica", "r1"),
		"with a group":    log.WithGroup("g"),
		"a test's own":    slog.New(slog.NewJSONHandler(&out, nil)),
	} {
		if lw.write(l, slog.LevelInfo, "request", attrs) {
			t.Errorf("%s logger: formatted, want it left to slog", name)
		}
	}
	if lw.write(log, slog.LevelInfo, "request", []slog.Attr{slog.Any("odd", []int{1})}) {
		t.Error("an attribute of another kind: formatted, want it left to slog")
	}
}

// Access lines through the process logger wait for the end of a drain of the queue, and Sync
// and Close deliver them: every request's line, whole, once.
func TestAccessLinesReachTheProcessLogger(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	log, err := NewLogger(&out, "json", "")
	if err != nil {
		t.Fatal(err)
	}
	tel, err := New(context.Background(), Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	h := tel.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", r.Header.Get("X-Request-Id"))
		w.Write([]byte("answer"))
	}))
	serve := func(id string) {
		req := httptest.NewRequest("POST", "/v1/chat/completions", nil)
		req.Header.Set("X-Request-Id", id)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	for i := range 3 {
		serve(fmt.Sprintf("req-%d", i))
	}
	tel.Sync(context.Background())
	for i := range 3 {
		if n := strings.Count(out.String(), fmt.Sprintf(`"request_id":"req-%d",`, i)); n != 1 {
			t.Errorf("req-%d: %d lines after Sync, want 1:\n%s", i, n, out.String())
		}
	}
	serve("req-last")
	if err := tel.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 4 || !strings.Contains(lines[3], `"request_id":"req-last",`) {
		t.Errorf("after Close: %d lines, want 4 ending with req-last:\n%s", len(lines), out.String())
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, `{"time":"`) || !strings.HasSuffix(l, `}`) {
			t.Errorf("not a whole line: %s", l)
		}
	}
}
