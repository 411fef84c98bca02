package billing

import (
	"math"
	"testing"

	"github.com/shopspring/decimal"

	"modelgateway/core/metering"
)

// The costs and holds that tokens makes at the money scale are, digit for digit and exponent
// for exponent, what the plain formula gives (n*rate, shifted by 10^-6, then rounded), for
// rates of every precision, counts up to int64's bounds, and negative counts.
func TestTokensPricesAsThePlainFormula(t *testing.T) {
	t.Parallel()
	rates := []string{"0", "1", "2.00", "1.000000000", "0.150000000", "0.037500000", "60.000000000", "0.000000000", "0.000000001", "-2.500000000", "999999999999.000000000", "0.15", "0.075", "15", "0.0375", "0.00001", "3.333333333333", "1E+5", "1E+12", "-1.5", "123456789.123"}
	counts := []int64{0, 1, 7, 999, 20000, 8192, 1_000_000, -5, 123_456_789_012, math.MaxInt64 / 1000, math.MaxInt64, math.MinInt64}
	plainCost := func(p Price, u metering.Usage) decimal.Decimal {
		sum := decimal.Zero
		for _, t := range [...]struct {
			n    int64
			rate decimal.Decimal
		}{
			{u.Input - u.AudioInput, p.Input}, {u.AudioInput, p.AudioInput}, {u.CachedInput, p.CachedInput},
			{u.CacheWrite, p.CacheWrite}, {u.Output - u.AudioOutput, p.Output}, {u.AudioOutput, p.AudioOutput},
		} {
			sum = sum.Add(decimal.NewFromInt(t.n).Mul(t.rate))
		}
		return sum.Shift(-6).Round(Scale)
	}
	plainWorst := func(p Price, in, out int64) decimal.Decimal {
		inRate := decimal.Max(p.Input, p.CachedInput, p.CacheWrite, p.AudioInput)
		sum := decimal.NewFromInt(in).Mul(inRate).Add(decimal.NewFromInt(out).Mul(decimal.Max(p.Output, p.AudioOutput)))
		return sum.Shift(-6).RoundCeil(Scale)
	}
	same := func(a, b decimal.Decimal) bool { return a.Equal(b) && a.Exponent() == b.Exponent() }
	for _, in := range rates {
		for _, out := range rates {
			p := Price{Input: dec(in), CachedInput: dec(in), CacheWrite: dec(in), AudioInput: dec(in), Output: dec(out), AudioOutput: dec(out)}
			for _, n := range counts {
				for _, m := range counts {
					if n == math.MinInt64 || m == math.MinInt64 {
						// Usage's differences (input less audio) would overflow in both.
						if got, want := p.WorstCase(n, m), plainWorst(p, n, m); !same(got, want) {
							t.Errorf("rates %s/%s, %d/%d tokens: hold %s (exp %d), plain %s (exp %d)", in, out, n, m, got, got.Exponent(), want, want.Exponent())
						}
						continue
					}
					u := metering.Usage{Input: n, Output: m}
					if got, want := p.Cost(u), plainCost(p, u); !same(got, want) {
						t.Errorf("rates %s/%s, %d/%d tokens: cost %s (exp %d), plain %s (exp %d)", in, out, n, m, got, got.Exponent(), want, want.Exponent())
					}
					if got, want := p.WorstCase(n, m), plainWorst(p, n, m); !same(got, want) {
						t.Errorf("rates %s/%s, %d/%d tokens: hold %s (exp %d), plain %s (exp %d)", in, out, n, m, got, got.Exponent(), want, want.Exponent())
					}
				}
			}
		}
	}
	// The integer form is taken where it applies (a catalogue price with two decimals, or
	// with nine as the database keeps it): the term is at the money scale.
	for _, rate := range []string{"1.00", "1.000000000", "1"} {
		if got := tokens(20000, dec(rate)); got.Exponent() != -Scale || !got.Equal(dec("0.02")) {
			t.Errorf("20000 tokens at %s: %s (exp %d)", rate, got, got.Exponent())
		}
	}
}
