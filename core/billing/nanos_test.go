package billing

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shopspring/decimal"
)

// sumNanos must give, to the digit, what the decimal arithmetic gives, whenever it answers,
// and answer for the amounts real requests have.
func TestSumNanosIsTheDecimalSum(t *testing.T) {
	t.Parallel()
	round := map[rounding]func(decimal.Decimal) decimal.Decimal{
		halfUp: func(d decimal.Decimal) decimal.Decimal { return d.Round(Scale) },
		ceil:   func(d decimal.Decimal) decimal.Decimal { return d.RoundCeil(Scale) },
	}
	check := func(t *testing.T, terms []term, mode rounding) bool {
		t.Helper()
		want := round[mode](sumDecimal(terms))
		got, ok := sumNanos(terms, mode)
		if ok && (!got.Equal(want) || got.String() != want.String() || got.Exponent() != -Scale) {
			t.Fatalf("%v (mode %d): %s (exponent %d), decimals give %s", terms, mode, got, got.Exponent(), want)
		}
		return ok
	}
	cases := []struct {
		name  string
		terms []term
		ok    bool // sumNanos answers
	}{
		{"a chat answer", []term{{20064, dec("1.00")}, {17, dec("2.00")}}, true},
		{"no tokens", []term{{0, dec("1")}, {0, dec("2")}}, true},
		{"exact to the ninth digit", []term{{1, dec("15")}}, true},
		{"half a nano rounds up", []term{{500, dec("0.000001")}}, true},
		{"just below half a nano rounds down", []term{{499, dec("0.000001")}}, true},
		{"a rate of many digits", []term{{3, dec("80.000000001")}, {7, dec("0.1234567891234")}}, true},
		{"a whole-number rate with a positive exponent", []term{{9, decimal.New(3, 4)}}, true},
		{"a zero rate", []term{{1000, dec("0")}, {5, dec("2.5")}}, true},
		{"a huge hold", []term{{1 << 40, dec("75")}}, true},
		{"a sum beyond 64 bits", []term{{math.MaxInt64, dec("1000")}}, false},
		{"a product beyond 64 bits", []term{{math.MaxInt64, dec("0.000000000003")}}, false},
		{"a product that fits after all", []term{{math.MaxInt64 / 2, dec("0.000000000001")}, {1, dec("1")}}, true},
		{"a rate of 19 digits", []term{{1, dec("1234567890.123456789")}}, false},
		{"a rate of 19 fractional digits", []term{{7, dec("0.0000000000000000001")}}, true},
		{"a rate beyond 10^-18 of a nano per token", []term{{7, dec("0.0000000000000000000001")}}, false},
		{"a negative count", []term{{-5, dec("1")}}, false},
		{"a negative rate", []term{{5, dec("-1")}}, false},
	}
	for _, tc := range cases {
		for mode := range round {
			if ok := check(t, tc.terms, mode); ok != tc.ok {
				t.Errorf("%s (mode %d): answered %v, want %v", tc.name, mode, ok, tc.ok)
			}
		}
	}
	// And at random, over rates of every exponent the catalogue can hold and counts of every
	// size: equal whenever it answers (it cannot for the largest products).
	r := rand.New(rand.NewPCG(1, 2))
	answered := 0
	const n = 20000
	for range n {
		terms := make([]term, 1+r.IntN(6))
		for i := range terms {
			terms[i] = term{n: r.Int64N(int64(pow10[r.IntN(13)])), rate: decimal.New(r.Int64N(int64(pow10[1+r.IntN(12)])), int32(r.IntN(16)-12))}
		}
		if check(t, terms, rounding(r.IntN(2))) {
			answered++
		}
	}
	if answered < n/4 {
		t.Errorf("answered %d of %d random sums", answered, n)
	}
}
