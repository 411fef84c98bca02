package billing

import (
	"math/rand/v2"
	"testing"

	"github.com/shopspring/decimal"
)

// AppendDecimal writes what Decimal.String writes: amounts of every size and exponent, the
// edges of the fast path (18 and 19 digits, exponents up to 18 and beyond, products beyond
// 2^64), zeros of any exponent, negatives, and random coefficients at random exponents.
func TestAppendDecimalIsString(t *testing.T) {
	t.Parallel()
	ds := append([]decimal.Decimal{}, amountEdges...)
	for _, s := range []string{"0.000000000", "100", "1e18", "1e19", "12e17", "999999999999999999", "-999999999999999999e-30",
		"0.1", "10.10", "-0.000123000", "123456789012345678901234567890.5", "18446744073709551616", "1844674407370955162e1"} {
		ds = append(ds, decimal.RequireFromString(s))
	}
	for _, e := range []int32{-40, -19, -18, -10, -9, -3, -1, 0, 1, 2, 17, 18, 19, 30} {
		for _, c := range []int64{0, 1, -1, 7, 10, 1000, 123456789, -999999999999999999, 999999999999999999, 1<<63 - 1, -1 << 63} {
			ds = append(ds, decimal.New(c, e))
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		c := r.Int64N(1<<62) >> r.IntN(62)
		if r.IntN(2) == 0 {
			c = -c
		}
		ds = append(ds, decimal.New(c, int32(r.IntN(50)-30)))
	}
	for _, d := range ds {
		if got, want := string(AppendDecimal([]byte("x"), d)), "x"+d.String(); got != want {
			t.Errorf("AppendDecimal(%s) = %q, want %q", want[1:], got, want)
		}
		if got, want := FormatDecimal(d), d.String(); got != want {
			t.Errorf("FormatDecimal = %q, want %q", got, want)
		}
	}
}

var formatSink string

// The fast path allocates nothing but FormatDecimal's string.
func TestAppendDecimalAllocations(t *testing.T) {
	d := decimal.New(1_234_567_890, -Scale)
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { buf = AppendDecimal(buf[:0], d) }); n != 0 {
		t.Errorf("AppendDecimal: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { formatSink = FormatDecimal(d) }); n != 1 {
		t.Errorf("FormatDecimal: %v allocations, want 1", n)
	}
}

// BenchmarkFormatCost is a request's cost as its header and access line write it.
func BenchmarkFormatCost(b *testing.B) {
	d := decimal.New(20_123_456, -Scale)
	b.Run("String", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			formatSink = d.String()
		}
	})
	b.Run("FormatDecimal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			formatSink = FormatDecimal(d)
		}
	})
}
