package telemetry

import (
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"modelgateway/core/wire/jsontext"
)

// appendJSONString escapes as jsontext.AppendSlogEscaped does, whichever byte needs it and
// wherever it falls against the eight-byte words: every byte value at every position of the
// first three words, and characters of more than one byte, valid or not.
func TestAppendJSONStringIsSlogs(t *testing.T) {
	t.Parallel()
	filler := "abcdefghijklmnopqrstuvwxyz0123456789"
	check := func(s string) {
		t.Helper()
		if got, want := string(appendJSONString([]byte("x"), s)), string(jsontext.AppendSlogEscaped([]byte("x"), s)); got != want {
			t.Fatalf("appendJSONString(%q) = %q, want %q", s, got, want)
		}
	}
	for c := range 256 {
		for at := range 25 {
			check(filler[:at] + string([]byte{byte(c)}) + filler[at:])
		}
	}
	for _, s := range []string{"", "a", "abcdefgh", "abcdefg\"", "\\bcdefgh", "héllo wörld, 8 bytes+", "\u2028\u2029 in the middle of a longer line",
		"bad\xff\xfe utf-8", "<&> stay", "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", strings.Repeat("~", 64) + "\x7f" + "\x1f"} {
		for at := range 10 {
			check(filler[:at] + s)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	f.Add("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")
	f.Add("bad\xff\xfe utf-8 \u2028 \u2029 héllo <&>\"\\\n\t")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendJSONString(nil, s)), string(jsontext.AppendSlogEscaped(nil, s)); got != want {
			t.Fatalf("appendJSONString(%q) = %q, want %q", s, got, want)
		}
	})
}

// appendMillis writes what appendJSONFloat writes of ms(d), the float it no longer makes.
func TestAppendMillisIsTheFloats(t *testing.T) {
	t.Parallel()
	ds := []time.Duration{0, 1, -1, 999, 1000, -1000, 1500 * time.Microsecond, 12345678, -12345678, time.Millisecond,
		10 * time.Millisecond, 100100 * time.Microsecond, 123 * time.Hour, 1e15*time.Microsecond - 1000, 1e15*time.Microsecond - 1,
		1e15 * time.Microsecond, -1e15*time.Microsecond + 1000, -1e15 * time.Microsecond, math.MaxInt64, math.MinInt64}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		d := time.Duration(r.Int64N(int64(1000 * time.Hour)))
		if r.IntN(4) == 0 {
			d = -d
		}
		if r.IntN(3) == 0 {
			d = time.Duration(r.Int64()) // past 10^15 µs too
		}
		ds = append(ds, d)
	}
	for _, d := range ds {
		if got, want := string(appendMillis(nil, d)), string(appendJSONFloat(nil, ms(d))); got != want {
			t.Fatalf("appendMillis(%d) = %s, want %s", int64(d), got, want)
		}
	}
}

// A line's head with its second from the writer's cache is appendJSONHead's, in any zone,
// at any fraction, as the second and the zone change from one line to the next.
func TestLineHeadIsAppendJSONHead(t *testing.T) {
	t.Parallel()
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("plus3", 3*3600), time.FixedZone("minus530", -(5*3600 + 30*60)),
		time.FixedZone("odd", 3723)}
	if ny, err := time.LoadLocation("America/New_York"); err == nil {
		zones = append(zones, ny)
	}
	base := time.Date(2026, 11, 27, 22, 1, 2, 0, time.UTC)
	var lw lineWriter
	r := rand.New(rand.NewPCG(3, 4))
	times := []time.Time{base, base.Add(1), base.Add(100), base.Add(999999999), base.Add(time.Second), base.Add(345678900),
		time.Date(2026, 3, 8, 6, 59, 59, 999999999, time.UTC), time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC), // New York's DST
		time.Date(10000, 1, 1, 0, 0, 0, 5, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 5, time.UTC), time.Date(999, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Now(), time.Now()}
	for range 5000 {
		times = append(times, base.Add(time.Duration(r.Int64N(int64(48*time.Hour)))))
	}
	for i, at := range times {
		for j, z := range zones {
			at := at.In(z)
			if (i+j)%3 == 0 {
				at = at.Round(time.Millisecond)
			}
			level := slog.LevelInfo
			if j%2 == 1 {
				level = slog.LevelWarn
			}
			for range 2 { // the second time from the cache
				if got, want := string(lw.head([]byte("x"), at, level, "request")), string(appendJSONHead([]byte("x"), at, level, "request")); got != want {
					t.Fatalf("head(%v) = %s, want %s", at, got, want)
				}
			}
		}
	}
}

// jsonSink writes a number as strconv does, by hand below 1000.
func TestJSONSinkIntsAreStrconvs(t *testing.T) {
	t.Parallel()
	vs := []int64{math.MinInt64, math.MaxInt64, -1000, 1000, 1001, 99999}
	for v := int64(-1001); v <= 1001; v++ {
		vs = append(vs, v)
	}
	for _, v := range vs {
		var s jsonSink
		s.i64(keyStatus, v)
		if got, want := string(s.b), string(keyStatus)+strconv.FormatInt(v, 10); got != want {
			t.Fatalf("i64(%d) = %s, want %s", v, got, want)
		}
	}
}

// A line formatted into the writer's buffer allocates nothing once the buffer has grown,
// a traced one (its ids' hex) included.
func TestALineAllocatesNothing(t *testing.T) {
	for _, c := range accessLineCases() {
		var lw lineWriter
		lw.to = &jsonLines{w: io.Discard}
		at := time.Now()
		write := func() {
			lineFields(lw.begin(lw.to, at, slog.LevelInfo, "request"), c.o, c.h)
			lw.end()
			lw.flush()
		}
		write()
		if n := testing.AllocsPerRun(100, write); n != 0 {
			t.Errorf("%s: %v allocations per line, want 0", c.name, n)
		}
	}
}
